// split_linear against torch's Linear: the same output and gradients, on a
// product large enough to be cut in blocks (two threads) and on one that is
// not; and the blocks really run on more than one thread.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include <atomic>

#include "models/split_linear.h"

namespace zl {
namespace {

void expect_same_as_linear(const std::vector<int64_t>& shape, int64_t out) {
  auto x = torch::randn(shape, torch::requires_grad());
  auto w = torch::randn({out, shape.back()}, torch::requires_grad());
  auto up = torch::randn({out});  // weights the outputs, so each gradient entry differs
  auto y = split_linear(x, w);
  (y * up).sum().backward();
  auto gx = x.grad().clone(), gw = w.grad().clone();
  x.mutable_grad().zero_();
  w.mutable_grad().zero_();
  auto want = torch::nn::functional::linear(x, w);
  (want * up).sum().backward();
  EXPECT_EQ(y.sizes(), want.sizes());
  EXPECT_TRUE(torch::allclose(y, want, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(gx, x.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(gw, w.grad(), 1e-4, 1e-4));
}

TEST(SplitLinear, SameOutputAndGradientsAsLinear) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  torch::manual_seed(3);
  expect_same_as_linear({3, 101, 48}, 70);  // 303 rows, 70 outputs: uneven blocks
  expect_same_as_linear({5, 48}, 9);        // too small to split: torch::linear
  {
    torch::NoGradGuard no_grad;  // inference goes the same way
    auto x = torch::randn({300, 16}), w = torch::randn({8, 16});
    EXPECT_TRUE(torch::allclose(split_linear(x, w), x.mm(w.t()), 1e-5, 1e-5));
  }
  at::set_num_threads(threads);
}

TEST(SplitLinear, AtenParallelForRunsOnSeveralThreads) {
  // at::parallel_for is inlined into our code and is parallel only where
  // that code is compiled with OpenMP (CMakeLists.txt).
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  std::atomic<int> mask{0};
  at::parallel_for(0, 2, 1, [&](int64_t, int64_t) { mask.fetch_or(1 << at::get_thread_num()); });
  EXPECT_EQ(mask.load(), 3);
  at::set_num_threads(threads);
}

}  // namespace
}  // namespace zl
