// y = x·Wᵀ (a bias-free torch Linear) whose products use every LibTorch
// thread on the CPU. zerolayer pins OpenBLAS to one thread (its own pool
// fights LibTorch's, sim/runtime.h), so a plain Linear's matrix product runs
// on the calling thread alone while LibTorch's other threads spin: in an fp32
// training step here the products were 45% of the samples and OpenMP's spin
// 35%. This one cuts each product into row blocks (the forward and the
// input's gradient) or column blocks of the weight's gradient, one per
// thread, each a single-threaded BLAS call, so the blocks share nothing they
// write. Same arithmetic per element as torch::linear (tested: output and
// input gradient equal to 1e-5, the weight's gradient, a sum over every row,
// to 1e-4). Elsewhere (CUDA, other dtypes, autocast, one thread, fewer than
// 256 rows) it is torch::linear.
#pragma once
#include <torch/torch.h>

namespace zl {

torch::Tensor split_linear(const torch::Tensor& x, const torch::Tensor& weight);

}  // namespace zl
