// The incremental KV cache. Dimension letters (used in shape comments across
// models/): B batch, T new tokens, L cached length, H heads, D head width,
// C model width (H*D), V vocabulary.
//
// Each sequence of a batch has its own length, so that a sequence can be
// rolled back (the sfvl re-sampling decoder drops its last tokens) without
// touching its neighbours: rolling back is lowering `lengths[b]`; the stale
// entries past it are masked out and overwritten by the next tokens.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "models/model_config.h"

namespace zl {

struct FusedTrace;

struct LayerCache {
  torch::Tensor k, v;  // [B, H, capacity, D]; v is [B, H, capacity, r] with fused value distillation
  // latent_kv (models/latent_kv.h): [B, capacity, r], the joint latent c of
  // each cached token, shared by every head; k and v are then undefined.
  torch::Tensor latent;
  // fused key weighting, per cached token (undefined when off). Both are
  // indexed by position, so rolling back `lengths` rolls them back too:
  // slot p is rewritten whenever position p is fed again.
  torch::Tensor mass;        // attn_mass: [B, H, capacity, capacity]; row p = sum over queries m <= p of
                             // their unweighted attention on each key (a running column sum per query)
  torch::Tensor importance;  // hidden_norm / grad_norm: [B, capacity], the importance of each token
};

struct KVCache {
  std::vector<LayerCache> layers;
  torch::Tensor lengths;  // [B] int64: tokens held per sequence
  int64_t capacity = 0;

  static KVCache allocate(const ModelConfig& cfg, int64_t batch, int64_t capacity, const torch::TensorOptions& opts);
  int64_t batch() const { return lengths.size(0); }
  // Rolls sequence b back to `length` tokens (length <= its current length).
  void truncate(int64_t b, int64_t length);
  // Bytes held per cached token over all layers, measured from the tensors:
  // K and V (r values with fused value distillation), latent_kv's latent, and
  // fused per-token state. `parts` (optional) receives them apart: "k", "v",
  // "latent", "fused_state".
  int64_t bytes_per_token(std::map<std::string, int64_t>* parts = nullptr) const;
};

// What every layer needs to attend for one forward call: built once per call.
struct AttentionContext {
  torch::Tensor bias;       // additive mask: [T, T] (training) or [B, 1, T, L] (cached)
  torch::Tensor positions;  // [B, T] int64: absolute position of each new token (cached path)
  int64_t span = 0;         // L: cached keys visible after this call's writes
  // Variant fused, set per layer by the transformer:
  torch::Tensor importance;                 // [B,T] this layer's token importance (hidden_norm, grad_norm)
  torch::Tensor* gate_features = nullptr;   // out, last layer only: [B,T,H*keys] query-key cosines for the gate
  FusedTrace* trace = nullptr;              // monitoring taps (validation only)
};

}  // namespace zl
