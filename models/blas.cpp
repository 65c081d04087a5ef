#include "models/blas.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace zl {

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ZL_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define ZL_CLONES
#endif

void rows_times_wt(int64_t M, int64_t N, int64_t K, const float* A, const float* Wt, float* C) {
  rows_times_wt_columns(M, N, K, A, Wt, C, 0, N);
}

ZL_CLONES void rows_times_wt_columns(int64_t M, int64_t N, int64_t K, const float* __restrict A,
                                     const float* __restrict Wt, float* __restrict C, int64_t begin, int64_t end) {
  // Blocks of 256 columns keep the M output rows of a block in L1 while Wᵀ streams by.
  constexpr int64_t kBlock = 256;
  for (int64_t n0 = begin; n0 < end; n0 += kBlock) {
    const int64_t nb = std::min(kBlock, end - n0);
    for (int64_t m = 0; m < M; ++m) std::fill(C + m * N + n0, C + m * N + n0 + nb, 0.0f);
    // Four rows of Wᵀ per pass over C: a quarter of the loads and stores of C,
    // which otherwise bound the loop (measured), per multiply-add.
    int64_t k = 0;
    for (; k + 4 <= K; k += 4) {
      const float *w0 = Wt + k * N + n0, *w1 = w0 + N, *w2 = w1 + N, *w3 = w2 + N;
      for (int64_t m = 0; m < M; ++m) {
        const float* a = A + m * K + k;
        const float s0 = a[0], s1 = a[1], s2 = a[2], s3 = a[3];
        float* c = C + m * N + n0;
        for (int64_t j = 0; j < nb; ++j) c[j] += s0 * w0[j] + s1 * w1[j] + s2 * w2[j] + s3 * w3[j];
      }
    }
    for (; k < K; ++k) {
      const float* w = Wt + k * N + n0;
      for (int64_t m = 0; m < M; ++m) {
        const float s = A[m * K + k];
        float* c = C + m * N + n0;
        for (int64_t j = 0; j < nb; ++j) c[j] += s * w[j];
      }
    }
  }
}

// The helpers below are always inlined into the cloned kernels, so the
// vector-argument ABI GCC warns about never applies.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace {

// Sixteen floats as one value (GCC/Clang vector extension): an AVX-512
// register in the avx512f clone, two AVX2 or four SSE registers in the others.
using f16 = float __attribute__((vector_size(64)));

__attribute__((always_inline)) inline f16 load16(const float* p) {
  f16 v;
  std::memcpy(&v, p, sizeof v);  // unaligned load
  return v;
}

// The sum of a vector's lanes by halving: four shuffles and adds, where a
// reduction the compiler writes itself goes lane by lane through memory
// (measured: 16 dependent scalar adds per key, the bulk of the scores' time).
__attribute__((always_inline)) inline float lanes_sum(f16 v) {
#if defined(__clang__) || __GNUC__ >= 12
  using f8 = float __attribute__((vector_size(32)));
  using f4 = float __attribute__((vector_size(16)));
  f8 h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  f4 q = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
  return (q[0] + q[2]) + (q[1] + q[3]);
#else  // older GCC (no __builtin_shufflevector): the same halving through memory
  float a[16];
  std::memcpy(a, &v, sizeof a);
  for (int w = 8; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) a[l] += a[l + w];
  return a[0];
#endif
}

using i16 = int32_t __attribute__((vector_size(64)));

__attribute__((always_inline)) inline f16 broadcast(float v) { return f16{} + v; }

__attribute__((always_inline)) inline void store16(float* p, f16 v) { std::memcpy(p, &v, sizeof v); }

__attribute__((always_inline)) inline float lanes_max(f16 v) {
  float m = v[0];
  for (int l = 1; l < 16; ++l) m = std::max(m, v[l]);
  return m;
}

// e^x to about 2e-7 relative for x in [-87, 88] (clamped there): x = n·ln2 + r
// with |r| <= ln2/2, e^r by its degree-6 Taylor polynomial (the first term
// left out is r^7/7! < 1.3e-7), 2^n built in the exponent bits.
__attribute__((always_inline)) inline f16 exp16(f16 x) {
  const f16 lo = broadcast(-87.0f), hi = broadcast(88.0f);
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  const f16 shifter = broadcast(12582912.0f);  // 1.5·2^23: adding it rounds to an integer
  const f16 n = (x * 1.44269504088896341f + shifter) - shifter;
  const f16 r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;  // ln 2 in two parts
  f16 p = broadcast(1.0f / 720);
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const i16 bits = (__builtin_convertvector(n, i16) + 127) << 23;
  f16 scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// The exact (erf) GELU, x·(1 + erf(x/√2))/2, with erf from Abramowitz and
// Stegun 7.1.26 (absolute error below 1.5e-7).
__attribute__((always_inline)) inline f16 gelu16(f16 x) {
  const f16 z = (x < 0 ? -x : x) * 0.70710678118654752f;
  const f16 t = 1.0f / (1.0f + 0.3275911f * z);
  const f16 poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const f16 erf_abs = 1.0f - poly * exp16(-z * z);
  return 0.5f * x * (x < 0 ? 1.0f - erf_abs : 1.0f + erf_abs);
}

float gelu1(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }

}  // namespace

ZL_CLONES void scaled_scores(const float* __restrict q, const float* __restrict K, int64_t n, int64_t D, float scale,
                             float* __restrict s) {
  const int64_t D16 = D / 16 * 16;
  for (int64_t j = 0; j < n; ++j) {
    const float* k = K + j * D;
    f16 acc = {};
    for (int64_t d = 0; d < D16; d += 16) acc += load16(q + d) * load16(k + d);
    float sum = lanes_sum(acc);
    for (int64_t d = D16; d < D; ++d) sum += q[d] * k[d];
    s[j] = sum * scale;
  }
}

ZL_CLONES void weighted_rows(const float* __restrict p, const float* __restrict V, int64_t n, int64_t D,
                             float* __restrict out) {
  std::fill(out, out + D, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const float pj = p[j];
    const float* v = V + j * D;
    for (int64_t d = 0; d < D; ++d) out[d] += pj * v[d];
  }
}

ZL_CLONES void softmax_inplace(float* __restrict x, int64_t n) {
  const int64_t n16 = n / 16 * 16;
  float m = -std::numeric_limits<float>::infinity();
  if (n16 > 0) {
    f16 mv = load16(x);
    for (int64_t i = 16; i < n16; i += 16) {
      const f16 v = load16(x + i);
      mv = v > mv ? v : mv;
    }
    m = lanes_max(mv);
  }
  for (int64_t i = n16; i < n; ++i) m = std::max(m, x[i]);
  f16 acc = {};
  for (int64_t i = 0; i < n16; i += 16) {
    const f16 e = exp16(load16(x + i) - m);
    store16(x + i, e);
    acc += e;
  }
  float sum = lanes_sum(acc);
  for (int64_t i = n16; i < n; ++i) sum += (x[i] = std::exp(x[i] - m));
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

ZL_CLONES void gelu_inplace(float* __restrict x, int64_t n) {
  const int64_t n16 = n / 16 * 16;
  for (int64_t i = 0; i < n16; i += 16) store16(x + i, gelu16(load16(x + i)));
  for (int64_t i = n16; i < n; ++i) x[i] = gelu1(x[i]);
}

void transpose(const float* __restrict src, int64_t rows, int64_t cols, float* __restrict dst) {
  constexpr int64_t kTile = 16;  // a tile's source and destination rows stay in L1
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) dst[j * rows + i] = src[i * cols + j];
    }
}

}  // namespace zl
