#include "models/correction.h"

namespace zl {

CorrectionImpl::CorrectionImpl(int64_t dim, int64_t hidden, bool centered) : scale(centered ? 2.0 : 1.0) {
  fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(dim, hidden)));
  out = register_module("out", torch::nn::Linear(torch::nn::LinearOptions(hidden, dim)));
  // Zero biases (the transformer's init draws the weights): at init c is 1
  // up to the small N(0, 0.02) weights, so training starts from the baseline.
  torch::NoGradGuard no_grad;
  fc->bias.zero_();
  out->bias.zero_();
}

torch::Tensor CorrectionImpl::forward(const torch::Tensor& u) {
  auto c = torch::sigmoid(out(torch::gelu(fc(u))));  // [B,T,C]
  return scale == 1.0 ? c : c * scale;
}

double CorrectionImpl::flops(int64_t dim, int64_t hidden) {
  const double C = dim, Hc = hidden;
  return 2 * C * Hc + 2 * Hc * C  // W1, W2
         + Hc + C                 // biases
         + 8 * Hc + 4 * C         // gelu, sigmoid (a few FLOPs each, tanh/exp counted as ~4)
         + C;                     // u * c
}

}  // namespace zl
