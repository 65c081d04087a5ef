#include "models/logits_gate.h"

#include <algorithm>
#include <cmath>

#include "models/blas.h"

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

namespace {

// ‖x‖ by the scores' kernel: a scalar sum is a chain of D dependent adds.
float norm(const float* x, int64_t D) {
  float sq = 0;
  scaled_scores(x, x, 1, D, 1.0f, &sq);
  return std::sqrt(sq);
}

// log σ(o), floored at the gate's floor (LogitsGateImpl::log_factors), stably on both sides.
float log_factor(float o) {
  const float ls = o >= 0 ? -std::log1p(std::exp(-o)) : o - std::log1p(std::exp(o));
  return std::max(ls, static_cast<float>(std::log(LogitsGateImpl::kFloor)));
}

}  // namespace

void gate_cosines(const float* q, const float* K, const float* w, int64_t n, int64_t D, int64_t keys, int64_t* top,
                  float* out) {
  const int64_t found = top_k(w, n, keys, top);
  const float qn = norm(q, D);
  for (int64_t t = 0; t < keys; ++t) {
    const int64_t j = t < found ? top[t] : -1;
    if (j < 0 || !(w[j] > 0)) {
      out[t] = 0;
      continue;
    }
    // q·k afresh (3 dot products of D), so that the step need not keep the
    // raw scores beside the weights for the last layer.
    const float* k = K + j * D;
    float dot = 0;
    scaled_scores(q, k, 1, D, 1.0f, &dot);
    out[t] = dot / std::max(qn * norm(k, D), 1e-12f);
  }
}

void gate_candidates(float* logits, int64_t V, const float* o, int64_t k, int64_t* top) {
  top_k(logits, V, k, top);  // candidate i, the i-th largest logit, gets log factor i
  for (int64_t i = 0; i < k; ++i) logits[top[i]] += log_factor(o[i]);
}

}  // namespace zl
