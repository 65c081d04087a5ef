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

#include <vector>

#include "models/model_config.h"

namespace zl {

struct LayerCache {
  torch::Tensor k, v;  // [B, H, capacity, D]
};

struct KVCache {
  std::vector<LayerCache> layers;
  torch::Tensor lengths;  // [B] int64: tokens held per sequence
  int64_t capacity = 0;

  static KVCache allocate(const ModelConfig& cfg, int64_t batch, int64_t capacity, const torch::TensorOptions& opts);
  int64_t batch() const { return lengths.size(0); }
  // Rolls sequence b back to `length` tokens (length <= its current length).
  void truncate(int64_t b, int64_t length);
  // Bytes of K and V held per cached token, over all layers.
  int64_t bytes_per_token() const;
};

// What every layer needs to attend for one forward call: built once per call.
struct AttentionContext {
  torch::Tensor bias;       // additive mask: [T, T] (training) or [B, 1, T, L] (cached)
  torch::Tensor positions;  // [B, T] int64: absolute position of each new token (cached path)
  int64_t span = 0;         // L: cached keys visible after this call's writes
};

}  // namespace zl
