#include "models/key_weighting.h"

namespace zl {

torch::Tensor log_key_weights(const torch::Tensor& distance, const torch::Tensor& importance, double alpha) {
  // Future keys (d < 0) are masked by the caller; clamping keeps their weight
  // finite so that 0 * w never makes a NaN under the mask.
  return -alpha * distance.clamp_min(0) * (1.0 - importance);
}

torch::Tensor attn_mass_importance(const torch::Tensor& exclusive_mass, const torch::Tensor& distance) {
  return exclusive_mass / distance.clamp_min(1);
}

torch::Tensor squash(const torch::Tensor& norm) { return norm / (1.0 + norm); }

}  // namespace zl
