#include "models/sampling.h"

#include <ATen/CPUGeneratorImpl.h>

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

torch::Tensor sample_next(const torch::Tensor& logits, const SamplingOptions& opt, at::Generator& gen) {
  if (opt.temperature <= 0) return logits.argmax(-1);
  return draw(sampling_probs(logits, opt), gen);
}

at::Generator make_generator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

}  // namespace zl
