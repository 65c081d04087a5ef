// The kernels of the hand-written decode step (models/decode_step.h) and of
// the verifier's fast score: matrix products where M (the batch) is tiny,
// C[M×N] = A[M×K]·W[N×K]ᵀ, row-major float32, which is x·Wᵀ for a torch
// Linear weight W [out,in]; one head's attention; softmax and GELU. Each is
// vectorised for AVX-512, AVX2 or SSE, chosen at load time (GCC
// target_clones), so the binary stays portable.
//
// Every kernel sums in registers or a private block and writes its output
// once: team members write neighbouring columns or heads of one output, and
// summing in the output itself ran 2-5x slower on two cores than on one
// here, though the two shared no cache line (measured on 8 x 128 x 512:
// 28 µs per half against 5.6 alone).
#pragma once
#include <cstdint>

namespace zl {

// At M = 8 a general GEMM (OpenBLAS through LibTorch) spends more time
// packing W than multiplying with it (measured: sgemm_incopy 24% against
// sgemm_kernel 13% of a decode). Here W is packed once into panels of kPanel
// columns, P = [⌈N/kPanel⌉][K][kPanel] (the last one zero-padded), so that a
// panel is read as one contiguous stream and summed in registers, 8 rows of
// C at a time: a decode step's weights do not stay in cache between steps,
// and streaming an unpacked Wᵀ row by row ran at half the speed (measured:
// the 17 products of one step at batch 8, 136 µs against 66).
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
// u[n] <- u[n] · s·sigmoid(z[n]): sfcl's correction of the MLP input (models/correction.h).
void scale_by_sigmoid(float* u, const float* z, int64_t n, float s);
// fused's key weighting of one query at position p over its n = p + 1
// visible keys (models/key_weighting.h): log w[j] = alpha·(excl[j] − (p − j))
// for attn_mass (excl given; it is 0 at p = 0, pass nullptr), else
// −alpha·(p − j)·(1 − imp[j]); then s[j] = raw[j]·w[j] (scale) or
// raw[j] + log w[j] (bias).
void weigh_keys(const float* raw, const float* excl, const float* imp, float alpha, int64_t p, int64_t n,
                bool scale_form, float* s);
// The indices of the k largest of x[0..n) into top[0..k), largest first
// (ties: the lower index); returns min(k, n). Values are offered to a sorted
// list only from the chunks of sixteen whose maximum could place: the
// gate's top-k over the vocabulary reads each value about once.
int64_t top_k(const float* x, int64_t n, int64_t k, int64_t* top);

}  // namespace zl
