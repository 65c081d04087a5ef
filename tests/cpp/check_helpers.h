// Small checks several test files share: what a call throws, and how far two
// tensors lie apart.
#pragma once
#include <torch/torch.h>

#include "tests/cpp/message_of.h"

namespace zl {

// The largest elementwise difference |a - b|.
inline float max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<float>(); }

}  // namespace zl
