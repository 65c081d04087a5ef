#include "models/logits_gate.h"

#include <cmath>

namespace zl {

LogitsGateImpl::LogitsGateImpl(int64_t features, int64_t hidden, int64_t k) : top_k(k) {
  fc1 = register_module("fc1", torch::nn::Linear(features, hidden));
  fc2 = register_module("fc2", torch::nn::Linear(hidden, k));
  reset();
}

void LogitsGateImpl::reset() {
  torch::NoGradGuard no_grad;
  fc1->weight.normal_(0.0, 0.5);  // inputs are cosines in [-1,1]
  fc1->bias.zero_();
  fc2->weight.zero_();
  fc2->bias.fill_(4.0);  // sigmoid(4) ≈ 0.982
}

torch::Tensor LogitsGateImpl::log_factors(const torch::Tensor& features) {
  auto out = fc2(torch::gelu(fc1(features)));  // [B,T,K]
  // factor = max(sigmoid(out), floor), in log space for stability.
  return torch::log_sigmoid(out).clamp_min(std::log(kFloor));
}

torch::Tensor LogitsGateImpl::forward(const torch::Tensor& logits, const torch::Tensor& features, FusedTrace* trace) {
  const int64_t k = std::min<int64_t>(top_k, logits.size(-1));
  auto candidates = std::get<1>(logits.detach().topk(k, -1));  // [B,T,k], by logit, descending
  auto lf = log_factors(features.to(logits.dtype())).narrow(-1, 0, k).to(logits.dtype());  // [B,T,k]
  if (trace) {
    trace->logits_ungated = logits.detach();
    trace->gate_candidates = candidates;
    trace->gate_log_factors = lf.detach();
  }
  return logits.scatter_add(-1, candidates, lf);
}

}  // namespace zl
