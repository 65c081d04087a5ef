// Matrix products for the hand-written decode step (models/decode_step.h),
// where M (the batch) is tiny: C[M×N] = A[M×K]·W[N×K]ᵀ, row-major float32,
// which is x·Wᵀ for a torch Linear weight W [out,in].
//
// At M = 8 a general GEMM (OpenBLAS through LibTorch) spends more time
// packing W than multiplying with it (measured: sgemm_incopy 24% against
// sgemm_kernel 13% of a decode). `rows_times_wt` instead streams Wᵀ (stored
// [K×N]) once: each row of C is a sum of rows of Wᵀ scaled by A's entries,
// an AXPY the compiler vectorises for AVX-512, AVX2 or SSE, chosen at load
// time (GCC target_clones), so the binary stays portable.
#pragma once
#include <cstdint>

namespace zl {

// C[M×N] = A[M×K]·Wt[K×N] (Wt = Wᵀ, prepared once).
void rows_times_wt(int64_t M, int64_t N, int64_t K, const float* A, const float* Wt, float* C);

// Σ a[i]·b[i] over n, vectorised the same way.
float dot(const float* a, const float* b, int64_t n);

// y[n] += s · x[n].
void axpy(float s, const float* x, float* y, int64_t n);

}  // namespace zl
