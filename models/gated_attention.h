// Variant gated_attn's output gate (Qiu et al., 2025, §2.2) as an
// after-attention hook (models/attention_hook.h): y ← y ⊙ σ(x W_θᵀ (+ b)),
// query-dependent (from this token's own x, the block's normalised input,
// the one q, k, v come from) and head-specific, at position G1 (after SDPA,
// before the output projection). W_θ [G,C]: G = C, a gate per channel (the
// paper's best), or G = H, one per head.
//
// The gate's parameters stay where they were trained and are saved:
// AttentionImpl's gate_weight and gate_bias (blocks.l.attn.gate_weight in
// the state dict). The hook reads them from each layer's attention at every
// call; the fast step's copy (for_fast_step) packs them as panels
// (models/blas.h) when a DecodeStep packs the model. The transformer
// installs the hook on itself when cfg.attn_gate is set.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/attention.h"
#include "models/attention_hook.h"

namespace zl {

class GatedAttentionHook : public AttentionHook {
 public:
  // Each layer's attention, whose gate_weight (and gate_bias, if defined) it applies.
  GatedAttentionHook(std::vector<Attention> layers, bool headwise);
  std::string name() const override { return "gated attention"; }
  bool uses_output() const override { return true; }
  torch::Tensor after_attention(const torch::Tensor& y, const torch::Tensor& x, int64_t layer) const override;
  // Only on the copy for_fast_step() returns (the gates packed).
  void after_attention_rows(float* y, const float* x, int64_t M, int64_t C, int64_t layer) const override;
  std::shared_ptr<const AttentionHook> for_fast_step() const override;

 private:
  struct Packed {
    std::vector<float> panels;  // W_θ [G,C] as models/blas.h's panels
    std::vector<float> bias;    // [G], or empty
  };
  std::vector<Attention> layers_;
  bool headwise_;
  std::vector<Packed> packed_;  // per layer; empty but on the fast step's copy
};

}  // namespace zl
