// The shape of the shared decoder-only transformer (docs/articles.md). Filled once from
// the run config at the boundary; modules read these typed fields, never an
// option by name.
#pragma once
#include <cstdint>

#include "models/fused_options.h"

namespace zl {

struct ModelConfig {
  int64_t vocab = 257;      // V: set from the tokenizer (257 for bytes + eos)
  int64_t layers = 4;       // L: number of pre-norm blocks
  int64_t heads = 4;        // H: attention heads; must divide dim
  int64_t dim = 128;        // C: residual width
  int64_t context = 128;    // T_max: learned positions, and the KV cache capacity
  int64_t mlp_ratio = 4;    // MLP hidden width = mlp_ratio * dim
  double dropout = 0.0;     // on attention output and MLP output (training only)
  FusedOptions fused;       // variant fused: all off by default
  // sfcl / oet (seed 000 §2.1): the in-layer correction module between
  // attention and the MLP. Filled from sfcl.* at the boundary; the factory
  // sets 0 (no module) for the variants without one.
  int64_t correction_hidden = 0;    // its hidden width; 0 = no module
  bool correction_centered = true;  // c = 2·sigmoid(z) (zero module = identity) or sigmoid(z) (docs/articles.md)
  // alibi (Press et al., ICLR 2022; models/alibi.h): no position embeddings;
  // each head adds −m_h·(i − j) to the score of query i on key j. Filled
  // from alibi.* at the boundary; false for every other variant.
  bool alibi = false;
  double alibi_max_bias = 8;        // head h of n (1-based) gets m_h = 2^(−max_bias·h/n) (§3: 8)
  // gated_attn (Qiu et al., 2025; models/attention.h): y ← y ⊙ σ(x W_θ (+ b))
  // after SDPA, before the output projection, x the block's normalised input.
  bool attn_gate = false;
  bool attn_gate_headwise = false;  // one gate per head (C→H) instead of per element (C→C, the paper's best)
  bool attn_gate_bias = false;      // a bias b in the gate (the paper's σ(x W_θ) has none)
  // latent_kv (issue 13 §3; models/latent_kv.h): keys and values up-projected
  // per head from one latent c of latent_rank values per token and layer,
  // the only thing the KV cache holds. 0 = off. Mode trained (MLA) builds it
  // in; mode svd trains the baseline's network and sets it when it factorises
  // the trained K/V projections (fit_latent_svd), after loading.
  int64_t latent_rank = 0;          // r
  bool latent_norm = false;         // trained: RMSNorm on c (DeepSeek-V2 §3.1.2 adds one after each latent)

  int64_t head_dim() const { return dim / heads; }  // D
};

}  // namespace zl
