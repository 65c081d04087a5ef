// Causal multi-head self-attention, with the two parts of variant fused that
// live inside attention (seed 002 §2.1): key weighting (models/key_weighting.h)
// and value distillation (values stored as z = P v, r per head, read back
// through Pᵀ). With both off it is the plain baseline attention. The
// model's attention hooks (models/attention_hook.h; ctx.hooks) adjust the
// scores before the softmax and the output before `proj`: variant alibi's
// biases are one (models/alibi.h), variant gated_attn's output gate another
// (models/gated_attention.h; its parameters are `gate_*` below). Variant
// latent_kv's joint key-value latent is `kv_up` below (models/latent_kv.h).
#pragma once
#include <torch/torch.h>

#include "models/kv_cache.h"
#include "models/model_config.h"

namespace zl {

struct AttentionImpl : torch::nn::Module {
  explicit AttentionImpl(const ModelConfig& cfg);

  // x [B,T,C] -> [B,T,C]. Without a cache: full causal attention over x
  // (training). With one: x holds the new tokens, whose keys and values are
  // written at ctx.positions before attending over the first ctx.span slots.
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx, LayerCache* cache = nullptr);

  // Value distillation. P [r,D]: with the penalty, a free parameter trained
  // with ‖PPᵀ − I‖²_F; hard, Qᵀ of the reduced QR factorisation of a free
  // [D,r] matrix, whose rows are orthonormal by construction.
  torch::Tensor value_projection() const;
  torch::Tensor ortho_penalty() const;  // ‖PPᵀ − I‖²_F (a 0-dim tensor)
  void reset_value_projection();        // orthonormal rows (P = I when r = D)

  ModelConfig cfg;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::Tensor value_proj;  // [r,D] (penalty) or [D,r] (hard); undefined when distillation is off
  // gated_attn (Qiu et al., 2025, §2.2): W_θ [G,C] with G = C (elementwise,
  // each head its own gates: the paper's best, position G1) or G = H (one gate
  // per head); y ← y ⊙ σ(x W_θᵀ (+ b)) on the attention output, after SDPA and
  // before `proj`, x the block's normalised input (the one q, k, v come from);
  // applied by the model's GatedAttentionHook (models/gated_attention.h).
  // Plain parameters registered as zeros, not a Linear, whose constructor
  // would draw from the generator: the transformer draws them after the
  // shared weights (paired seeds, docs/results_schema.md). Undefined for the other variants.
  torch::Tensor gate_weight;  // [G,C]
  torch::Tensor gate_bias;    // [G], only with attn_gate_bias
  // latent_kv (models/latent_kv.h), with cfg.latent_rank = r > 0: qkv then
  // holds W^Q [C,C] over W^DKV [r,C] ([C+r,C]: one product gives q and the
  // latent c), and kv_up W^UK over W^UV ([2C,r]: keys and values from c, head
  // h's rows h·D..(h+1)·D of each). Undefined for the other variants.
  torch::Tensor kv_up;        // [2C,r]
  torch::Tensor latent_gain;  // [r], the RMSNorm gain on c (latent.norm); undefined without it

 private:
  // An evicting cache (models/eviction.h) when a token of this call evicts
  // another: each sequence's tokens in order, each written after the held
  // ones, attending over them and itself, then evicting one: [B,H,T,D].
  torch::Tensor forward_evicting(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const AttentionContext& ctx, LayerCache* cache);
  // latent_kv on the cache: writes this call's latents c [B,T,r] at
  // ctx.positions and attends with W^UK and W^UV absorbed per head; q
  // [B,H,T,D] -> y [B,H,T,D].
  torch::Tensor attend_latent(const torch::Tensor& q, const torch::Tensor& c, const AttentionContext& ctx,
                              LayerCache& cache);
  torch::Tensor forward_fused(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const AttentionContext& ctx, LayerCache* cache);
};
TORCH_MODULE(Attention);

}  // namespace zl
