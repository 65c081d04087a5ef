// The decoder-only transformer every variant shares (docs/articles.md): token and
// learned position embeddings (none for alibi, whose positions are biases
// in attention, models/alibi.h), pre-norm blocks, final norm, and an LM head
// tied to the token embedding (as GPT-2 does). Positions enter only there,
// at the input: no rotary embedding inside attention (which is why
// latent_kv needs no decoupled RoPE key, models/latent_kv.h).
#pragma once
#include <torch/torch.h>

#include "models/attention_hook.h"
#include "models/block.h"
#include "models/fused_trace.h"
#include "models/kv_cache.h"
#include "models/logits_gate.h"

namespace zl {

struct TransformerImpl : torch::nn::Module {
  explicit TransformerImpl(const ModelConfig& cfg);

  // Training / scoring: tokens [B,T] -> logits [B,T,V], causal over T.
  torch::Tensor forward(const torch::Tensor& tokens);
  // Incremental: appends tokens [B,T] to each sequence of the cache (at its
  // own length), advances the lengths, returns logits [B,T,V]. `rows`
  // (optional, one count per sequence): only the first rows[b] tokens of
  // sequence b are real, the rest right padding, and sequence b's length
  // grows by rows[b]. A plain cache writes the padding too (past the
  // length, never visible, overwritten by the next tokens); an evicting one
  // (models/eviction.h) must not, or it would evict real tokens for it.
  torch::Tensor forward(const torch::Tensor& tokens, KVCache& cache, const std::vector<int64_t>& rows = {});
  // Next-token loss (mean cross-entropy) of tokens [B,T] against targets [B,T].
  torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& targets);
  // What the trainer adds to the loss beyond cross-entropy: fused value
  // distillation's ortho_weight * sum over layers of ‖PPᵀ − I‖²_F.
  // Undefined when there is nothing to add.
  torch::Tensor regularizer();
  // forward(tokens) that also fills the fused monitoring taps.
  torch::Tensor forward_traced(const torch::Tensor& tokens, FusedTrace& trace);

  KVCache make_cache(int64_t batch, int64_t capacity = 0, const EvictionOptions& eviction = {});

  // The correction module (sfcl/oet; models/correction.h). Decode-time
  // switches for every block: the module's own c, identity, or given
  // coefficients per layer (each [B,T,C] or [B,1,C]). has_correction() is
  // false for the variants without a module, where these throw.
  bool has_correction() const { return cfg.correction_hidden > 0; }
  void set_correction_mode(CorrectionMode mode);
  void set_correction_override(const std::vector<torch::Tensor>& per_layer);
  // Teacher-forced: tokens [B,T] -> the module's c of every layer, each [B,T,C]
  // (the module runs whatever the mode; the mode is restored).
  std::vector<torch::Tensor> corrections(const torch::Tensor& tokens);
  int64_t parameter_count(bool include_embeddings = true) const;

  ModelConfig cfg;
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  LogitsGate gate{nullptr};  // fused logits gate (null when off)

  // When keep_hidden is set, every forward keeps the final-normed hidden
  // states it feeds the LM head in last_hidden ([B,T,C]): contrastive search
  // compares candidates by them (sim/stages/contrastive_stage.h).
  bool keep_hidden = false;
  torch::Tensor last_hidden;
  // Attention hooks (models/attention_hook.h): every layer of both paths
  // runs them, in the order installed (a DecodeStep reads them when it packs
  // the model). Variant alibi's is installed by the constructor (cfg.alibi).
  void add_attention_hook(std::shared_ptr<const AttentionHook> hook);
  const AttentionHooks& attention_hooks() const { return attention_hooks_; }
  // fused hidden_norm / grad_norm: the block input [B,T,C] -> each token's
  // importance [B,T] in [0,1), detached (models/key_weighting.h).
  torch::Tensor token_importance(const torch::Tensor& x);

 private:
  torch::Tensor forward_full(const torch::Tensor& tokens, FusedTrace* trace);
  // [B,T,C] -> [B,T,V]; gated when the fused gate is on.
  torch::Tensor head(const torch::Tensor& x, const torch::Tensor& gate_features = {}, FusedTrace* trace = nullptr);
  torch::Tensor causal_bias(int64_t T, const torch::Tensor& like);
  torch::Tensor causal_bias_cache_;
  AttentionHooks attention_hooks_;
};
TORCH_MODULE(Transformer);

}  // namespace zl
