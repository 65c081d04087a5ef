#include "models/verifier.h"

#include <cmath>

namespace zl {

int64_t VerifierConfig::parameter_count() const {
  const int64_t E = width;
  return vocab * E + 2 * (3 * E * E + E) + (2 * E + 1);  // embedding, two convs, head
}

double VerifierConfig::flops_per_check() const {
  const double E = static_cast<double>(width);
  return 2.0 * (2 * window * 3 * E * E + 2 * E);
}

VerifierConfig VerifierConfig::sized_for(int64_t vocab, int64_t window, int64_t target_params) {
  VerifierConfig best{vocab, window, 4};
  for (int64_t e = 4; e <= 1024; ++e) {
    VerifierConfig c{vocab, window, e};
    if (std::llabs(c.parameter_count() - target_params) < std::llabs(best.parameter_count() - target_params)) best = c;
  }
  return best;
}

VerifierImpl::VerifierImpl(const VerifierConfig& c) : cfg(c) {
  const int64_t E = c.width;
  embed = register_module("embed", torch::nn::Embedding(c.vocab, E));
  conv1 = register_module("conv1", torch::nn::Conv1d(torch::nn::Conv1dOptions(E, E, 3).padding(1)));
  conv2 = register_module("conv2", torch::nn::Conv1d(torch::nn::Conv1dOptions(E, E, 3).padding(1)));
  out = register_module("out", torch::nn::Linear(2 * E, 1));
}

torch::Tensor VerifierImpl::forward(const torch::Tensor& tokens) {
  auto x = embed(tokens).transpose(1, 2);                   // [N,E,W]
  x = torch::gelu(conv1(x));                                // [N,E,W]
  x = torch::gelu(conv2(x));                                // [N,E,W]
  auto pooled = torch::cat({x.mean(-1), std::get<0>(x.max(-1))}, -1);  // [N,2E]
  return out(pooled).squeeze(-1);                           // [N]
}

}  // namespace zl
