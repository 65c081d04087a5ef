#include "models/split_linear.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <functional>

namespace zl {
namespace {

bool cpu_autocast() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(at::kCPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}

// block(begin, end) over [0, n) in one contiguous range per LibTorch thread.
void per_thread(int64_t n, const std::function<void(int64_t, int64_t)>& block) {
  const int64_t parts = std::min<int64_t>(at::get_num_threads(), n);
  at::parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
    torch::NoGradGuard no_grad;  // thread-local: LibTorch's workers do not inherit the caller's
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t begin = n * p / parts, end = n * (p + 1) / parts;
      if (end > begin) block(begin, end);
    }
  });
}

struct SplitLinear : torch::autograd::Function<SplitLinear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w) {
    auto x2 = x.reshape({-1, x.size(-1)}).contiguous();  // [R,K]
    auto y = torch::empty({x2.size(0), w.size(0)}, x.options());
    const auto wt = w.t();
    per_thread(x2.size(0), [&](int64_t r0, int64_t r1) {
      auto out = y.narrow(0, r0, r1 - r0);
      at::mm_out(out, x2.narrow(0, r0, r1 - r0), wt);
    });
    ctx->save_for_backward({x2, w});
    auto shape = x.sizes().vec();
    ctx->saved_data["shape"] = shape;  // the input's, for its gradient
    shape.back() = w.size(0);
    return y.view(shape);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x2 = saved[0], &w = saved[1];
    auto g = grads[0].reshape({-1, w.size(0)}).contiguous();  // [R,N]
    torch::Tensor gx, gw;
    if (ctx->needs_input_grad(0)) {
      gx = torch::empty_like(x2);  // rows of gx = rows of g · W
      per_thread(g.size(0), [&](int64_t r0, int64_t r1) {
        auto out = gx.narrow(0, r0, r1 - r0);
        at::mm_out(out, g.narrow(0, r0, r1 - r0), w);
      });
      gx = gx.view(ctx->saved_data["shape"].toIntVector());
    }
    if (ctx->needs_input_grad(1)) {
      gw = torch::empty_like(w);  // rows n of gW = (column n of g)ᵀ · x
      per_thread(w.size(0), [&](int64_t n0, int64_t n1) {
        auto out = gw.narrow(0, n0, n1 - n0);
        at::mm_out(out, g.narrow(1, n0, n1 - n0).t(), x2);
      });
    }
    return {gx, gw};
  }
};

}  // namespace

torch::Tensor split_linear(const torch::Tensor& x, const torch::Tensor& weight) {
  constexpr int64_t kMinRows = 256;  // below this a product is too small to share
  const bool split = x.is_cpu() && x.scalar_type() == torch::kFloat && weight.scalar_type() == torch::kFloat &&
                     at::get_num_threads() > 1 && !cpu_autocast() && !at::in_parallel_region() &&
                     x.numel() / x.size(-1) >= kMinRows;
  if (!split) return torch::nn::functional::linear(x, weight);
  return SplitLinear::apply(x, weight);
}

}  // namespace zl
