#include "pack/tensor_writer.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/file.h"
#include "base/float16.h"
#include "base/strings.h"
#include "io/safetensors_writer.h"
#include "kernels/affine_quant.h"

namespace mtplx::pack {
namespace {

// Rows per block: about 8 MiB of floats, at least one row.
int64_t BlockRows(int64_t cols) { return std::max<int64_t>(1, (8 << 20) / (cols * 4)); }

std::vector<int64_t> WithLast(std::vector<int64_t> shape, int64_t last) {
  shape.back() = last;
  return shape;
}

void StoreDense(const float* values, int64_t n, DType dtype, std::vector<uint8_t>& bytes) {
  const size_t start = bytes.size();
  bytes.resize(start + n * DTypeSize(dtype));
  uint8_t* dst = bytes.data() + start;
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(dst + 4 * i, &values[i], 4);
    } else {
      const uint16_t b = dtype == DType::kBF16 ? F32ToBf16(values[i]) : F32ToF16(values[i]);
      std::memcpy(dst + 2 * i, &b, 2);
    }
  }
}

void Declare(io::SafetensorsWriter& w, const StoredTensor& t) {
  if (t.bits == 0) {
    w.Declare(t.name, t.dtype, t.file_shape.empty() ? t.shape : t.file_shape);
    return;
  }
  const std::string module = t.Module();
  w.Declare(t.name, DType::kU32, WithLast(t.shape, t.cols() * t.bits / 32));
  w.Declare(module + ".scales", t.dtype, WithLast(t.shape, t.cols() / t.group_size));
  w.Declare(module + ".biases", t.dtype, WithLast(t.shape, t.cols() / t.group_size));
}

// Raw bytes of a dense tensor, copied in blocks so the progress bar moves.
Status WriteRaw(io::SafetensorsWriter& w, const StoredTensor& t, const void* raw,
                ProgressBar& progress) {
  const uint64_t total = t.Bytes();
  const auto* bytes = static_cast<const uint8_t*>(raw);
  for (uint64_t done = 0; done < total;) {
    const uint64_t n = std::min<uint64_t>(total - done, 64ull << 20);
    MTPLX_RETURN_IF_ERROR(w.Append(bytes + done, n));
    progress.Add(n);
    done += n;
  }
  return Status::Ok();
}

// Row blocks through `source.row`: converted to the dense dtype, or quantized with MLX's exact
// rounding (codes appended block by block; scales and biases, which follow the codes in the
// file, are kept until the end).
Status WriteRows(io::SafetensorsWriter& w, const StoredTensor& t, const TensorSource& source,
                 ThreadPool& pool, ProgressBar& progress) {
  const int64_t rows = t.rows(), cols = t.cols();
  const int64_t block = BlockRows(cols);
  const int64_t words = t.bits ? cols * t.bits / 32 : 0;
  const int64_t groups = t.bits ? cols / t.group_size : 0;
  const size_t scale_size = DTypeSize(t.dtype);
  std::vector<uint8_t> scales(t.bits ? rows * groups * scale_size : 0), biases(scales.size());
  std::vector<float> values;
  std::vector<uint32_t> packed;
  std::vector<uint8_t> bytes;
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t n = std::min(block, rows - r0);
    values.resize(n * cols);
    packed.assign(n * words, 0);
    pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (t.bits && source.quantized_row) {
          source.quantized_row(r0 + i, packed.data() + i * words,
                               scales.data() + (r0 + i) * groups * scale_size,
                               biases.data() + (r0 + i) * groups * scale_size);
          continue;
        }
        float* row = values.data() + i * cols;
        source.row(r0 + i, row);
        if (t.bits)
          kernels::AffineQuantizeRow(row, cols, t.bits, t.group_size, t.dtype,
                                     packed.data() + i * words,
                                     scales.data() + (r0 + i) * groups * scale_size,
                                     biases.data() + (r0 + i) * groups * scale_size);
      }
    });
    if (t.bits) {
      MTPLX_RETURN_IF_ERROR(w.Append(packed.data(), packed.size() * 4));
    } else {
      bytes.clear();
      StoreDense(values.data(), n * cols, t.dtype, bytes);
      MTPLX_RETURN_IF_ERROR(w.Append(bytes.data(), bytes.size()));
    }
    progress.Add(static_cast<uint64_t>(n) * (t.bits ? words * 4 : cols * DTypeSize(t.dtype)));
  }
  if (t.bits) {
    MTPLX_RETURN_IF_ERROR(w.Append(scales.data(), scales.size()));
    MTPLX_RETURN_IF_ERROR(w.Append(biases.data(), biases.size()));
    progress.Add(scales.size() * 2);
  }
  return Status::Ok();
}

// Splits jobs into shards of at most `limit` bytes (a tensor never spans shards).
std::vector<std::vector<TensorJob>> Shard(const std::vector<TensorJob>& jobs, uint64_t limit) {
  std::vector<std::vector<TensorJob>> shards(1);
  uint64_t size = 0;
  for (const TensorJob& job : jobs) {
    const uint64_t bytes = job.tensor->Bytes();
    if (limit && size > 0 && size + bytes > limit) {
      shards.emplace_back();
      size = 0;
    }
    shards.back().push_back(job);
    size += bytes;
  }
  return shards;
}

Status WriteIndex(const std::string& dir, const std::string& stem,
                  const std::vector<std::string>& files,
                  const std::vector<std::vector<TensorJob>>& shards, uint64_t total) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (size_t s = 0; s < shards.size(); ++s)
    for (const TensorJob& job : shards[s])
      for (const auto& name : job.tensor->FileNames()) entries.emplace_back(name, files[s]);
  std::sort(entries.begin(), entries.end());
  nlohmann::ordered_json map = nlohmann::ordered_json::object();
  for (const auto& [name, file] : entries) map[name] = file;
  nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
  return WriteTextFile(JoinPath(dir, stem + ".safetensors.index.json"), index.dump(2) + "\n");
}

}  // namespace

int64_t StoredTensor::rows() const {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
  return r;
}

uint64_t StoredTensor::Bytes() const {
  const uint64_t n = static_cast<uint64_t>(rows()) * cols();
  if (bits == 0) return n * DTypeSize(dtype);
  const uint64_t groups = static_cast<uint64_t>(rows()) * (cols() / group_size);
  return n * bits / 8 + 2 * groups * DTypeSize(dtype);
}

std::string StoredTensor::Module() const {
  return EndsWith(name, ".weight") ? name.substr(0, name.size() - 7) : name;
}

std::vector<std::string> StoredTensor::FileNames() const {
  if (bits == 0) return {name};
  return {name, Module() + ".scales", Module() + ".biases"};
}

Status WriteTensorFile(const std::string& path, const std::vector<TensorJob>& jobs,
                       const std::string& format, ThreadPool& pool, ProgressBar& progress) {
  io::SafetensorsWriter writer(path);
  if (!format.empty()) writer.SetMetadata("format", format);
  for (const TensorJob& job : jobs) Declare(writer, *job.tensor);
  MTPLX_RETURN_IF_ERROR(writer.Begin());
  for (const TensorJob& job : jobs) {
    const StoredTensor& t = *job.tensor;
    if (t.bits == 0 && job.source.raw) {
      MTPLX_RETURN_IF_ERROR(WriteRaw(writer, t, job.source.raw, progress));
    } else {
      MTPLX_RETURN_IF_ERROR(WriteRows(writer, t, job.source, pool, progress));
    }
  }
  return writer.Finish();
}

Result<WrittenShards> WriteShardedTensors(const std::string& dir,
                                          const std::vector<TensorJob>& jobs,
                                          const ShardOptions& options, ThreadPool& pool,
                                          ProgressBar& progress) {
  const auto shards = Shard(jobs, options.shard_bytes);
  WrittenShards written;
  for (const TensorJob& job : jobs) written.data_bytes += job.tensor->Bytes();
  for (size_t s = 0; s < shards.size(); ++s)
    written.files.push_back(shards.size() == 1
                                ? options.stem + ".safetensors"
                                : StrFormat("%s-%05zu-of-%05zu.safetensors", options.stem.c_str(),
                                            s + 1, shards.size()));
  for (size_t s = 0; s < shards.size(); ++s)
    MTPLX_RETURN_IF_ERROR(WriteTensorFile(JoinPath(dir, written.files[s]), shards[s],
                                          options.format, pool, progress));
  if (shards.size() > 1 || options.always_index)
    MTPLX_RETURN_IF_ERROR(WriteIndex(dir, options.stem, written.files, shards, written.data_bytes));
  return written;
}

}  // namespace mtplx::pack
