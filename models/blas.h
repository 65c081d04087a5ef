// One matrix product, straight to the BLAS that LibTorch already loaded
// (OpenBLAS here), for the hand-written decode step: C[M×N] = A[M×K]·W[N×K]ᵀ,
// all row-major float32, which is x·Wᵀ for a torch Linear weight W [out,in].
// Going through the Fortran symbol `sgemm_` skips LibTorch's dispatcher,
// whose per-call cost dominates a batch-8 decode step. Large products are
// split over LibTorch's threads by rows of W (OpenBLAS is pinned to one).
#pragma once
#include <cstdint>

namespace zl {

void matmul_bt(int64_t M, int64_t N, int64_t K, const float* A, const float* W, float* C);

}  // namespace zl
