// Typed options of variant `fused` (seed 002 §2.1, docs/articles.md), filled once from
// the run config (sim/stages/fused_stage.cpp: fused_options) and held by ModelConfig.
// All-off defaults: a ModelConfig with default FusedOptions is the baseline.
#pragma once
#include <cstdint>

namespace zl {

struct FusedOptions {
  // (a) key weighting: w = exp(-alpha * distance * (1 - importance)).
  enum class KeyWeighting { Off, Scale, Bias };  // Scale: k_j *= w (literal); Bias: score += log w (ALiBi-style)
  enum class Importance { AttnMass, GradNorm, HiddenNorm };
  KeyWeighting key_weighting = KeyWeighting::Off;
  Importance importance = Importance::AttnMass;
  double alpha = 0.05;

  // (b) value distillation: the cache holds z = P v (r values per head), read back through Pᵀ.
  int64_t value_rank = 0;         // r; 0 = off
  bool hard_orthogonal = false;   // P = Qᵀ of a QR factorisation (rows exactly orthonormal) instead of a penalty
  double ortho_weight = 0.01;     // weight of ‖PPᵀ − I‖²_F in the training loss (penalty form only)

  // (c) logits gate over the top-k candidates by logit.
  bool gate = false;
  int64_t gate_top_k = 5;         // candidates the gate scales
  int64_t gate_hidden = 32;       // width of the gate's hidden layer
  int64_t gate_keys = 3;          // keys per head whose cosine with the query feed the gate (the article's 3)

  bool key_weighting_on() const { return key_weighting != KeyWeighting::Off; }
  bool any() const { return key_weighting_on() || value_rank > 0 || gate; }
};

}  // namespace zl
