#include "models/blas.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace zl {

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ZL_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define ZL_CLONES
#endif

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

// Whether any lane of v is at least t: the comparison's lanes or-ed by
// halving (as lanes_sum), where testing them one by one costs sixteen extractions.
__attribute__((always_inline)) inline bool any_at_least(f16 v, float t) {
  const i16 above = v >= (f16{} + t);
#if defined(__clang__) || __GNUC__ >= 12
  using i8 = int32_t __attribute__((vector_size(32)));
  using i4 = int32_t __attribute__((vector_size(16)));
  i8 h = __builtin_shufflevector(above, above, 0, 1, 2, 3, 4, 5, 6, 7) |
         __builtin_shufflevector(above, above, 8, 9, 10, 11, 12, 13, 14, 15);
  i4 q = __builtin_shufflevector(h, h, 0, 1, 2, 3) | __builtin_shufflevector(h, h, 4, 5, 6, 7);
  return (q[0] | q[1] | q[2] | q[3]) != 0;
#else
  int32_t a[16];
  std::memcpy(a, &above, sizeof a);
  int32_t any = 0;
  for (int l = 0; l < 16; ++l) any |= a[l];
  return any != 0;
#endif
}

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

// MR rows of C, one panel: 2·MR accumulators (16 of the 32 AVX-512
// registers at MR = 8) and the panel's row k, each weight loaded once and
// used MR times. `cols` < kPanel for the last, padded panel.
template <int MR>
__attribute__((always_inline)) inline void panel_rows(int64_t K, const float* __restrict A, const float* __restrict P,
                                                      float* __restrict C, int64_t N, int64_t cols) {
  static_assert(kPanel == 32, "two vectors of 16 per panel row");
  f16 lo[MR], hi[MR];
  for (int m = 0; m < MR; ++m) lo[m] = hi[m] = f16{};
  for (int64_t k = 0; k < K; ++k) {
    const f16 w0 = load16(P + k * kPanel), w1 = load16(P + k * kPanel + 16);
    for (int m = 0; m < MR; ++m) {
      const float a = A[m * K + k];
      lo[m] += a * w0;
      hi[m] += a * w1;
    }
  }
  for (int m = 0; m < MR; ++m) {
    if (cols == kPanel) {
      store16(C + m * N, lo[m]);
      store16(C + m * N + 16, hi[m]);
    } else {
      alignas(64) float row[kPanel];
      store16(row, lo[m]);
      store16(row + 16, hi[m]);
      std::copy(row, row + cols, C + m * N);
    }
  }
}

}  // namespace

int64_t panel_count(int64_t N) { return (N + kPanel - 1) / kPanel; }

void pack_panels(const float* W, int64_t N, int64_t K, float* P) {
  for (int64_t p = 0; p < panel_count(N); ++p)
    for (int64_t k = 0; k < K; ++k) {
      float* row = P + (p * K + k) * kPanel;
      for (int64_t j = 0; j < kPanel; ++j) {
        const int64_t n = p * kPanel + j;
        row[j] = n < N ? W[n * K + k] : 0.0f;
      }
    }
}

ZL_CLONES void panels_product(int64_t M, int64_t N, int64_t K, const float* A, const float* P, float* C, int64_t p0,
                              int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const float* panel = P + p * K * kPanel;
    const int64_t col = p * kPanel, cols = std::min(kPanel, N - col);
    int64_t m = 0;
    for (; m + 8 <= M; m += 8) panel_rows<8>(K, A + m * K, panel, C + m * N + col, N, cols);
    const float* a = A + m * K;
    float* c = C + m * N + col;
    switch (M - m) {
      case 7: panel_rows<7>(K, a, panel, c, N, cols); break;
      case 6: panel_rows<6>(K, a, panel, c, N, cols); break;
      case 5: panel_rows<5>(K, a, panel, c, N, cols); break;
      case 4: panel_rows<4>(K, a, panel, c, N, cols); break;
      case 3: panel_rows<3>(K, a, panel, c, N, cols); break;
      case 2: panel_rows<2>(K, a, panel, c, N, cols); break;
      case 1: panel_rows<1>(K, a, panel, c, N, cols); break;
      default: break;
    }
  }
}

namespace {

#if defined(__clang__) || __GNUC__ >= 12
#define ZL_SIXTEEN_SUMS 1
// The lane sums of v[0..15] as one vector (lane j = the sum of v[j]'s lanes):
// four levels of pairing, each halving the partial sums per key, 30
// shuffles and 15 adds where sixteen lanes_sum take 64 and 64.
__attribute__((always_inline)) inline f16 sixteen_sums(const f16* v) {
  f16 w[8], x[4], y[2];
  for (int i = 0; i < 8; ++i)
    w[i] = __builtin_shufflevector(v[2 * i], v[2 * i + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
           __builtin_shufflevector(v[2 * i], v[2 * i + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30,
                                   31);
  for (int i = 0; i < 4; ++i)
    x[i] = __builtin_shufflevector(w[2 * i], w[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
           __builtin_shufflevector(w[2 * i], w[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  for (int i = 0; i < 2; ++i)
    y[i] = __builtin_shufflevector(x[2 * i], x[2 * i + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
           __builtin_shufflevector(x[2 * i], x[2 * i + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
  return __builtin_shufflevector(y[0], y[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
         __builtin_shufflevector(y[0], y[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}
#endif

// out[0 .. 16·NV) = Σ_j p[j]·V[j][0 .. 16·NV), summed in NV registers.
template <int NV>
__attribute__((always_inline)) inline void weighted_block(const float* __restrict p, const float* __restrict V,
                                                          int64_t n, int64_t D, float* __restrict out) {
  f16 acc[NV] = {};
  for (int64_t j = 0; j < n; ++j) {
    const f16 pj = broadcast(p[j]);
    for (int v = 0; v < NV; ++v) acc[v] += pj * load16(V + j * D + 16 * v);
  }
  for (int v = 0; v < NV; ++v) store16(out + 16 * v, acc[v]);
}

}  // namespace

ZL_CLONES void scaled_scores(const float* __restrict q, const float* __restrict K, int64_t n, int64_t D, float scale,
                             float* __restrict s) {
  const int64_t D16 = D / 16 * 16;
  int64_t j = 0;
#ifdef ZL_SIXTEEN_SUMS
  if (D16 == D)  // sixteen keys at a time, their sums reduced together
    for (; j + 16 <= n; j += 16) {
      f16 acc[16];
      for (int i = 0; i < 16; ++i) {
        const float* k = K + (j + i) * D;
        acc[i] = load16(q) * load16(k);
        for (int64_t d = 16; d < D; d += 16) acc[i] += load16(q + d) * load16(k + d);
      }
      store16(s + j, sixteen_sums(acc) * scale);
    }
#endif
  for (; j < n; ++j) {
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
  // Summed in registers (or a private block) and written once (see blas.h).
  int64_t d0 = 0;
  for (; d0 + 64 <= D; d0 += 64) weighted_block<4>(p, V + d0, n, D, out + d0);
  switch ((D - d0) / 16) {
    case 3: weighted_block<3>(p, V + d0, n, D, out + d0); break;
    case 2: weighted_block<2>(p, V + d0, n, D, out + d0); break;
    case 1: weighted_block<1>(p, V + d0, n, D, out + d0); break;
    default: break;
  }
  d0 += (D - d0) / 16 * 16;
  if (d0 == D) return;
  alignas(64) float acc[16] = {};
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = d0; d < D; ++d) acc[d - d0] += p[j] * V[j * D + d];
  std::copy(acc, acc + (D - d0), out + d0);
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

ZL_CLONES void weigh_keys(const float* __restrict raw, const float* __restrict excl, const float* __restrict imp,
                          float alpha, int64_t p, int64_t n, bool scale_form, float* __restrict s) {
  auto log_w = [&](f16 d, int64_t j) {  // d = p − j per lane
    if (imp) return -alpha * d * (1.0f - load16(imp + j));
    return alpha * ((excl ? load16(excl + j) : f16{}) - d);
  };
  f16 lane;
  for (int l = 0; l < 16; ++l) lane[l] = static_cast<float>(l);
  const int64_t n16 = n / 16 * 16;
  for (int64_t j = 0; j < n16; j += 16) {
    const f16 lw = log_w(static_cast<float>(p - j) - lane, j), r = load16(raw + j);
    store16(s + j, scale_form ? r * exp16(lw) : r + lw);
  }
  for (int64_t j = n16; j < n; ++j) {
    const float d = static_cast<float>(p - j);
    const float lw = imp ? -alpha * d * (1.0f - imp[j]) : alpha * ((excl ? excl[j] : 0.0f) - d);
    s[j] = scale_form ? raw[j] * std::exp(lw) : raw[j] + lw;
  }
}

ZL_CLONES int64_t top_k(const float* __restrict x, int64_t n, int64_t k, int64_t* __restrict top) {
  if (k <= 0) return 0;
  int64_t held = 0;
  float least = 0;  // x[top[k − 1]] once k are held, kept in a register
  auto offer = [&](int64_t j) {
    if (held == k && !(x[j] > least)) return;
    int64_t at = held < k ? held++ : k - 1;
    for (; at > 0 && x[j] > x[top[at - 1]]; --at) top[at] = top[at - 1];
    top[at] = j;
    if (held == k) least = x[top[k - 1]];
  };
  const int64_t chunks = n / 16;
  if (chunks <= k || k > 16 || n < 256) {
    // Few values (the gate's top keys of a head, some 80): the bound below
    // costs more than it saves; a chunk whose lanes all fall below the k-th
    // largest held so far is passed over in one test instead.
    for (int64_t c = 0; c < chunks; ++c)
      if (held < k || any_at_least(load16(x + 16 * c), least))
        for (int64_t j = 16 * c; j < 16 * c + 16; ++j) offer(j);
    for (int64_t j = 16 * chunks; j < n; ++j) offer(j);
    return held;
  }
  // Each lane's maximum over the chunks of sixteen is a distinct value, so
  // the k-th largest of the sixteen bounds the k-th largest value from
  // below: only the few chunks reaching it need their values offered.
  f16 lanes = load16(x);
  for (int64_t c = 1; c < chunks; ++c) {
    const f16 v = load16(x + 16 * c);
    lanes = v > lanes ? v : lanes;
  }
  float maxima[16];
  std::memcpy(maxima, &lanes, sizeof maxima);
  std::nth_element(maxima, maxima + (k - 1), maxima + 16, std::greater<float>());
  const float bound = maxima[k - 1];
  auto larger = [](f16 a, f16 b) { return a > b ? a : b; };
  int64_t c = 0;
  for (; c + 4 <= chunks; c += 4) {  // four chunks to a test, then each that passes
    const float* q = x + 16 * c;
    if (!any_at_least(larger(larger(load16(q), load16(q + 16)), larger(load16(q + 32), load16(q + 48))), bound))
      continue;
    for (int64_t i = c; i < c + 4; ++i)
      if (any_at_least(load16(x + 16 * i), bound))
        for (int64_t j = 16 * i; j < 16 * i + 16; ++j) offer(j);
  }
  for (; c < chunks; ++c)
    if (any_at_least(load16(x + 16 * c), bound))
      for (int64_t j = 16 * c; j < 16 * c + 16; ++j) offer(j);
  for (int64_t j = 16 * chunks; j < n; ++j) offer(j);
  return held;
}

ZL_CLONES void scale_by_sigmoid(float* __restrict u, const float* __restrict z, int64_t n, float s) {
  const int64_t n16 = n / 16 * 16;
  for (int64_t i = 0; i < n16; i += 16) store16(u + i, load16(u + i) * (s / (1.0f + exp16(-load16(z + i)))));
  for (int64_t i = n16; i < n; ++i) u[i] *= s / (1.0f + std::exp(-z[i]));
}

}  // namespace zl
