#include "sim/optimizer.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <type_traits>
#include <vector>

namespace zl {

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ZL_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define ZL_CLONES
#endif

torch::optim::AdamW make_optimizer(Transformer& model, const TrainConfig& t) {
  std::vector<torch::Tensor> decay, no_decay;
  for (auto& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto opts = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, opts(t.weight_decay));
  groups.emplace_back(no_decay, opts(0.0));
  return torch::optim::AdamW(groups, torch::optim::AdamWOptions(t.lr));
}

namespace {

// The optimizer's key for a parameter: the text of its TensorImpl's address
// in LibTorch 1.x, the address itself in 2.x (torch/optim/optimizer.h).
std::string state_key(std::string*, const torch::Tensor& p) { return c10::guts::to_string(p.unsafeGetTensorImpl()); }
[[maybe_unused]] void* state_key(void**, const torch::Tensor& p) { return p.unsafeGetTensorImpl(); }

template <class Optim>
auto key_of(Optim& optim, const torch::Tensor& p) {
  using Key = typename std::decay_t<decltype(optim.state())>::key_type;
  return state_key(static_cast<Key*>(nullptr), p);
}

// The per-element constants of one parameter's update, in float as
// LibTorch's CPU kernels turn their double scalars into float.
struct AdamWTerms {
  float clip;        // the gradient's scale (1: not clipped)
  float decay;       // 1 - lr * weight_decay
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float sqrt_bias2;  // sqrt(1 - beta2^step)
  float eps;
  float neg_step;    // -lr / (1 - beta1^step)
};

// One parameter's AdamW update in one pass over p, g, m and v, with
// LibTorch's order of operations: p *= decay; m = m*b1 + (1-b1)*g;
// v = v*b2 + (1-b2)*g*g; p += -step * m / (sqrt(v)/sqrt(bc2) + eps).
__attribute__((always_inline)) inline void adamw_element(float* __restrict p, const float* __restrict g,
                                                         float* __restrict m, float* __restrict v, int64_t i,
                                                         const AdamWTerms& c) {
  const float grad = g[i] * c.clip;
  const float pi = p[i] * c.decay;
  const float mi = m[i] * c.beta1 + c.one_minus_beta1 * grad;
  const float vi = v[i] * c.beta2 + c.one_minus_beta2 * grad * grad;
  m[i] = mi;
  v[i] = vi;
  p[i] = pi + c.neg_step * (mi / (__builtin_sqrtf(vi) / c.sqrt_bias2 + c.eps));
}

ZL_CLONES void adamw_elements(float* __restrict p, const float* __restrict g, float* __restrict m,
                              float* __restrict v, int64_t n, AdamWTerms c) {
  int64_t i = 0;
  // Blocks of sixteen: a loop of known length, which GCC's -O2 vectorises
  // (it leaves a loop that needs a remainder scalar).
  for (; i + 16 <= n; i += 16)
    for (int64_t l = i; l < i + 16; ++l) adamw_element(p, g, m, v, l, c);
  for (; i < n; ++i) adamw_element(p, g, m, v, i, c);
}

ZL_CLONES double squares(const float* __restrict g, int64_t n) {
  // Eight float partial sums, then double: float accumulation over a block
  // of at most the grain below loses nothing that clipping can see.
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) part[l] += g[i + l] * g[i + l];
  double total = 0;
  for (float s : part) total += s;
  for (; i < n; ++i) total += static_cast<double>(g[i]) * g[i];
  return total;
}

}  // namespace

torch::optim::OptimizerParamState* param_state(torch::optim::Optimizer& optim, const torch::Tensor& p) {
  auto it = optim.state().find(key_of(optim, p));
  return it == optim.state().end() ? nullptr : it->second.get();
}

void set_param_state(torch::optim::Optimizer& optim, const torch::Tensor& p,
                     std::unique_ptr<torch::optim::OptimizerParamState> state) {
  optim.state()[key_of(optim, p)] = std::move(state);
}

namespace {

constexpr int64_t kGrain = 16384;  // floats a thread takes at least: below it, one thread does a parameter

bool fused_path(const torch::optim::AdamW& optim) {
  for (const auto& group : optim.param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const auto* s = static_cast<const torch::optim::AdamWParamState*>(
          param_state(const_cast<torch::optim::AdamW&>(optim), p));
      if (s && (!s->exp_avg().is_contiguous() || !s->exp_avg_sq().is_contiguous() ||
                s->exp_avg().scalar_type() != torch::kFloat || s->exp_avg_sq().scalar_type() != torch::kFloat))
        return false;
      if (p.scalar_type() != torch::kFloat || !p.device().is_cpu() || !p.is_contiguous() ||
          p.grad().scalar_type() != torch::kFloat || !p.grad().is_contiguous() || p.grad().is_sparse())
        return false;
    }
  }
  return true;
}

double grad_norm(const torch::optim::AdamW& optim) {
  double total = 0;
  for (const auto& group : optim.param_groups())
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const float* g = p.grad().data_ptr<float>();
      total += at::parallel_reduce(
          0, p.numel(), kGrain, 0.0, [&](int64_t b, int64_t e, double) { return squares(g + b, e - b); },
          std::plus<double>());
    }
  return std::sqrt(total);
}

}  // namespace

double clip_step(torch::optim::AdamW& optim, double max_norm) {
  if (!fused_path(optim)) {
    std::vector<torch::Tensor> params;
    for (const auto& group : optim.param_groups())
      params.insert(params.end(), group.params().begin(), group.params().end());
    const double norm = max_norm > 0 ? torch::nn::utils::clip_grad_norm_(params, max_norm) : std::nan("");
    optim.step();
    return norm;
  }
  torch::NoGradGuard no_grad;
  const double norm = grad_norm(optim);
  // clip_grad_norm_'s coefficient: max_norm / (norm + 1e-6), at most 1, in float.
  const float clip = max_norm > 0 ? std::min(1.0f, static_cast<float>(max_norm / (norm + 1e-6))) : 1.0f;
  for (auto& group : optim.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto* state = static_cast<torch::optim::AdamWParamState*>(param_state(optim, p));
      if (!state) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state = fresh.get();
        set_param_state(optim, p, std::move(fresh));
      }
      state->step(state->step() + 1);
      const double bias1 = 1 - std::pow(beta1, state->step()), bias2 = 1 - std::pow(beta2, state->step());
      const AdamWTerms c{clip,
                         static_cast<float>(1 - o.lr() * o.weight_decay()),
                         static_cast<float>(beta1),
                         static_cast<float>(1 - beta1),
                         static_cast<float>(beta2),
                         static_cast<float>(1 - beta2),
                         static_cast<float>(std::sqrt(bias2)),
                         static_cast<float>(o.eps()),
                         static_cast<float>(-o.lr() / bias1)};
      float* w = p.data_ptr<float>();
      const float* g = p.grad().data_ptr<float>();
      float* m = state->exp_avg().data_ptr<float>();
      float* v = state->exp_avg_sq().data_ptr<float>();
      at::parallel_for(0, p.numel(), kGrain,
                       [&](int64_t b, int64_t e) { adamw_elements(w + b, g + b, m + b, v + b, e - b, c); });
    }
  }
  return norm;
}

void drop_grads(torch::optim::Optimizer& optim) {
  for (auto& group : optim.param_groups())
    for (auto& p : group.params()) p.mutable_grad().reset();
}

}  // namespace zl
