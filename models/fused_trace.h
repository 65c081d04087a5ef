// Monitoring taps of variant fused (seed 002 §4.2): what the stage reads from
// a full forward over validation windows to compute the monitoring metrics.
// Filled only when a caller asks (TransformerImpl::forward_traced).
#pragma once
#include <torch/torch.h>

#include <vector>

namespace zl {

struct FusedTrace {
  std::vector<torch::Tensor> key_weights;  // per layer: w of every visible (query, key) pair, flattened
  std::vector<torch::Tensor> distilled;    // per layer: [B,H,T,r] values as the cache stores them (z = P v)
  torch::Tensor logits_ungated;            // [B,T,V] before the logits gate
  torch::Tensor gate_candidates;           // [B,T,k] int64: the candidates the gate scaled
  torch::Tensor gate_log_factors;          // [B,T,k] log of their factors, in [log 1e-6, 0]
};

}  // namespace zl
