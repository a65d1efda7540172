#include "kernels/gated_delta.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "kernels/simd.h"

namespace mtplx::kernels {
namespace {

// Views of one value head's inputs at token t.
struct HeadView {
  const GdnDims& dims;
  const GdnInputs& in;
  int64_t head;
  int64_t key_head;

  const float* q(int64_t t) const { return in.q + (t * dims.key_heads + key_head) * dims.key_dim; }
  const float* k(int64_t t) const { return in.k + (t * dims.key_heads + key_head) * dims.key_dim; }
  const float* v(int64_t t) const { return in.v + (t * dims.value_heads + head) * dims.value_dim; }
  float g(int64_t t) const { return in.g[t * dims.value_heads + head]; }
  float beta(int64_t t) const { return in.beta[t * dims.value_heads + head]; }
};

// The two fused passes of one recurrent step over the dk x dv state (restrict-qualified so that
// the loops over c vectorize).
// `from` is either `s` itself (in place) or a separate starting state; element c of a row is
// read before it is written, so both run the same operations.
MTPLX_TARGET_CLONES void DecayAndProject(float alpha, const float* __restrict k, int64_t dk,
                                         int64_t dv, const float* from, float* s,
                                         float* __restrict delta) {
  for (int64_t c = 0; c < dv; ++c) delta[c] = 0.0f;
  for (int64_t d = 0; d < dk; ++d) {
    const float* source = from + d * dv;
    float* row = s + d * dv;
    const float kd = k[d];
    for (int64_t c = 0; c < dv; ++c) {
      row[c] = source[c] * alpha;
      delta[c] += row[c] * kd;
    }
  }
}

MTPLX_TARGET_CLONES void UpdateAndRead(const float* __restrict k, const float* __restrict q,
                                       const float* __restrict delta, int64_t dk, int64_t dv,
                                       float* __restrict s, float* __restrict o) {
  for (int64_t c = 0; c < dv; ++c) o[c] = 0.0f;
  for (int64_t d = 0; d < dk; ++d) {
    float* __restrict row = s + d * dv;
    const float kd = k[d], qd = q[d];
    for (int64_t c = 0; c < dv; ++c) {
      row[c] += kd * delta[c];
      o[c] += row[c] * qd;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define MTPLX_GDN_AVX512 __attribute__((target("avx512f")))

// The same two passes with the accumulators (64 columns at a time) held in registers. Separate
// multiply and add, never fused, so every value matches the plain loops and GdnReplay.
MTPLX_GDN_AVX512 void DecayAndProjectAvx512(float alpha, const float* k, int64_t dk, int64_t dv,
                                            const float* from, float* s, float* delta) {
  const __m512 a = _mm512_set1_ps(alpha);
  for (int64_t c0 = 0; c0 < dv; c0 += 64) {
    const int n = static_cast<int>(std::min<int64_t>(4, (dv - c0) / 16));
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    for (int64_t d = 0; d < dk; ++d) {
      const __m512 kd = _mm512_set1_ps(k[d]);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        if (i >= n) break;
        const int64_t at = d * dv + c0 + int64_t{16} * i;
        const __m512 row = _mm512_mul_ps(_mm512_loadu_ps(from + at), a);
        _mm512_storeu_ps(s + at, row);
        acc[i] = _mm512_add_ps(acc[i], _mm512_mul_ps(row, kd));
      }
    }
    for (int i = 0; i < n; ++i) _mm512_storeu_ps(delta + c0 + int64_t{16} * i, acc[i]);
  }
}

MTPLX_GDN_AVX512 void UpdateAndReadAvx512(const float* k, const float* q, const float* delta,
                                          int64_t dk, int64_t dv, float* s, float* o) {
  for (int64_t c0 = 0; c0 < dv; c0 += 64) {
    const int n = static_cast<int>(std::min<int64_t>(4, (dv - c0) / 16));
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    __m512 dl[4];
    for (int i = 0; i < n; ++i) dl[i] = _mm512_loadu_ps(delta + c0 + int64_t{16} * i);
    for (int64_t d = 0; d < dk; ++d) {
      const __m512 kd = _mm512_set1_ps(k[d]), qd = _mm512_set1_ps(q[d]);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        if (i >= n) break;
        const int64_t at = d * dv + c0 + int64_t{16} * i;
        const __m512 row = _mm512_add_ps(_mm512_loadu_ps(s + at), _mm512_mul_ps(kd, dl[i]));
        _mm512_storeu_ps(s + at, row);
        acc[i] = _mm512_add_ps(acc[i], _mm512_mul_ps(row, qd));
      }
    }
    for (int i = 0; i < n; ++i) _mm512_storeu_ps(o + c0 + int64_t{16} * i, acc[i]);
  }
}

bool GdnAvx512(int64_t dv) { return Avx512FKernelsEnabled() && dv % 16 == 0; }
#else
bool GdnAvx512(int64_t) { return false; }
void DecayAndProjectAvx512(float, const float*, int64_t, int64_t, const float*, float*, float*) {}
void UpdateAndReadAvx512(const float*, const float*, const float*, int64_t, int64_t, float*,
                         float*) {}
#endif

void RecurrentHead(const HeadView& h, int64_t tokens, const float* initial, float* s, float* out,
                   float* delta_out) {
  const bool fast = GdnAvx512(h.dims.value_dim);
  const int64_t dk = h.dims.key_dim, dv = h.dims.value_dim;
  std::vector<float> delta(dv);
  for (int64_t t = 0; t < tokens; ++t) {
    const float alpha = std::exp(h.g(t));
    const float beta = h.beta(t);
    const float* v = h.v(t);
    // Two passes over the state instead of four (decay fused with m = S^T k, the rank-1 update
    // fused with o = S^T q); each value still sees the same operations in the same order as the
    // reference definition, so the results are unchanged.
    if (fast) {
      DecayAndProjectAvx512(alpha, h.k(t), dk, dv, t == 0 ? initial : s, s, delta.data());
    } else {
      DecayAndProject(alpha, h.k(t), dk, dv, t == 0 ? initial : s, s, delta.data());
    }
    for (int64_t c = 0; c < dv; ++c) delta[c] = beta * (v[c] - delta[c]);
    if (delta_out)
      std::copy(delta.begin(), delta.end(), delta_out + (t * h.dims.value_heads + h.head) * dv);
    float* o = out + (t * h.dims.value_heads + h.head) * dv;
    if (fast) {
      UpdateAndReadAvx512(h.k(t), h.q(t), delta.data(), dk, dv, s, o);
    } else {
      UpdateAndRead(h.k(t), h.q(t), delta.data(), dk, dv, s, o);
    }
  }
}

// S <- alpha S + k delta^T, as RecurrentHead applies it: the product alpha S is rounded, then
// k delta^T added (never fused), so one pass over S gives the bits of its two passes.
MTPLX_TARGET_CLONES void ReplayStep(float alpha, const float* __restrict k,
                                    const float* __restrict delta, int64_t dk, int64_t dv,
                                    float* __restrict s) {
  for (int64_t d = 0; d < dk; ++d) {
    const float kd = k[d];
    float* row = s + d * dv;
    for (int64_t c = 0; c < dv; ++c) row[c] = row[c] * alpha + kd * delta[c];
  }
}

// The same step reading S from `from` and writing it to `to` (a rollback's first kept row: the
// state it starts from stays where the verify pass left it, and is not copied back first).
MTPLX_TARGET_CLONES void ReplayStepInto(float alpha, const float* __restrict k,
                                        const float* __restrict delta, int64_t dk, int64_t dv,
                                        const float* __restrict from, float* __restrict to) {
  for (int64_t d = 0; d < dk; ++d) {
    const float kd = k[d];
    for (int64_t c = 0; c < dv; ++c) to[d * dv + c] = from[d * dv + c] * alpha + kd * delta[c];
  }
}

// One chunk of n <= C tokens starting at t0 for one head; see gated_delta.h and
// docs/architecture.md for the algebra.
MTPLX_TARGET_CLONES void ChunkHead(const HeadView& h, int64_t t0, int64_t n, float* s, float* out) {
  const int64_t dk = h.dims.key_dim, dv = h.dims.value_dim;
  std::vector<float> G(n), L(n * n, 0.0f), U(n * dv), W(n * dk), vp(n * dv);
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) G[i] = (acc += h.g(t0 + i));
  // L_ij = beta_i (k_i . k_j) exp(G_i - G_j) for j < i.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j)
      L[i * n + j] = h.beta(t0 + i) * DotF32(h.k(t0 + i), h.k(t0 + j), dk) * std::exp(G[i] - G[j]);
  // Forward substitution: U = (I + L)^-1 (beta V), W = (I + L)^-1 (beta e^G K).
  for (int64_t i = 0; i < n; ++i) {
    const float b = h.beta(t0 + i);
    const float eg = std::exp(G[i]);
    for (int64_t c = 0; c < dv; ++c) U[i * dv + c] = b * h.v(t0 + i)[c];
    for (int64_t d = 0; d < dk; ++d) W[i * dk + d] = b * eg * h.k(t0 + i)[d];
    for (int64_t j = 0; j < i; ++j) {
      const float l = L[i * n + j];
      for (int64_t c = 0; c < dv; ++c) U[i * dv + c] -= l * U[j * dv + c];
      for (int64_t d = 0; d < dk; ++d) W[i * dk + d] -= l * W[j * dk + d];
    }
  }
  // V' = U - W S.
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < dv; ++c) vp[i * dv + c] = U[i * dv + c];
    for (int64_t d = 0; d < dk; ++d) {
      const float w = W[i * dk + d];
      for (int64_t c = 0; c < dv; ++c) vp[i * dv + c] -= w * s[d * dv + c];
    }
  }
  // O_i = e^{G_i} q_i S + sum_{j<=i} (q_i . k_j) exp(G_i - G_j) v'_j.
  for (int64_t i = 0; i < n; ++i) {
    float* o = out + ((t0 + i) * h.dims.value_heads + h.head) * dv;
    const float* q = h.q(t0 + i);
    const float eg = std::exp(G[i]);
    std::fill(o, o + dv, 0.0f);
    for (int64_t d = 0; d < dk; ++d) {
      const float qd = q[d] * eg;
      for (int64_t c = 0; c < dv; ++c) o[c] += qd * s[d * dv + c];
    }
    for (int64_t j = 0; j <= i; ++j) {
      const float a = DotF32(q, h.k(t0 + j), dk) * std::exp(G[i] - G[j]);
      for (int64_t c = 0; c < dv; ++c) o[c] += a * vp[j * dv + c];
    }
  }
  // S <- e^{G_last} S + sum_i e^{G_last - G_i} k_i v'_i^T.
  const float last = G[n - 1];
  const float decay = std::exp(last);
  for (int64_t i = 0; i < dk * dv; ++i) s[i] *= decay;
  for (int64_t i = 0; i < n; ++i) {
    const float w = std::exp(last - G[i]);
    const float* k = h.k(t0 + i);
    for (int64_t d = 0; d < dk; ++d) {
      const float kd = k[d] * w;
      for (int64_t c = 0; c < dv; ++c) s[d * dv + c] += kd * vp[i * dv + c];
    }
  }
}

// Runs fn(h) for every value head; `tokens` sizes the work (a few element operations per state
// entry per token) to decide whether the pool is worth waking.
template <typename Fn>
void ForEachHead(const GdnDims& dims, int64_t tokens, ThreadPool* pool, Fn&& fn) {
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t h = begin; h < end; ++h) fn(h);
  };
  if (WorthParallel(pool, dims.value_heads * dims.key_dim * dims.value_dim * tokens * 4)) {
    pool->ParallelFor(dims.value_heads, 1, run);
  } else {
    run(0, dims.value_heads);
  }
}

}  // namespace

void GdnRecurrent(const GdnDims& dims, int64_t tokens, const GdnInputs& in, float* state,
                  float* out, ThreadPool* pool, float* delta_out, const float* initial) {
  const int64_t ratio = dims.value_heads / dims.key_heads;
  const int64_t size = dims.key_dim * dims.value_dim;
  ForEachHead(dims, tokens, pool, [&](int64_t h) {
    HeadView view{dims, in, h, h / ratio};
    float* s = state + h * size;
    RecurrentHead(view, tokens, initial ? initial + h * size : s, s, out, delta_out);
  });
}

void GdnReplay(const GdnDims& dims, int64_t tokens, const float* keys, const float* log_decay,
               const float* deltas, float* state, ThreadPool* pool, const float* initial) {
  const int64_t ratio = dims.value_heads / dims.key_heads;
  const int64_t dk = dims.key_dim, dv = dims.value_dim;
  ForEachHead(dims, tokens, pool, [&](int64_t h) {
    float* s = state + h * dk * dv;
    for (int64_t t = 0; t < tokens; ++t) {
      const float alpha = std::exp(log_decay[t * dims.value_heads + h]);
      const float* k = keys + (t * dims.key_heads + h / ratio) * dk;
      const float* delta = deltas + (t * dims.value_heads + h) * dv;
      if (t == 0 && initial) {
        ReplayStepInto(alpha, k, delta, dk, dv, initial + h * dk * dv, s);
      } else {
        ReplayStep(alpha, k, delta, dk, dv, s);
      }
    }
  });
}

void GdnChunked(const GdnDims& dims, int64_t tokens, const GdnInputs& in, float* state, float* out,
                ThreadPool* pool, int64_t chunk) {
  const int64_t ratio = dims.value_heads / dims.key_heads;
  ForEachHead(dims, tokens, pool, [&](int64_t h) {
    HeadView view{dims, in, h, h / ratio};
    float* s = state + h * dims.key_dim * dims.value_dim;
    for (int64_t t0 = 0; t0 < tokens; t0 += chunk)
      ChunkHead(view, t0, std::min(chunk, tokens - t0), s, out);
  });
}

namespace {

// out[c] = silu(sum_j taps[j][c] * rows[j][c]), j = 0..kernel-1 in order (vectorized over c).
MTPLX_TARGET_CLONES void ConvRow(const float* const* rows, const float* __restrict taps,
                                 int64_t kernel, int64_t channels, float* __restrict out) {
  for (int64_t c = 0; c < channels; ++c) out[c] = 0.0f;
  for (int64_t j = 0; j < kernel; ++j) {
    const float* __restrict row = rows[j];
    const float* __restrict tap = taps + j * channels;
    for (int64_t c = 0; c < channels; ++c) out[c] += tap[c] * row[c];
  }
  for (int64_t c = 0; c < channels; ++c) out[c] = SiluScalar(out[c]);
}

}  // namespace

std::vector<float> ConvTaps(const float* weight, int64_t channels, int64_t kernel) {
  std::vector<float> taps(kernel * channels);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t j = 0; j < kernel; ++j) taps[j * channels + c] = weight[c * kernel + j];
  return taps;
}

void CausalConvSilu(const float* x, int64_t tokens, int64_t channels, const float* taps,
                    int64_t kernel, float* window, float* out) {
  const int64_t history = kernel - 1;
  // Rows of the padded stream: window rows first, then the new inputs.
  auto input_row = [&](int64_t r) -> const float* {
    return r < history ? window + r * channels : x + (r - history) * channels;
  };
  std::vector<const float*> rows(kernel);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < kernel; ++j) rows[j] = input_row(t + j);
    ConvRow(rows.data(), taps, kernel, channels, out + t * channels);
  }
  // Keep the last K-1 inputs as the new window.
  std::vector<float> next(history * channels);
  for (int64_t r = 0; r < history; ++r)
    std::memcpy(next.data() + r * channels, input_row(tokens + r), channels * sizeof(float));
  std::memcpy(window, next.data(), next.size() * sizeof(float));
}

}  // namespace mtplx::kernels
