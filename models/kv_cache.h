// The incremental KV cache. Dimension letters (used in shape comments across
// models/): B batch, T new tokens, L cached length, H heads, D head width,
// C model width (H*D), V vocabulary.
//
// Each sequence of a batch has its own length, so that a sequence can be
// rolled back (the sfvl re-sampling decoder drops its last tokens) without
// touching its neighbours: rolling back is lowering `lengths[b]`; the stale
// entries past it are masked out and overwritten by the next tokens.
//
// An evicting cache (streaming, h2o; models/eviction.h) keeps at most a
// budget of tokens per sequence: `lengths` still counts the tokens fed (the
// next token's position in the text), `held` those kept, which fill slots
// 0..held-1 in an order of their own (see `order`).
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "models/attention_hook.h"
#include "models/eviction.h"
#include "models/model_config.h"

namespace zl {

struct FusedTrace;

struct LayerCache {
  torch::Tensor k, v;  // [B, H, capacity, D]; v is [B, H, capacity, r] with fused value distillation
  // latent_kv (models/latent_kv.h): [B, capacity, r], the joint latent c of
  // each cached token, shared by every head; k and v are then undefined.
  torch::Tensor latent;
  // fused key weighting (undefined when off). `importance` is indexed by
  // position, so rolling back `lengths` rolls it back too: slot p is
  // rewritten whenever position p is fed again.
  torch::Tensor importance;  // hidden_norm / grad_norm: [B, capacity], the importance of each token
  // attn_mass: O(capacity) per sequence and head (issue 29 item 6; a
  // [B,H,cap,cap] table of running sums per query before). The exclusive
  // mass a query at position p needs, Σ_{m<p} A[m,j] (models/key_weighting.h),
  // is the column sum of the unweighted attention A of the queries before
  // it, so one running column sum per head suffices while tokens are only
  // appended. A rollback takes the dropped queries' rows back out: each
  // position's query is kept, and its row is recomputed from it and the keys
  // it saw, which are still in the cache (see sync_mass).
  torch::Tensor mass;       // [B, H, capacity] float: Σ over the first mass_rows[b] queries of A[m, j]
  torch::Tensor queries;    // [B, H, capacity, D] float: the query of each position, per head
  torch::Tensor mass_rows;  // [B] int64, always on the CPU: queries summed into `mass` (0 past them)

  // Brings sequence b's column sums to its first `rows` queries: subtracts
  // the rows of the queries at rows.. (or rebuilds from none when that is
  // less work) or adds those of queries fed but not summed. Exact up to
  // float rounding: each row is recomputed as it was first computed
  // (softmax(q·k / sqrt(D)) over keys j <= m, the fast step's kernels on the
  // CPU). Both paths call it for a sequence before writing its keys at
  // position `rows` (a row's keys must be the ones it saw), so a rollback
  // is taken out lazily by the next call, and a `lengths` set directly
  // (a right-padded prefill's, a finished sequence's) is covered the same
  // way. No ATen call on the CPU: a decode step's team members run it.
  void sync_mass(int64_t b, int64_t rows);
  // Evicting caches only (undefined otherwise), per head since each head
  // evicts on its own (models/eviction.h):
  torch::Tensor order;  // [B, H, capacity] int32: the text position of the token in each slot
  torch::Tensor score;  // h2o: [B, H, capacity] float, each held token's accumulated attention
};

struct KVCache {
  std::vector<LayerCache> layers;
  torch::Tensor lengths;  // [B] int64: tokens fed per sequence (all held, unless the cache evicts)
  int64_t capacity = 0;
  EvictionOptions eviction;  // off: every token is kept
  torch::Tensor held;        // evicting caches: [B] int64, tokens held per sequence (<= eviction.budget)

  // With eviction on, the tensors have min(capacity, budget + 1) slots: the
  // budget and the token that attends before one is evicted.
  static KVCache allocate(const ModelConfig& cfg, int64_t batch, int64_t capacity, const torch::TensorOptions& opts,
                          const EvictionOptions& eviction = {});
  int64_t batch() const { return lengths.size(0); }
  bool evicting() const { return eviction.on(); }
  // Rolls sequence b back to `length` tokens (length <= its current length).
  // An evicting cache can roll back only while it has evicted nothing.
  // fused attn_mass's column sums follow at the next forward (LayerCache::
  // sync_mass), or now with sync_mass() below.
  void truncate(int64_t b, int64_t length);
  // Every layer's attn_mass sums brought to each sequence's length (for
  // reading them; the forwards do it themselves). Nothing without attn_mass.
  void sync_mass();
  // Bytes held per cached token over all layers, measured from the tensors:
  // K and V (r values with fused value distillation), latent_kv's latent,
  // fused per-token state (attn_mass: H sums and H·D query values), and an
  // evicting cache's per-token bookkeeping
  // (order, h2o's scores). `parts` (optional) receives them apart: "k", "v",
  // "latent", "fused_state", "eviction_state".
  int64_t bytes_per_token(std::map<std::string, int64_t>* parts = nullptr) const;
};

// What every layer needs to attend for one forward call: built once per call.
struct AttentionContext {
  torch::Tensor bias;       // additive mask: [T, T] (training) or [B, 1, T, L] (cached)
  torch::Tensor positions;  // [B, T] int64: absolute position of each new token (cached path)
  int64_t span = 0;         // L: cached keys visible after this call's writes
  // Evicting caches (models/eviction.h); eviction null otherwise. positions
  // above are then the slots written when nothing is evicted in this call.
  const EvictionOptions* eviction = nullptr;
  torch::Tensor text_positions;  // [B,T] int64: each new token's position in the text (its `order`)
  torch::Tensor held;            // [B] int64: tokens held before this call
  torch::Tensor rows;            // [B] int64: tokens of this call per sequence (the rest of T is padding)
  bool evict_rows = false;       // a token of this call evicts another: attention goes row by row
  // Variant fused, set per layer by the transformer:
  torch::Tensor importance;                 // [B,T] this layer's token importance (hidden_norm, grad_norm)
  torch::Tensor* gate_features = nullptr;   // out, last layer only: [B,T,H*keys] query-key cosines for the gate
  FusedTrace* trace = nullptr;              // monitoring taps (validation only)
  // The model's attention hooks (models/attention_hook.h), and the layer
  // being run, set per layer by the transformer; null: none.
  const AttentionHooks* hooks = nullptr;
  int64_t layer = 0;
  // One slot per installed hook for this call (ScoreSite::memo): made with
  // the context, so nothing outlives the call.
  mutable std::vector<torch::Tensor> hook_memo;
};

}  // namespace zl
