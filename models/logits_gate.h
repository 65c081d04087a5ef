// The logits gate of variant fused (seed 002 §2.1, docs/articles.md part c): two
// linear layers with a GELU between them read the cosine similarities between
// the current query and the keys it attends to most (the article's "3
// highest-weighted keys"; our reading: the 3 largest attention weights of each
// head of the last layer, after key weighting when that is on, sorted, so the
// gate also works with key weighting off), and give each of the top-k
// candidate tokens (by logit, rank by rank) a factor in (0,1], floored at
// 1e-6, that multiplies its probability: log factor is added to its logit.
// A floored factor costs a suppressed true token -ln(1e-6) = 13.8 nats.
// Trained jointly with the LM loss (it is part of the model's forward).
#pragma once
#include <torch/torch.h>

#include "models/fused_trace.h"

namespace zl {

struct LogitsGateImpl : torch::nn::Module {
  static constexpr double kFloor = 1e-6;

  // features: gate inputs per position (heads * keys cosines); top_k candidates.
  LogitsGateImpl(int64_t features, int64_t hidden, int64_t top_k);

  // features [B,T,F] -> log factors [B,T,top_k], in [log kFloor, 0].
  torch::Tensor log_factors(const torch::Tensor& features);
  // logits [B,T,V], features [B,T,F] -> gated logits [B,T,V]: the k-th
  // largest logit (k < min(top_k, V)) gets the k-th log factor added.
  torch::Tensor forward(const torch::Tensor& logits, const torch::Tensor& features, FusedTrace* trace = nullptr);

  // Starts near the identity (factors ≈ 0.98): the article gives no prior, and
  // a gate that starts by suppressing would start by costing nats.
  void reset();

  int64_t top_k;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(LogitsGate);

// The gate's work on the hand-written decode step (models/decode_step_fused.cpp),
// per row, with no ATen call (a team member runs them); benchmarked part by
// part in bench/decode_kernels.cpp (BM_GateParts).
//  - gate_cosines: one head's inputs for query q [D] over its n visible keys
//    K [n×D] with attention weights w [n]: the cosines of q with the keys of
//    the `keys` largest weights, largest first, 0 where fewer are visible or
//    a weight is 0 (as the reference's top-k over masked keys gives). `top`
//    is scratch for `keys` indices.
//  - gate_candidates: log factors lf [k] (log σ(o), floored; o the second
//    layer's outputs) added to the k largest of logits [V], rank by rank.
void gate_cosines(const float* q, const float* K, const float* w, int64_t n, int64_t D, int64_t keys, int64_t* top,
                  float* out);
void gate_candidates(float* logits, int64_t V, const float* o, int64_t k, int64_t* top);

}  // namespace zl
