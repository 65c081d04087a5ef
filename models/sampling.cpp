#include "models/sampling.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

namespace zl {

torch::Tensor sampling_probs(const torch::Tensor& logits, const SamplingOptions& opt) {
  auto scaled = logits.to(torch::kFloat) / std::max(opt.temperature, 1e-6);  // [B,V]
  const int64_t V = scaled.size(-1);
  if (opt.top_k > 0 && opt.top_k < V) {
    auto kth = std::get<0>(scaled.topk(opt.top_k, -1)).narrow(-1, opt.top_k - 1, 1);  // [B,1]
    scaled = scaled.masked_fill(scaled < kth, -std::numeric_limits<float>::infinity());
  }
  auto probs = torch::softmax(scaled, -1);
  if (opt.top_p < 1.0) {
    // Keep the smallest prefix of the sorted distribution whose mass reaches
    // top_p (the token that crosses the line is kept, as in Holtzman et al.).
    auto sorted = probs.sort(-1, /*descending=*/true);
    auto sp = std::get<0>(sorted), idx = std::get<1>(sorted);
    auto before = sp.cumsum(-1) - sp;  // mass strictly before each token
    auto drop_sorted = before >= opt.top_p;
    auto drop = torch::zeros_like(drop_sorted).scatter(-1, idx, drop_sorted);
    probs = probs.masked_fill(drop, 0.0);
    probs = probs / probs.sum(-1, true);
  }
  return probs;
}

torch::Tensor draw(const torch::Tensor& probs, at::Generator& gen) {
  const int64_t B = probs.size(0), V = probs.size(1);
  auto u = torch::rand({B, 1}, gen, torch::TensorOptions().dtype(torch::kFloat)).to(probs.device());
  // Inverse CDF: the first index whose cumulative mass exceeds u.
  auto cdf = probs.cumsum(-1);
  return (cdf <= u).sum(-1).clamp_max(V - 1);
}

namespace {

// One row of sample_next on the CPU: the arithmetic of sampling_probs + draw
// (same float rounding points, cumulative sums accumulated in double as
// ATen's CPU cumsum does) in plain loops over a reused buffer. A decode step
// at batch 8 takes well under a millisecond, and the eight dispatched
// operators of the tensor form, each allocating a [B,V] result, were a
// measurable share of it.
int64_t sample_row(const float* logits, int64_t V, const SamplingOptions& opt, float u, std::vector<float>& p,
                   std::vector<int32_t>& order) {
  if (opt.temperature <= 0) return std::max_element(logits, logits + V) - logits;  // first maximum, as argmax
  const float t = static_cast<float>(std::max(opt.temperature, 1e-6));
  p.resize(V);
  for (int64_t j = 0; j < V; ++j) p[j] = logits[j] / t;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  if (opt.top_k > 0 && opt.top_k < V) {
    std::vector<float> copy(p.begin(), p.end());
    std::nth_element(copy.begin(), copy.begin() + (opt.top_k - 1), copy.end(), std::greater<float>());
    const float kth = copy[opt.top_k - 1];
    for (auto& x : p)
      if (x < kth) x = neg_inf;
  }
  const float m = *std::max_element(p.begin(), p.end());
  float sum = 0;
  for (auto& x : p) sum += (x = std::exp(x - m));
  const float inv = 1.0f / sum;
  for (auto& x : p) x *= inv;
  if (opt.top_p < 1.0) {
    order.resize(V);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
    const float top_p = static_cast<float>(opt.top_p);
    double cum = 0;
    float kept = 0;
    for (int32_t j : order) {
      const float before = static_cast<float>(cum + p[j]) - p[j];  // mass strictly before, as cumsum - sp
      cum += p[j];
      if (before >= top_p)
        p[j] = 0;
      else
        kept += p[j];
    }
    for (auto& x : p) x /= kept;
  }
  // Inverse CDF: the number of cumulative masses <= u, clamped to the last index.
  double cum = 0;
  int64_t below = 0;
  for (int64_t j = 0; j < V; ++j) {
    cum += p[j];
    below += static_cast<float>(cum) <= u;
  }
  return std::min(below, V - 1);
}

}  // namespace

torch::Tensor sample_next(const torch::Tensor& logits, const SamplingOptions& opt, at::Generator& gen) {
  if (!logits.device().is_cpu() || logits.scalar_type() != torch::kFloat || logits.dim() != 2) {
    if (opt.temperature <= 0) return logits.argmax(-1);
    return draw(sampling_probs(logits, opt), gen);
  }
  auto x = logits.contiguous();
  const int64_t B = x.size(0), V = x.size(1);
  auto out = torch::empty({B}, torch::kLong);
  torch::Tensor u;
  if (opt.temperature > 0) u = torch::rand({B, 1}, gen, torch::TensorOptions().dtype(torch::kFloat));  // as draw()
  std::vector<float> p;
  std::vector<int32_t> order;
  for (int64_t b = 0; b < B; ++b)
    out.data_ptr<int64_t>()[b] =
        sample_row(x.data_ptr<float>() + b * V, V, opt, opt.temperature > 0 ? u.data_ptr<float>()[b] : 0.0f, p, order);
  return out;
}

at::Generator make_generator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

}  // namespace zl
