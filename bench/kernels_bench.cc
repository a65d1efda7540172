// Kernel throughput in weight bytes per second. Run: build/bench/kernels_bench
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "base/float16.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "kernels/affine_quant.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/panels.h"

namespace mtplx::kernels {
namespace {

struct BenchMatrix {
  std::vector<uint16_t> dense;
  std::vector<uint32_t> packed;
  std::vector<uint16_t> scales, biases;
  Matrix m;
};

BenchMatrix Make(int64_t rows, int64_t cols, int bits) {
  BenchMatrix b;
  SplitMix64 rng(1);
  std::vector<float> row(cols);
  if (bits == 0) {
    b.dense.resize(rows * cols);
    for (auto& v : b.dense) v = F32ToBf16(static_cast<float>(rng.Uniform(-1, 1)));
    b.m = Matrix::Dense(rows, cols, DType::kBF16, b.dense.data());
    return b;
  }
  const int64_t words = cols * bits / 32, groups = cols / 64;
  b.packed.resize(rows * words);
  b.scales.resize(rows * groups);
  b.biases.resize(rows * groups);
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = static_cast<float>(rng.Uniform(-1, 1));
    AffineQuantizeRow(row.data(), cols, bits, 64, DType::kBF16, b.packed.data() + r * words,
                      b.scales.data() + r * groups, b.biases.data() + r * groups);
  }
  b.m.rows = rows;
  b.m.cols = cols;
  b.m.quantized = true;
  b.m.quant =
      AffineQuant{bits, 64, b.packed.data(), b.scales.data(), b.biases.data(), DType::kBF16};
  return b;
}

// Args: bits (0 = bf16), rows of activations M, activations (0 = f32, 1 = int8). The matrix
// (16384 x 4096, an FFN projection of a 4B-class model) is larger than the L3 cache, so the
// weights stream from memory as they do in decoding.
// Times MatMul on a rows x 4096 matrix for the benchmark's args; returns its storage bytes.
// With `panels`, the matrix is first repacked into the int8 kernel's panel layout (as the CLI
// loads 4- and 8-bit weights).
uint64_t TimeMatMul(benchmark::State& state, int64_t rows, ThreadPool* pool, bool panels = false,
                    int64_t cols = 4096, bool streamed = false) {
  const int bits = static_cast<int>(state.range(0));
  const int64_t m_rows = state.range(1);
  const Activations activations = state.range(2) ? Activations::kInt8 : Activations::kF32;
  BenchMatrix w = Make(rows, cols, bits);
  if (panels) RepackToPanels(w.m);
  w.m.quant.streamed = streamed;  // as the model marks weights larger than the caches
  std::vector<float> x(m_rows * cols, 0.5f), y(m_rows * rows);
  for (auto _ : state) {
    MatMul(w.m, x.data(), m_rows, y.data(), pool, activations);
    benchmark::DoNotOptimize(y.data());
  }
  return w.m.StorageBytes();
}

void BM_MatMul(benchmark::State& state) {
  ThreadPool pool;
  const uint64_t bytes = TimeMatMul(state, 16384, &pool);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_MatMul)
    ->ArgsProduct({{0, 4, 6, 8}, {1, 2, 4, 8}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same kernels on one thread over a matrix that stays in L2/L3 (1024 x 4096): compute cost
// per weight without DRAM stalls. Args as BM_MatMul.
void BM_MatMulInCache(benchmark::State& state) {
  TimeMatMul(state, 1024, nullptr);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 1024 * 4096);
}
BENCHMARK(BM_MatMulInCache)
    ->ArgsProduct({{0, 4, 6, 8}, {1, 2, 4, 8}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// The panel kernel (weights repacked into 16-row panels, int8 activations), streamed
// from memory on all threads and in cache on one thread. Args: bits, M, 1.
void BM_MatMulPanels(benchmark::State& state) {
  ThreadPool pool;
  const uint64_t bytes = TimeMatMul(state, 16384, &pool, /*panels=*/true, 4096, /*streamed=*/true);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_MatMulPanels)
    ->ArgsProduct({{4, 6, 8}, {1, 2, 3, 4, 8, 16, 64}, {1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The verify's cost on the weights' stream, free of the host's drifting bandwidth: each
// iteration times one row and then M rows over the same 65536 x 4096 matrix (134-268 MB, four
// times and more the L3 cache: 16384 rows at 4 bits still hit L3 often enough to flatter one row)
// on all threads, so both see the same memory state; counter `v` = time(M rows) / time(1 row),
// the kernel's share of v(m) (`mtplx bench`). Args: bits, M, columns (4096: a projection of the
// 9B shape's hidden state; 12288: its MLP down projection, whose int8 rows no longer fit L1 four
// at a time); the matrix holds 2^28 weights either way.
void BM_MatMulPanelsVerifyRatio(benchmark::State& state) {
  ThreadPool pool;
  const int bits = static_cast<int>(state.range(0));
  const int64_t cols = state.range(2), rows = (int64_t{1} << 28) / cols / 16 * 16,
                m_rows = state.range(1);
  BenchMatrix w = Make(rows, cols, bits);
  RepackToPanels(w.m);
  w.m.quant.streamed = true;
  std::vector<float> x(m_rows * cols, 0.5f), y(m_rows * rows);
  double one = 0, many = 0;
  using Clock = std::chrono::steady_clock;
  for (auto _ : state) {
    const Clock::time_point t0 = Clock::now();
    MatMul(w.m, x.data(), 1, y.data(), &pool, Activations::kInt8);
    const Clock::time_point t1 = Clock::now();
    MatMul(w.m, x.data(), m_rows, y.data(), &pool, Activations::kInt8);
    const Clock::time_point t2 = Clock::now();
    benchmark::DoNotOptimize(y.data());
    one += std::chrono::duration<double>(t1 - t0).count();
    many += std::chrono::duration<double>(t2 - t1).count();
  }
  state.counters["v"] = many / one;
  state.counters["one_row_GBps"] =
      static_cast<double>(w.m.StorageBytes()) * static_cast<double>(state.iterations()) / one / 1e9;
}
BENCHMARK(BM_MatMulPanelsVerifyRatio)
    ->ArgsProduct({{4, 6, 8}, {2, 3, 4, 5, 6}, {4096, 12288}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_MatMulInCachePanels(benchmark::State& state) {
  TimeMatMul(state, 1024, nullptr, /*panels=*/true);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 1024 * 4096);
}
BENCHMARK(BM_MatMulInCachePanels)
    ->ArgsProduct({{4, 6, 8}, {1, 2, 3, 4, 5, 6, 8, 16, 64}, {1}})
    ->Unit(benchmark::kMicrosecond);

// The panel kernel's own arithmetic: a 256 x 2048 matrix (512 KB at 8 bits) stays in L2, so
// neither DRAM nor L3 bandwidth bounds it. Args: bits, M, 1.
void BM_MatMulInL2Panels(benchmark::State& state) {
  TimeMatMul(state, 256, nullptr, /*panels=*/true, 2048);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 256 * 2048);
}
BENCHMARK(BM_MatMulInL2Panels)
    ->ArgsProduct({{4, 6, 8}, {1, 2, 3, 4, 5, 8}, {1}})
    ->Unit(benchmark::kMicrosecond);

// The shapes of a small model's layers (hidden 256, MLP 768: the bundled default), where the
// whole model sits in cache and the per-call and per-group costs show. Args: bits, M, 1,
// layer (0 = up projection 768 x 256, 1 = down projection 256 x 768).
void BM_MatMulSmallLayer(benchmark::State& state) {
  const bool down = state.range(3) != 0;
  TimeMatMul(state, down ? 256 : 768, nullptr, /*panels=*/true, down ? 768 : 256);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 768 * 256);
}
BENCHMARK(BM_MatMulSmallLayer)
    ->ArgsProduct({{4, 8}, {1, 2, 3}, {1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// Args: context length, query rows M, threads, model (0 = the bundled model's 4 heads / 2 kv heads
// of 64; 1 = a 9B-class layer's 16 / 4 of 256; 2 = the x8 widened model's 32 / 16 of 64), KV cache
// type (0 = f32, 1 = bf16), products (0 = exact, 1 = bf16: AttentionProducts::kBf16, where the CPU
// has AVX512_BF16). Reports the key and value bytes read per call: the M rows of a verify pass
// share one read of the cache.
void BM_Attention(benchmark::State& state) {
  const int64_t context = state.range(0), rows = state.range(1);
  const AttentionDims dims = state.range(3) == 2   ? AttentionDims{32, 16, 64}
                             : state.range(3) == 1 ? AttentionDims{16, 4, 256}
                                                   : AttentionDims{4, 2, 64};
  const KvType type = state.range(4) ? KvType::kBf16 : KvType::kF32;
  const AttentionProducts products =
      state.range(5) ? AttentionProducts::kBf16 : AttentionProducts::kExact;
  ThreadPool pool(static_cast<int>(state.range(2)));
  const int64_t length = context + rows, kv = length * dims.kv_heads * dims.head_dim;
  SplitMix64 rng(3);
  std::vector<float> keys(kv), values(kv), q(rows * dims.heads * dims.head_dim);
  for (auto& v : keys) v = static_cast<float>(rng.Uniform(-1, 1));
  for (auto& v : values) v = static_cast<float>(rng.Uniform(-1, 1));
  for (auto& v : q) v = static_cast<float>(rng.Uniform(-1, 1));
  std::vector<uint8_t> key_cache(kv * KvElementBytes(type)), value_cache(key_cache.size());
  StoreKvRow(keys.data(), kv, type, key_cache.data());
  StoreKvRow(values.data(), kv, type, value_cache.data());
  std::vector<float> out(q.size());
  for (auto _ : state) {
    CausalAttention(dims, q.data(), rows, context,
                    {key_cache.data(), value_cache.data(), length, type}, 0.125f, out.data(), &pool,
                    products);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * kv * KvElementBytes(type));
}
BENCHMARK(BM_Attention)
    ->ArgsProduct({{512, 2048, 8192, 32768}, {1, 2, 4}, {1, 2}, {0, 1}, {0, 1}, {0}})
    ->ArgsProduct({{2048, 8192, 16384, 32768}, {1, 5}, {1, 2}, {0, 1, 2}, {1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mtplx::kernels

BENCHMARK_MAIN();
