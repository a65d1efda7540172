// Writing MLX-layout weights: each tensor dense in its dtype or MLX affine-quantized into a
// `.weight` / `.scales` / `.biases` triplet, streamed in row blocks (memory stays at one block, so
// multi-GB checkpoints can be written on a small machine), split into shards with an index.
// Shared by `mtplx convert` (rows come from a source checkpoint) and `mtplx synth` (rows are
// generated).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/progress.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "tensor/dtype.h"

namespace mtplx::pack {

// How one weight is stored. Quantized (bits > 0): `name` ends in ".weight" or names a bare
// expert stack; the codes go to `name`, the scales and biases (in `dtype`) to `<module>.scales`
// and `<module>.biases`.
struct StoredTensor {
  std::string name;
  std::vector<int64_t> shape;       // logical [..., rows, cols]
  std::vector<int64_t> file_shape;  // dense shape in the file when it differs (conv1d)
  DType dtype = DType::kBF16;       // dense storage type, or the scales' and biases' type
  int bits = 0;                     // 0: dense
  int group_size = 64;

  int64_t rows() const;  // product of all but the last dimension
  int64_t cols() const { return shape.back(); }
  uint64_t Bytes() const;                      // bytes in the file, triplet included
  std::string Module() const;                  // name without ".weight"
  std::vector<std::string> FileNames() const;  // the names it occupies in the file
};

// Where a tensor's values come from. `row(r, out)` writes row r as `cols` floats (called from
// worker threads, so it must be thread-safe). `raw`, when set for a dense tensor, holds its bytes
// already in `dtype` and is copied as is (exact, and faster than a float round trip).
struct TensorSource {
  std::function<void(int64_t row, float* out)> row;
  const void* raw = nullptr;
  // For a quantized tensor whose codes already exist (a transform of another quantized tensor):
  // writes row r's packed codes (zeroed before the call) and its scales and biases in the
  // tensor's dtype, instead of quantizing `row`'s floats.
  std::function<void(int64_t row, uint32_t* packed, void* scales, void* biases)> quantized_row;
};

struct TensorJob {
  const StoredTensor* tensor;
  TensorSource source;
};

struct ShardOptions {
  std::string stem = "model";         // model.safetensors or model-0000k-of-0000N.safetensors
  uint64_t shard_bytes = 4ull << 30;  // a shard holds at most this much (0: one file)
  bool always_index = false;          // write model.safetensors.index.json for one file too
  std::string format = "mlx";         // the safetensors "format" metadata
};

struct WrittenShards {
  std::vector<std::string> files;  // file names inside the folder, in order
  uint64_t data_bytes = 0;
};

// Writes one safetensors file holding `jobs` in order.
Status WriteTensorFile(const std::string& path, const std::vector<TensorJob>& jobs,
                       const std::string& format, ThreadPool& pool, ProgressBar& progress);

// Writes `jobs` into `dir` as shards of at most options.shard_bytes (a tensor never spans two)
// and, when there are several shards or options.always_index, the index JSON with
// metadata.total_size and a sorted weight_map.
Result<WrittenShards> WriteShardedTensors(const std::string& dir,
                                          const std::vector<TensorJob>& jobs,
                                          const ShardOptions& options, ThreadPool& pool,
                                          ProgressBar& progress);

}  // namespace mtplx::pack
