// The kernels of the hand-written decode step (models/decode_step.h) and of
// the verifier's fast score: matrix products where M (the batch) is tiny,
// C[M×N] = A[M×K]·W[N×K]ᵀ, row-major float32, which is x·Wᵀ for a torch
// Linear weight W [out,in]; one head's attention; softmax and GELU; a
// transpose. Each is vectorised for AVX-512, AVX2 or SSE, chosen at load time.
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
// Only columns [begin, end) of that C (threads split a product by columns).
void rows_times_wt_columns(int64_t M, int64_t N, int64_t K, const float* A, const float* Wt, float* C, int64_t begin,
                           int64_t end);

// The same product with W packed once into panels of kPanel columns,
// P = [⌈N/kPanel⌉][K][kPanel] (the last one zero-padded), so that a panel is
// read as one contiguous stream and summed in registers, 8 rows of C at a
// time: a decode step's weights do not stay in cache between steps, and
// streaming Wᵀ by rows ran at half the speed (measured: the 17 products of
// one step at batch 8, 136 µs against 66).
constexpr int64_t kPanel = 32;
int64_t panel_count(int64_t N);
// P[panel_count(N)·K·kPanel] from a torch Linear weight W [N,K] (out, in).
void pack_panels(const float* W, int64_t N, int64_t K, float* P);
// Only the columns of panels [p0, p1) of C[M×N] = A[M×K]·Wᵀ.
void panels_product(int64_t M, int64_t N, int64_t K, const float* A, const float* P, float* C, int64_t p0, int64_t p1);

// Attention over one head's cache rows K, V [n×D]: s[j] = scale · q·K[j],
// and out[D] = Σ_j p[j]·V[j].
void scaled_scores(const float* q, const float* K, int64_t n, int64_t D, float scale, float* s);
void weighted_rows(const float* p, const float* V, int64_t n, int64_t D, float* out);

// x[n] <- softmax(x[n]), and x[n] <- GELU(x[n]) (exact, erf form), with a
// vectorised exp good to about 2e-7 relative: the step's own kernels, since
// an ATen call inside the step would wake LibTorch's threads (spin_team.h).
void softmax_inplace(float* x, int64_t n);
void gelu_inplace(float* x, int64_t n);

// dst[cols×rows] = src[rows×cols]ᵀ, by tiles (a decode step prepares its
// transposed weights with it: 3x faster than Tensor::t().contiguous() here).
void transpose(const float* src, int64_t rows, int64_t cols, float* dst);

}  // namespace zl
