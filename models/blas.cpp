#include "models/blas.h"

#include <algorithm>

namespace zl {

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ZL_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define ZL_CLONES
#endif

ZL_CLONES void axpy(float s, const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += s * x[i];
}

ZL_CLONES float dot(const float* __restrict a, const float* __restrict b, int64_t n) {
  // Sixteen independent partial sums: a reduction the compiler may vectorise
  // without reassociating (and so without -ffast-math).
  float acc[16] = {0};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; ++l) acc[l] += a[i + l] * b[i + l];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int l = 0; l < 16; ++l) s += acc[l];
  return s;
}

ZL_CLONES void rows_times_wt(int64_t M, int64_t N, int64_t K, const float* __restrict A, const float* __restrict Wt,
                             float* __restrict C) {
  // Blocks of 256 columns keep the M output rows of a block in L1 while Wᵀ streams by.
  constexpr int64_t kBlock = 256;
  for (int64_t n0 = 0; n0 < N; n0 += kBlock) {
    const int64_t nb = std::min(kBlock, N - n0);
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

}  // namespace zl
