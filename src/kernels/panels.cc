#include "kernels/panels.h"

#include <unistd.h>

#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/affine_quant.h"
#include "kernels/hardware.h"

namespace mtplx::kernels {
namespace {

int64_t RowBytes(const Matrix& m) { return m.PackedWordsPerRow() * 4; }

// Byte offset (within the whole matrix) of the byte holding code (r, k) of a panelled row, and
// whether it sits in the high nibble (4-bit only).
int64_t PanelCodeByte(const Matrix& m, int64_t r, int64_t k, bool* high) {
  const int64_t p = r / kPanelRows, i = r % kPanelRows, group = m.quant.group_size;
  const int64_t g = k / group, c = k % group;
  const int64_t group_bytes = kPanelRows * group * m.quant.bits / 8;
  const int64_t base = p * kPanelRows * RowBytes(m) + g * group_bytes;
  if (m.quant.bits == 8) {
    *high = false;
    return base + (c / 4) * 64 + i * 4 + c % 4;
  }
  *high = (c % 8) >= 4;
  return base + (c / 8) * 64 + i * 4 + c % 4;
}

// Other widths: panel p is one little-endian bit stream of codes, code (16p + i, k) at index
// (k / 4) * 64 + 4i + k % 4 (the 8-bit layout, at `bits` bits a code).
int64_t PanelStreamIndex(int64_t r, int64_t k) {
  return (k / 4) * 64 + (r % kPanelRows) * 4 + k % 4;
}

const uint32_t* PanelWords(const Matrix& m, int64_t r) {
  return m.quant.packed + (r / kPanelRows) * kPanelRows * m.PackedWordsPerRow();
}

}  // namespace

bool PanelEligible(const Matrix& m) {
  return m.quantized && !m.quant.panels && IsSupportedAffineBits(m.quant.bits) &&
         m.rows >= kPanelRows && m.cols % m.quant.group_size == 0;
}

uint32_t CodeAt(const Matrix& m, int64_t r, int64_t k) {
  if (r >= PanelledRows(m))
    return UnpackCode(m.quant.packed + r * m.PackedWordsPerRow(), k, m.quant.bits);
  if (m.quant.bits != 4 && m.quant.bits != 8)
    return UnpackCode(PanelWords(m, r), PanelStreamIndex(r, k), m.quant.bits);
  bool high = false;
  const uint8_t byte =
      reinterpret_cast<const uint8_t*>(m.quant.packed)[PanelCodeByte(m, r, k, &high)];
  if (m.quant.bits == 8) return byte;
  return high ? byte >> 4 : byte & 0x0Fu;
}

void UnpackPanelStep(const uint8_t* stream, int bits, uint8_t* out) {
  const uint32_t mask = (1u << bits) - 1u;
  for (int j = 0; j < 64; ++j) {
    const int bit = j * bits;
    // Two bytes always cover a code of <= 8 bits at any bit offset.
    uint32_t window = stream[bit >> 3];
    if ((bit & 7) + bits > 8) window |= static_cast<uint32_t>(stream[(bit >> 3) + 1]) << 8;
    out[j] = static_cast<uint8_t>((window >> (bit & 7)) & mask);
  }
}

uint8_t* PanelBytesBuffer(int64_t cols) {
  thread_local std::vector<uint8_t> bytes;
  bytes.resize(static_cast<size_t>(kPanelRows * cols));
  return bytes.data();
}

int64_t ScaleIndex(const Matrix& m, int64_t r, int64_t g) {
  const int64_t groups = m.GroupsPerRow();
  if (r >= PanelledRows(m)) return r * groups + g;
  return (r / kPanelRows) * kPanelRows * groups + g * kPanelRows + r % kPanelRows;
}

namespace {

// The 4-byte unit of panel row i for one step, from the MLX row's word(s): for 8-bit the 4 codes
// of columns 4s..4s+3 are one little-endian word already; for 4-bit, word s holds the 8 codes of
// columns 8s..8s+7 as nibbles 0..7, and byte j of the unit is code j | code (j + 4) << 4.
inline uint32_t PanelUnit(const uint32_t* row_words, int64_t step, int bits) {
  const uint32_t w = row_words[step];
  if (bits == 8) return w;
  uint32_t unit = 0;
  for (int j = 0; j < 4; ++j) {
    const uint32_t lo = (w >> (4 * j)) & 0xFu, hi = (w >> (16 + 4 * j)) & 0xFu;
    unit |= (lo | hi << 4) << (8 * j);
  }
  return unit;
}

// `count` (<= 32) bits of a little-endian bit stream from bit `offset`; reads 8 bytes from byte
// offset / 8, so the stream needs 8 readable bytes past its end.
inline uint64_t ReadBits(const uint8_t* stream, uint64_t offset, int count) {
  uint64_t window;
  std::memcpy(&window, stream + (offset >> 3), sizeof(window));
  return (window >> (offset & 7u)) & ((uint64_t{1} << count) - 1u);
}

// Packs the 16 MLX-layout rows in `rows` (row_bytes bytes each, 8 readable bytes past the last)
// into the panel bit stream. The 4 codes of one row and step are adjacent in both layouts, so the
// stream is those 4 * bits-bit units taken step by step, row by row.
void PackPanelStream(const uint8_t* rows, int64_t row_bytes, int64_t cols, int bits,
                     uint32_t* panel) {
  const int unit = 4 * bits;  // <= 32
  uint64_t pending = 0;       // bits not yet stored, LSB first
  int filled = 0;
  for (int64_t s = 0; s < cols / 4; ++s)
    for (int64_t i = 0; i < kPanelRows; ++i) {
      pending |= ReadBits(rows + i * row_bytes, static_cast<uint64_t>(s * unit), unit) << filled;
      filled += unit;
      if (filled >= 32) {
        *panel++ = static_cast<uint32_t>(pending);
        pending >>= 32;
        filled -= 32;
      }
    }
  // 16 units a step make 64 * bits bits: whole words, nothing left over.
  MTPLX_DCHECK(filled == 0, "panel stream must end on a word");
}

void RepackPanel(Matrix& m, int64_t p, uint8_t* code_copy, uint8_t* scale_copy,
                 uint8_t* bias_copy) {
  const int64_t groups = m.GroupsPerRow(), words_per_row = m.PackedWordsPerRow();
  const int64_t steps_per_group = m.quant.group_size * m.quant.bits / 32;  // 4-byte units per row
  const int64_t panel_words = kPanelRows * words_per_row;
  const int64_t scale_size = static_cast<int64_t>(DTypeSize(m.quant.scale_dtype));
  const int64_t panel_scale_bytes = kPanelRows * groups * scale_size;
  // The caller owns this memory (see the header); the matrix only holds const views of it.
  uint32_t* codes = const_cast<uint32_t*>(m.quant.packed) + p * panel_words;
  uint8_t* scales =
      static_cast<uint8_t*>(const_cast<void*>(m.quant.scales)) + p * panel_scale_bytes;
  uint8_t* biases =
      static_cast<uint8_t*>(const_cast<void*>(m.quant.biases)) + p * panel_scale_bytes;
  std::memcpy(code_copy, codes, panel_words * 4);
  std::memcpy(scale_copy, scales, panel_scale_bytes);
  std::memcpy(bias_copy, biases, panel_scale_bytes);
  const uint32_t* rows = reinterpret_cast<const uint32_t*>(code_copy);
  if (m.quant.bits != 4 && m.quant.bits != 8) {
    PackPanelStream(code_copy, words_per_row * 4, m.cols, m.quant.bits, codes);
  } else {
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t s = 0; s < steps_per_group; ++s)
        for (int64_t i = 0; i < kPanelRows; ++i) {
          const int64_t step = g * steps_per_group + s;
          codes[step * kPanelRows + i] = PanelUnit(rows + i * words_per_row, step, m.quant.bits);
        }
  }
  for (int64_t i = 0; i < kPanelRows; ++i)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t from = (i * groups + g) * scale_size, to = (g * kPanelRows + i) * scale_size;
      std::memcpy(scales + to, scale_copy + from, scale_size);
      std::memcpy(biases + to, bias_copy + from, scale_size);
    }
}

}  // namespace

bool WeightsStreamFromMemory(uint64_t weight_bytes) {
  // The last-level cache one core sees, from sysfs: glibc's _SC_LEVEL3_CACHE_SIZE adds up every
  // CCD of a chiplet CPU (384 MiB on an EPYC whose core shares 32 MiB), which made a 0.5 GB
  // model look cache-resident.
  static const uint64_t cache = [] {
    if (const uint64_t bytes = LastLevelCacheBytes(); bytes > 0) return bytes;
    const long bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return bytes > 0 ? static_cast<uint64_t>(bytes) : uint64_t{32} << 20;
  }();
  // Half of it: the cache is shared with the other cores, the system and, in a VM, other guests.
  // A VM that reports 260 MiB streamed a 0.5 GB model at DRAM speed, where the prefetch took a
  // 4-row verify from 1.38-1.42 to 1.15-1.20 plain steps. Prefetching weights that do stay in
  // cache measured neutral (the bundled model; a 4 MiB matrix on one thread), so err low.
  return weight_bytes > cache / 2;
}

void RepackToPanels(Matrix& m, ThreadPool* pool) {
  MTPLX_CHECK(PanelEligible(m), "matrix cannot be repacked into panels");
  const int64_t panels = m.rows / kPanelRows;
  const size_t code_bytes = kPanelRows * m.PackedWordsPerRow() * 4;
  const size_t scale_bytes = kPanelRows * m.GroupsPerRow() * DTypeSize(m.quant.scale_dtype);
  auto run = [&](int64_t begin, int64_t end) {
    // 8 bytes of slack: PackPanelStream reads 8-byte windows.
    std::vector<uint8_t> codes(code_bytes + 8), scales(scale_bytes), biases(scale_bytes);
    for (int64_t p = begin; p < end; ++p)
      RepackPanel(m, p, codes.data(), scales.data(), biases.data());
  };
  if (pool) {
    pool->ParallelFor(panels, 16, run);
  } else {
    run(0, panels);
  }
  m.quant.panels = true;
}

}  // namespace mtplx::kernels
