// MatMul against its scalar reference on odd sizes for every weight format, and the
// batch-invariance guarantee: a row's result never depends on how many rows run with it.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/float16.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "kernels/affine_quant.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_avx2.h"
#include "kernels/matmul_avx512.h"
#include "kernels/matmul_neon.h"
#include "kernels/matmul_plain.h"
#include "kernels/panels.h"

namespace mtplx::kernels {
namespace {

// Owns the storage behind a Matrix.
struct TestMatrix {
  std::vector<uint8_t> dense;
  std::vector<uint32_t> packed;
  std::vector<uint16_t> scales, biases;
  Matrix m;
};

std::vector<float> RandomValues(int64_t n, uint64_t seed, float scale = 1.0f) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.Uniform(-1.0, 1.0)) * scale;
  return v;
}

TestMatrix MakeDense(int64_t rows, int64_t cols, DType dtype, uint64_t seed) {
  TestMatrix t;
  const auto values = RandomValues(rows * cols, seed);
  t.dense.resize(rows * cols * DTypeSize(dtype));
  for (int64_t i = 0; i < rows * cols; ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(t.dense.data() + 4 * i, &values[i], 4);
    } else {
      const uint16_t b = dtype == DType::kBF16 ? F32ToBf16(values[i]) : F32ToF16(values[i]);
      std::memcpy(t.dense.data() + 2 * i, &b, 2);
    }
  }
  t.m = Matrix::Dense(rows, cols, dtype, t.dense.data());
  return t;
}

TestMatrix MakeQuantized(int64_t rows, int64_t cols, int bits, int group, uint64_t seed) {
  TestMatrix t;
  const auto values = RandomValues(rows * cols, seed);
  const int64_t words = cols * bits / 32, groups = cols / group;
  t.packed.resize(rows * words);
  t.scales.resize(rows * groups);
  t.biases.resize(rows * groups);
  for (int64_t r = 0; r < rows; ++r)
    AffineQuantizeRow(values.data() + r * cols, cols, bits, group, DType::kBF16,
                      t.packed.data() + r * words, t.scales.data() + r * groups,
                      t.biases.data() + r * groups);
  t.m.rows = rows;
  t.m.cols = cols;
  t.m.quantized = true;
  t.m.quant =
      AffineQuant{bits, group, t.packed.data(), t.scales.data(), t.biases.data(), DType::kBF16};
  return t;
}

// The same matrix repacked into the int8 kernel's panel layout (whole panels of 16 rows; the rows
// after the last whole panel stay in the MLX layout).
TestMatrix MakePanelled(int64_t rows, int64_t cols, int bits, int group, uint64_t seed) {
  TestMatrix t = MakeQuantized(rows, cols, bits, group, seed);
  RepackToPanels(t.m);
  return t;
}

enum class Kernel { kDispatched, kPortable, kInt8 };

void RunKernel(Kernel kernel, const Matrix& w, const float* x, int64_t m_rows, float* y,
               ThreadPool* pool) {
  switch (kernel) {
    case Kernel::kDispatched:
      return MatMul(w, x, m_rows, y, pool);
    case Kernel::kPortable:
      return MatMulPortable(w, x, m_rows, y, pool);
    case Kernel::kInt8:
      return MatMul(w, x, m_rows, y, pool, Activations::kInt8);
  }
}

void ExpectCloseToReference(const Matrix& w, int64_t m_rows, ThreadPool* pool,
                            Kernel kernel = Kernel::kDispatched) {
  const auto x = RandomValues(m_rows * w.cols, 99);
  std::vector<float> got(m_rows * w.rows), want(m_rows * w.rows);
  RunKernel(kernel, w, x.data(), m_rows, got.data(), pool);
  MatMulReference(w, x.data(), m_rows, want.data());
  for (size_t i = 0; i < got.size(); ++i) {
    // f32 accumulation of cols products of magnitude <= 1: error grows like sqrt(cols) * eps.
    const float tolerance = 1e-5f * std::sqrt(static_cast<float>(w.cols)) * 4.0f;
    ASSERT_NEAR(got[i], want[i], tolerance) << w.Describe() << " element " << i;
  }
}

TEST(MatMulTest, DenseFormatsMatchReferenceOnOddSizes) {
  ThreadPool pool(2);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
    for (int64_t rows : {1, 7, 33})
      for (int64_t cols : {1, 15, 17, 130})
        for (int64_t m : {1, 3, 16}) {
          auto t = MakeDense(rows, cols, dtype, rows * 1000 + cols);
          ExpectCloseToReference(t.m, m, &pool);
        }
}

// Every width and group size, with columns that end in a partial 64-column block (group 32),
// through the dispatched kernel (AVX-512 where available) and the portable one.
TEST(MatMulTest, QuantizedFormatsMatchReference) {
  ThreadPool pool(2);
  for (Kernel kernel : {Kernel::kDispatched, Kernel::kPortable})
    for (int bits : {2, 3, 4, 5, 6, 8})
      for (int group : {32, 64, 128})
        for (int64_t rows : {1, 19})
          for (int64_t cols :
               {int64_t{3 * 128}, int64_t{17 * 128}, int64_t{group == 32 ? 96 : 128}})
            for (int64_t m : {1, 5}) {
              auto t = MakeQuantized(rows, cols, bits, group, bits * 31 + group + cols);
              ExpectCloseToReference(t.m, m, &pool, kernel);
            }
}

// Int8 activations: each dot product is within a few step sizes of the exact one. The bound is
// sum over k of |w_k| * step_k / 2 (rounding) — here below 2e-2 of the result scale.
TEST(MatMulTest, Int8ActivationsStayCloseToExact) {
  ThreadPool pool(2);
  for (int bits : {2, 4, 6, 8})
    for (int group : {32, 64, 128}) {
      const int64_t rows = 23, cols = group == 32 ? 32 * 9 : 2 * 384, m_rows = 3;
      auto t = MakeQuantized(rows, cols, bits, group, bits + group);
      const auto x = RandomValues(m_rows * cols, 17);
      std::vector<float> got(m_rows * rows), want(m_rows * rows);
      MatMul(t.m, x.data(), m_rows, got.data(), &pool, Activations::kInt8);
      MatMulReference(t.m, x.data(), m_rows, want.data());
      // |w| <= 1 and |x| <= 1, step <= 1/127: the error is at most cols / 254, and with random
      // rounding errors it behaves like sqrt(cols) / 254.
      const float tolerance = 4.0f * std::sqrt(static_cast<float>(cols)) / 254.0f;
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], tolerance) << t.m.Describe() << " element " << i;
    }
}

// Repacking moves codes, scales and biases but changes no value.
TEST(PanelTest, RepackedMatricesDequantizeToTheSameRows) {
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int64_t rows : {16, 37, 50})
        for (int64_t cols : {int64_t{128}, int64_t{384}}) {
          const TestMatrix plain = MakeQuantized(rows, cols, bits, group, rows + cols + bits);
          const TestMatrix panelled = MakePanelled(rows, cols, bits, group, rows + cols + bits);
          ASSERT_TRUE(panelled.m.quant.panels);
          EXPECT_EQ(PanelledRows(panelled.m), rows / 16 * 16);
          std::vector<float> want(cols), got(cols);
          for (int64_t r = 0; r < rows; ++r) {
            DequantizeRow(plain.m, r, want.data());
            DequantizeRow(panelled.m, r, got.data());
            ASSERT_EQ(got, want) << panelled.m.Describe() << " row " << r;
          }
        }
}

TEST(PanelTest, OnlyQuantizedMatricesWithAWholePanelAreEligible) {
  EXPECT_TRUE(PanelEligible(MakeQuantized(16, 64, 4, 64, 1).m));
  EXPECT_TRUE(PanelEligible(MakeQuantized(17, 64, 8, 32, 1).m));
  EXPECT_TRUE(PanelEligible(MakeQuantized(32, 64, 6, 64, 1).m));
  EXPECT_FALSE(PanelEligible(MakeQuantized(15, 64, 4, 64, 1).m));
  EXPECT_FALSE(PanelEligible(MakeDense(32, 64, DType::kBF16, 1).m));
  EXPECT_FALSE(PanelEligible(MakePanelled(32, 64, 4, 64, 1).m));
}

// Repacking moves codes, scales and biases without changing one: every width (the bit-stream
// widths pack 4-code units), group size and a ragged tail of MLX-layout rows.
TEST(PanelTest, RepackKeepsEveryCodeScaleAndBias) {
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int64_t rows : {16, 37}) {
        const int64_t cols = group * 3;
        const TestMatrix plain = MakeQuantized(rows, cols, bits, group, bits * group + rows);
        const TestMatrix panelled = MakePanelled(rows, cols, bits, group, bits * group + rows);
        const int64_t groups = cols / group;
        for (int64_t r = 0; r < rows; ++r) {
          const uint32_t* row = plain.packed.data() + r * plain.m.PackedWordsPerRow();
          for (int64_t k = 0; k < cols; ++k)
            ASSERT_EQ(CodeAt(panelled.m, r, k), UnpackCode(row, k, bits))
                << panelled.m.Describe() << " row " << r << " column " << k;
          for (int64_t g = 0; g < groups; ++g) {
            ASSERT_EQ(panelled.scales[ScaleIndex(panelled.m, r, g)], plain.scales[r * groups + g]);
            ASSERT_EQ(panelled.biases[ScaleIndex(panelled.m, r, g)], plain.biases[r * groups + g]);
          }
        }
      }
}

// The panel kernel (int8 activations) stays as close to exact as the row kernel, and the other
// paths (exact f32, portable) still give the reference on a panelled matrix.
TEST(PanelTest, PanelledMatricesMatchReferenceOnEveryPath) {
  ThreadPool pool(2);
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int64_t rows : {16, 19, 53}) {
        const int64_t cols = group == 32 ? 32 * 9 : 2 * 384;
        const TestMatrix plain = MakeQuantized(rows, cols, bits, group, bits + group + rows);
        const TestMatrix panelled = MakePanelled(rows, cols, bits, group, bits + group + rows);
        for (int64_t m_rows : {1, 3, 6}) {
          const auto x = RandomValues(m_rows * cols, 17);
          std::vector<float> got(m_rows * rows), want(m_rows * rows);
          MatMulReference(plain.m, x.data(), m_rows, want.data());
          MatMul(panelled.m, x.data(), m_rows, got.data(), &pool, Activations::kInt8);
          const float tolerance = 4.0f * std::sqrt(static_cast<float>(cols)) / 254.0f;
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], tolerance) << panelled.m.Describe() << " element " << i;
        }
        ExpectCloseToReference(panelled.m, 3, &pool, Kernel::kDispatched);
        ExpectCloseToReference(panelled.m, 2, &pool, Kernel::kPortable);
      }
}

// Every panel kernel this CPU runs (AVX-512 VNNI, AVX2 with nibble products through vpmaddubsw or
// with 256-bit vpdpbusd in either encoding, NEON sdot) computes the exact int32 group dots and the
// same float steps per lane as the plain int8 row kernel, so each equals that scalar twin bit for
// bit: every width, group size and row count, with and without the prefetch. (So the kernels also
// equal each other: a model gives the same logits on every CPU family.)
TEST(PanelTest, PanelKernelsEqualThePlainRowKernelBitForBit) {
  using PanelKernel = void (*)(const Matrix&, int64_t, const PreparedActivations&, float*, int64_t);
  using RangeKernel =
      void (*)(const Matrix&, int64_t, int64_t, const PreparedActivations&, float*, int64_t);
  struct Isa {
    const char* name;
    bool supported;
    PanelKernel panel;
    RangeKernel range = nullptr;  // all panels in one call (AVX-512 pairs them from 16 rows)
  };
  const Isa isas[] = {
      {"amx", amx::Supported(), amx::PanelInt8},
      {"avx512", avx512::Supported(), avx512::PanelInt8},
      {"avx512-range", avx512::Supported(), nullptr, avx512::PanelRangeInt8},
      {"avx2", avx2::Supported(), avx2::PanelInt8<avx2::Dot::kMaddubs>},
      {"avx-vnni", avx2::Supported(avx2::Dot::kAvxVnni), avx2::PanelInt8<avx2::Dot::kAvxVnni>},
      {"avx512-vnni-256", avx2::Supported(avx2::Dot::kAvx512Vnni),
       avx2::PanelInt8<avx2::Dot::kAvx512Vnni>},
      {"neon", neon::Supported(), neon::PanelInt8}};
  int ran = 0;
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (bool streamed : {false, true}) {
        const int64_t rows = 48, cols = group == 32 ? 32 * 9 : 3 * 128, groups = cols / group;
        TestMatrix t = MakePanelled(rows, cols, bits, group, bits * 7 + group);
        t.m.quant.streamed = streamed;
        for (int64_t m_rows : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 40}) {
          const auto x = RandomValues(m_rows * cols, bits + m_rows, 2.0f);
          const int64_t stride = X8Stride(cols);
          std::vector<int8_t> x8(m_rows * stride);
          std::vector<float> steps(m_rows * groups), sums(m_rows * groups);
          QuantizeActivations(x.data(), m_rows, cols, group, x8.data(), steps.data());
          std::vector<int32_t> x8_sums(m_rows * groups);
          SumX8Groups(x8.data(), m_rows, cols, group, x8_sums.data());
          for (int64_t i = 0; i < m_rows * groups; ++i)
            for (int64_t k = 0; k < group; ++k) sums[i] += x[i * group + k];
          PreparedActivations act;
          act.rows = m_rows;
          act.groups = groups;
          act.x = x.data();
          act.group_sums = sums.data();
          act.x8_columns = x8.data();
          act.x8_stride = stride;
          act.steps = steps.data();
          act.x8_sums = x8_sums.data();
          std::vector<float> twin(m_rows * rows);
          for (int64_t n = 0; n < rows; ++n)
            plain::QuantRowInt8(t.m, n, act, twin.data() + n, rows);
          for (const Isa& isa : isas) {
            if (!isa.supported) continue;
            ++ran;
            std::vector<float> got(m_rows * rows, -1.0f);
            if (isa.range) {
              isa.range(t.m, 0, rows / kPanelRows, act, got.data(), rows);
            } else {
              for (int64_t p = 0; p < rows / kPanelRows; ++p)
                isa.panel(t.m, p, act, got.data() + p * kPanelRows, rows);
            }
            ASSERT_EQ(0, std::memcmp(got.data(), twin.data(), got.size() * sizeof(float)))
                << isa.name << " " << t.m.Describe() << " M=" << m_rows;
          }
        }
      }
  if (ran == 0) GTEST_SKIP() << "this CPU runs no int8 panel kernel";
}

// The dispatched activation quantizer (AVX-512 where available) writes the same bytes and steps
// as its portable twin, including halves, zeros and ties.
TEST(QuantizeActivationsTest, FastPathEqualsPortableTwin) {
  for (int group : {32, 64, 128})
    for (int64_t cols : {int64_t{group}, int64_t{7 * 32}, int64_t{3 * 128}}) {
      if (cols % group != 0) continue;
      const int64_t rows = 3;
      auto x = RandomValues(rows * cols, cols + group, 3.0f);
      for (int64_t k = 0; k < group; ++k) x[k] = 0.0f;  // an all-zero group
      x[group + 1] = 0.5f * x[group];                   // a value halfway between codes
      const int64_t stride = X8Stride(cols), groups = cols / group;
      std::vector<int8_t> fast(rows * stride, 1), plain(rows * stride, 2);
      std::vector<float> fast_steps(rows * groups), plain_steps(rows * groups);
      QuantizeActivations(x.data(), rows, cols, group, fast.data(), fast_steps.data());
      QuantizeActivationsPortable(x.data(), rows, cols, group, plain.data(), plain_steps.data());
      EXPECT_EQ(fast, plain) << "group " << group << " cols " << cols;
      EXPECT_EQ(fast_steps, plain_steps);
    }
}

TEST(MatMulTest, RowResultsDoNotDependOnBatchSizeOrThreads) {
  ThreadPool pool(2);
  std::vector<TestMatrix> formats;
  formats.push_back(MakeDense(37, 200, DType::kBF16, 1));
  formats.push_back(MakeDense(37, 200, DType::kF32, 2));
  formats.push_back(MakeDense(37, 200, DType::kF16, 3));
  for (int bits : {2, 3, 4, 5, 6, 8}) formats.push_back(MakeQuantized(37, 256, bits, 64, bits));
  formats.push_back(MakeQuantized(37, 256, 4, 32, 7));
  formats.push_back(MakeQuantized(37, 256, 6, 128, 8));
  formats.push_back(MakeQuantized(37, 224, 5, 32, 9));  // ends in half a 64-column block
  // Two panels and 5 MLX-layout rows.
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      formats.push_back(MakePanelled(37, 256, bits, group, bits + group));
  // The same panels with the streaming prefetch (AffineQuant::streamed).
  for (int bits : {4, 6, 8}) {
    formats.push_back(MakePanelled(37, 256, bits, 64, bits + 64));
    formats.back().m.quant.streamed = true;
  }
  for (Kernel kernel : {Kernel::kDispatched, Kernel::kPortable, Kernel::kInt8})
    for (const auto& t : formats) {
      const auto x = RandomValues(16 * t.m.cols, 5);
      std::vector<std::vector<float>> single(16, std::vector<float>(t.m.rows));
      for (int r = 0; r < 16; ++r)
        RunKernel(kernel, t.m, x.data() + r * t.m.cols, 1, single[r].data(), nullptr);
      for (int m = 1; m <= 16; ++m) {
        std::vector<float> batch(m * t.m.rows);
        RunKernel(kernel, t.m, x.data(), m, batch.data(), &pool);
        for (int r = 0; r < m; ++r)
          for (int64_t n = 0; n < t.m.rows; ++n)
            ASSERT_EQ(batch[r * t.m.rows + n], single[r][n])
                << t.m.Describe() << " M=" << m << " kernel " << static_cast<int>(kernel);
      }
    }
}

// Matrices sharing one input (panelled, partly panelled, too small for a panel, another width)
// give exactly what MatMul gives each of them, with and without the pool.
TEST(MatMulTest, SameInputMatMulEqualsOneMatMulEach) {
  ThreadPool pool(2);
  std::vector<TestMatrix> ms;
  ms.push_back(MakePanelled(64, 256, 8, 64, 1));
  ms.push_back(MakePanelled(37, 256, 4, 64, 2));  // two panels and 5 MLX-layout rows
  ms.push_back(MakeQuantized(4, 256, 8, 64, 3));  // below one panel
  ms.push_back(MakePanelled(48, 256, 6, 64, 4));
  std::vector<TestMatrix> mixed;
  mixed.push_back(MakePanelled(32, 256, 8, 64, 5));
  mixed.push_back(MakePanelled(32, 256, 8, 32, 6));  // other groups: one MatMul each
  std::vector<TestMatrix> unpanelled;  // a whole matrix in the MLX layout: one MatMul each
  unpanelled.push_back(MakePanelled(32, 256, 8, 64, 8));
  unpanelled.push_back(MakeQuantized(48, 256, 8, 64, 9));
  for (auto* set : {&ms, &mixed, &unpanelled})
    for (int64_t m_rows : {1, 2, 3, 17})
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
        for (Activations activations : {Activations::kInt8, Activations::kF32}) {
          const auto x = RandomValues(m_rows * 256, 7 + m_rows);
          std::vector<const Matrix*> ws;
          std::vector<std::vector<float>> got, want;
          std::vector<float*> ys;
          for (const auto& t : *set) {
            ws.push_back(&t.m);
            got.emplace_back(m_rows * t.m.rows, -1.0f);
            want.emplace_back(m_rows * t.m.rows);
            MatMul(t.m, x.data(), m_rows, want.back().data(), p, activations);
          }
          for (auto& y : got) ys.push_back(y.data());
          MatMulSameInput(ws, x.data(), m_rows, ys, p, activations);
          for (size_t i = 0; i < ws.size(); ++i)
            ASSERT_EQ(got[i], want[i]) << ws[i]->Describe() << " M=" << m_rows;
        }
}

}  // namespace
}  // namespace mtplx::kernels
