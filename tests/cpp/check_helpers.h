// Small checks several test files share: what a call throws, and how far two
// tensors lie apart.
#pragma once
#include <torch/torch.h>

#include <exception>
#include <functional>
#include <string>

namespace zl {

// The message of the std::exception `f` throws; "" when it throws none.
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// The largest elementwise difference |a - b|.
inline float max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<float>(); }

}  // namespace zl
