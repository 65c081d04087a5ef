// Named points where a mechanism attaches to a block without editing
// AttentionImpl::forward, BlockImpl::forward or DecodeStep::through_layers
// (issue 30 item 2; docs/adding-a-mechanism.md walks through one,
// tests/cpp/test_toy_mechanism.cpp is its proof). A hook is installed on a model at runtime,
// TransformerImpl::add_attention_hook, and is seen by every layer of both
// paths, in the order installed. A hook implements both forms, the reference
// (tensors) and the fast step's (floats), of each point it uses; the equality
// tests between the two paths hold it to that.
//
// (a) Scores: what a key's score gets. Runs on the pre-softmax scores
//     q·k/sqrt(D) of the queries, after the causal mask, before the softmax:
//     - reference path (models/attention.cpp), training and the cached
//       forward: adjust_scores on [B,H,T,L], masked keys at −inf (keep them
//       there: add finite values, or multiply by positive ones; a trained
//       factor must leave them out of the product, whose gradient would be
//       0 · (−inf) = NaN);
//     - fast step (models/decode_step.cpp), plain attention: adjust_score_row
//       once per (row, layer, head) on that query's n visible scores, keys at
//       positions 0..n-1 (slot = position on a plain cache), n = position + 1.
//     Score hooks are refused with fused's parts, an evicting cache and
//     latent_kv's latent cache, on both paths (their keys are not slot =
//     position, or their scores are computed elsewhere).
// (b) After attention: transforms the attention output y (the heads' mixed
//     values, concatenated) before the output projection, given the block's
//     normalised input x (the one q, k, v come from). Runs after every kind
//     of attention (plain, fused, evicting, latent), after gated_attn's gate:
//     - reference path: after_attention on y [B,T,C] and x [B,T,C], returns y';
//     - fast step: after_attention_rows on y [M,C] in place, x [M,C], M rows
//       (tokens of one or more sequences).
// (c) Before the MLP: transforms the MLP input u = ln2(h), h the residual
//     stream after attention, before the MLP's first product. sfcl's and
//     oet's correction (u ← u·c, models/correction_hook.h) is one:
//     - reference path (models/block.cpp): before_mlp on u [B,T,C], returns u';
//     - fast step: before_mlp_rows on u [M,C] in place, given an MlpRows: the
//       rows (a sequence and an offset each, for what is set per sequence),
//       the step's matrix product on the threads it gives the call, and
//       what plan_call made of the hook's state for this call. plan_call
//       runs once per call of the step, on the calling thread before the team
//       does (ATen allowed, and its errors are thrown there, not in a member):
//       decode-time switches that a stage sets between calls (oet's looked-up
//       coefficients) are read there, as the reference reads them each call.
//
// The fast forms run on the decode step's spinning team (models/spin_team.h):
// several rows at once on different threads, so they must be const, safe to
// call concurrently, and call no ATen (use loops over the floats; a
// before-MLP form's products go through its site's product, which may start
// the team itself: it is called where the step would call its own). DecodeStep
// reads a model's hooks when it packs the model: install them before.
// A hook carries no state dict: its own numbers (a slope, a factor) are
// fixed, and a trained mechanism's parameters stay in the module that saves
// them (gated_attn's in AttentionImpl; sfcl's correction in each block; a
// registered network's in the module its builder registers on the model,
// models/factory.h), read by the hook, so
// checkpoints keep their names. A hook whose fast form reads such weights
// packs them in for_fast_step(), as DecodeStep packs its own. The fast step
// refuses a model with a parameter it does not read itself, unless a hook
// names it in trained_parameters(): a registered network's hook must.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zl {

// Where a reference-path score hook runs: one layer's scores [B,H,T,L].
struct ScoreSite {
  int64_t layer = 0;
  torch::Tensor query_pos;  // [B,T] or [1,T] int64: each query's position in the text
  torch::Tensor key_pos;    // [L] int64: each key's position
  // This hook's slot for one forward call, empty at its first layer and kept
  // through the others: what it derives from the positions alone (the same
  // in every layer of a call), made once instead of once per layer (ALiBi's
  // bias). Null where there is nothing to keep it in.
  torch::Tensor* memo = nullptr;
};

// Where a fast-step score hook runs: one query row of one head of one layer.
struct ScoreRow {
  int64_t layer = 0, head = 0;
  int64_t position = 0;  // the query's position; its keys are at 0..position
};

// One row of a fast-step call: a token of a sequence at a position
// (DecodeStep's rows). `logits`: its logits are returned; `offset`: its
// index among the rows of its sequence in this call (a prefill's t).
struct StepRow {
  int64_t sequence, token, position;
  bool logits;
  int64_t offset = 0;
};

// The fast step's matrix product, for a fast form with products of its own:
// C[M×N] = A·Wᵀ (+ bias, then GELU, if asked) from W's panels P
// (models/blas.h), on the threads the step gives the call (split across the
// team for a single sequence, else the calling member alone), so that the
// hook's products scale as the step's own do.
class RowsProduct {
 public:
  virtual ~RowsProduct() = default;
  virtual void operator()(int64_t M, int64_t N, int64_t K, const float* A, const float* P, float* C,
                          bool gelu = false, const float* bias = nullptr) const = 0;
};

// What a before-MLP hook's fast form reads during one call of the step,
// made by its plan_call (a hook defines its own and casts back to it).
struct CallPlan {
  virtual ~CallPlan() = default;
};

// Where a fast-step before-MLP hook runs: rows[0..M) of one layer.
struct MlpRows {
  int64_t layer = 0;
  const StepRow* rows = nullptr;
  const CallPlan* plan = nullptr;       // this hook's plan_call() for the call; null if it made none
  const RowsProduct* product = nullptr;  // never null
};

class AttentionHook {
 public:
  virtual ~AttentionHook() = default;
  // For error messages ("ALiBi", "gated attention").
  virtual std::string name() const = 0;

  // (a) Scores. uses_scores() says whether the two forms below do anything.
  virtual bool uses_scores() const { return false; }
  // scores [B,H,T,L] -> the adjusted scores (same shape).
  virtual torch::Tensor adjust_scores(const torch::Tensor& scores, const ScoreSite&) const { return scores; }
  // The n scores of one query row, in place.
  virtual void adjust_score_row(float* /*scores*/, int64_t /*n*/, const ScoreRow&) const {}

  // (b) After attention. uses_output() says whether the two forms below do anything.
  virtual bool uses_output() const { return false; }
  // y [B,T,C], x [B,T,C] -> y' [B,T,C].
  virtual torch::Tensor after_attention(const torch::Tensor& y, const torch::Tensor& /*x*/, int64_t /*layer*/) const {
    return y;
  }
  // y [M,C] in place, x [M,C].
  virtual void after_attention_rows(float* /*y*/, const float* /*x*/, int64_t /*M*/, int64_t /*C*/,
                                    int64_t /*layer*/) const {}

  // (c) Before the MLP. uses_mlp_input() says whether the forms below do anything.
  virtual bool uses_mlp_input() const { return false; }
  // u [B,T,C] -> u' [B,T,C].
  virtual torch::Tensor before_mlp(const torch::Tensor& u, int64_t /*layer*/) const { return u; }
  // Once per fast-step call over rows[0..M) of a cache of `batch` sequences,
  // before the team runs: what before_mlp_rows reads in that call (null: nothing).
  virtual std::unique_ptr<const CallPlan> plan_call(const StepRow* /*rows*/, int64_t /*M*/,
                                                    int64_t /*batch*/) const {
    return nullptr;
  }
  // u [M,C] in place, M = the rows of `site`.
  virtual void before_mlp_rows(float* /*u*/, int64_t /*M*/, int64_t /*C*/, const MlpRows& /*site*/) const {}

  // The hook whose fast forms the step runs, made once when a DecodeStep
  // packs the model (null: this one). For a fast form that reads the
  // model's weights: a copy with them packed (models/blas.h) at that moment.
  virtual std::shared_ptr<const AttentionHook> for_fast_step() const { return nullptr; }

  // The model's parameters this hook reads that the fast step does not read
  // itself: those of a module a registered network's builder put on the
  // model (models/factory.h). DecodeStep::supports takes a model with such
  // a parameter only when a hook names it here, so that no trained weight is
  // silently left out of the fast step. gated_attn's gates are the step's own.
  virtual std::vector<torch::Tensor> trained_parameters() const { return {}; }
};

using AttentionHooks = std::vector<std::shared_ptr<const AttentionHook>>;

// Whether any of `hooks` adjusts scores; the first one's name in `which`.
inline bool any_score_hook(const AttentionHooks& hooks, std::string* which = nullptr) {
  for (const auto& h : hooks)
    if (h->uses_scores()) {
      if (which) *which = h->name();
      return true;
    }
  return false;
}

}  // namespace zl
