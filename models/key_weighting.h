// Key weighting of variant fused (seed 002 §2.1, docs/articles.md part a):
//   w_ij = exp(-alpha * d_ij * (1 - I_ij)),  d_ij = i - j (query i, key j <= i)
// with I_ij in [0,1] the importance of key j as query i sees it. Our reading:
// I_ij uses only what exists before query i, so training (one causal pass)
// and incremental decoding (one token at a time, with rollback) compute the
// very same weights:
//   attn_mass   mean *unweighted* attention key j received from the queries
//               j..i-1 (H2O's accumulated attention, Zhang et al. 2023, as a
//               mean so it stays in [0,1]); per head. Unweighted, because the
//               weighted attention would make row i depend on rows < i
//               recursively, which a parallel training pass cannot compute.
//   hidden_norm squash(‖x_j‖ / sqrt(C)), x_j the block's residual input.
//   grad_norm   squash(‖∂ LSE(head(x_j)) / ∂x_j‖): the gradient magnitude of
//               the hidden state (the article's words) with respect to the
//               model's own output read through its final norm and LM head
//               (log-sum-exp of those logits); one extra head forward and
//               backward per layer and token — the cost is part of what we
//               measure.
// squash(n) = n / (1 + n). Importance is a statistic, not trained: detached.
// For attn_mass, d (1 - excl/d) = d - excl, so attention computes
// log w = alpha (excl - d) directly (models/attention.cpp).
// Two forms: `scale` multiplies key j by w (the literal reading: its score
// q·(w k) moves toward 0, i.e. toward uniform attention, not away), `bias`
// adds log w to the score (ALiBi-style, Press et al. 2022).
#pragma once
#include <torch/torch.h>

namespace zl {

// log w = -alpha * max(d, 0) * (1 - importance); broadcasts.
torch::Tensor log_key_weights(const torch::Tensor& distance, const torch::Tensor& importance, double alpha);
inline torch::Tensor key_weights(const torch::Tensor& distance, const torch::Tensor& importance, double alpha) {
  return log_key_weights(distance, importance, alpha).exp();
}

// attn_mass: importance from the attention a key received before the query,
// exclusive_mass[.., i, j] = sum_{m=j}^{i-1} A[m, j]  ->  mass / max(d, 1).
torch::Tensor attn_mass_importance(const torch::Tensor& exclusive_mass, const torch::Tensor& distance);

// n / (1 + n): a norm mapped into [0, 1).
torch::Tensor squash(const torch::Tensor& norm);

}  // namespace zl
