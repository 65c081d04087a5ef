// sim/optimizer.h: the fused clip-and-step against LibTorch's own
// clip_grad_norm_ and AdamW::step on the same parameters and gradients.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "sim/optimizer.h"

namespace zl {
namespace {

// Two parameter sets in two groups (decayed, not decayed), like make_optimizer's.
struct Params {
  std::vector<torch::Tensor> decay, plain;
  std::vector<torch::Tensor> all() const {
    auto v = decay;
    v.insert(v.end(), plain.begin(), plain.end());
    return v;
  }
};

Params make_params() {
  torch::manual_seed(3);
  Params p;
  // 70,000 floats: more than one thread's grain, so the parallel split runs.
  p.decay = {torch::randn({700, 100}).requires_grad_(), torch::randn({33, 7}).requires_grad_()};
  p.plain = {torch::randn({129}).requires_grad_(), torch::randn({5}).requires_grad_()};
  return p;
}

torch::optim::AdamW optimizer_over(const Params& p) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(p.decay, std::make_unique<torch::optim::AdamWOptions>(
                                   torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).weight_decay(0.1)));
  groups.emplace_back(p.plain, std::make_unique<torch::optim::AdamWOptions>(
                                   torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).weight_decay(0.0)));
  return torch::optim::AdamW(groups, torch::optim::AdamWOptions(3e-3));
}

// Gradients of the same size on both sides; `skip` leaves the last parameter
// without one (a parameter the step must leave alone).
void set_grads(const Params& p, int step, double scale, bool skip) {
  auto all = p.all();
  for (size_t i = 0; i < all.size(); ++i) {
    if (skip && i + 1 == all.size()) {
      all[i].mutable_grad().reset();
      continue;
    }
    torch::manual_seed(100 * step + static_cast<int>(i));
    all[i].mutable_grad() = torch::randn(all[i].sizes()) * scale;
  }
}

void expect_close(const torch::Tensor& a, const torch::Tensor& b, const char* what) {
  EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6)) << what << ": largest difference "
                                                << (a - b).abs().max().item<double>();
}

void run_both(double max_norm, double grad_scale) {
  Params ours = make_params(), theirs = make_params();
  auto opt_ours = optimizer_over(ours), opt_theirs = optimizer_over(theirs);
  for (int step = 0; step < 4; ++step) {
    const bool skip = step == 1;
    set_grads(ours, step, grad_scale, skip);
    set_grads(theirs, step, grad_scale, skip);
    const double norm = clip_step(opt_ours, max_norm);
    double expected = std::nan("");
    if (max_norm > 0) expected = torch::nn::utils::clip_grad_norm_(theirs.all(), max_norm);
    opt_theirs.step();
    if (max_norm > 0) EXPECT_NEAR(norm, expected, 1e-5 * expected);
    const auto a = ours.all(), b = theirs.all();
    for (size_t i = 0; i < a.size(); ++i) {
      expect_close(a[i], b[i], "parameter");
      const auto* sa = static_cast<torch::optim::AdamWParamState*>(param_state(opt_ours, a[i]));
      const auto* sb = static_cast<torch::optim::AdamWParamState*>(param_state(opt_theirs, b[i]));
      ASSERT_EQ(sa == nullptr, sb == nullptr) << "parameter " << i << " at step " << step;
      if (!sa) continue;
      EXPECT_EQ(sa->step(), sb->step()) << "parameter " << i;
      expect_close(sa->exp_avg(), sb->exp_avg(), "exp_avg");
      expect_close(sa->exp_avg_sq(), sb->exp_avg_sq(), "exp_avg_sq");
    }
  }
}

TEST(Optimizer, ClipStepIsLibTorchsClipAndAdamW) {
  run_both(/*max_norm=*/1.0, /*grad_scale=*/1.0);  // total norm ~270: clipped every step
}

TEST(Optimizer, ClipStepBelowTheNormDoesNotScale) {
  run_both(/*max_norm=*/1e6, /*grad_scale=*/1e-3);
}

TEST(Optimizer, ClipStepWithoutClipping) { run_both(/*max_norm=*/0.0, /*grad_scale=*/1.0); }

TEST(Optimizer, AParameterWithoutAGradientIsLeftAlone) {
  Params p = make_params();
  auto opt = optimizer_over(p);
  const auto last = p.plain.back().detach().clone();
  set_grads(p, 0, 1.0, /*skip=*/true);
  clip_step(opt, 1.0);
  EXPECT_TRUE(torch::equal(p.plain.back(), last));
  EXPECT_EQ(param_state(opt, p.plain.back()), nullptr);
  drop_grads(opt);
  for (const auto& t : p.all()) EXPECT_FALSE(t.grad().defined());
}

TEST(Optimizer, ANonContiguousParameterTakesLibTorchsPath) {
  // A transposed view as a parameter: the fused pass refuses it and the
  // result is still LibTorch's.
  torch::manual_seed(5);
  auto base = torch::randn({40, 30});
  auto a = base.t().detach().requires_grad_(), b = base.t().detach().requires_grad_();
  ASSERT_FALSE(a.is_contiguous());
  torch::optim::AdamW oa({a}, torch::optim::AdamWOptions(1e-2)), ob({b}, torch::optim::AdamWOptions(1e-2));
  a.mutable_grad() = torch::ones_like(a);
  b.mutable_grad() = torch::ones_like(b);
  clip_step(oa, 0.5);
  torch::nn::utils::clip_grad_norm_(std::vector<torch::Tensor>{b}, 0.5);
  ob.step();
  expect_close(a, b, "parameter");
}

}  // namespace
}  // namespace zl
