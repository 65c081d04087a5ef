// The transformer's one-token decode step, hand-written for the CPU, a fast
// path beside a slow, obvious reference
// (docs/design.md#decoding-the-reference-path-and-the-fast-step): at batch
// 8 a LibTorch step is some 130 dispatched operators, each costing more
// than its arithmetic. Here the step is plain loops over the weights and the
// KV cache, the matrix products run on weights packed once (models/blas.h),
// and the softmax and GELU are its own vectorised kernels too. The batch is
// cut into whole sequences, one group per member of a SpinTeam of LibTorch's
// thread count (models/spin_team.h); a single sequence splits its products
// and heads across the team instead. Nothing inside the step calls ATen,
// whose own threads would wait for a core that a spinning team member holds.
// For the same reason a DecodeStep hands LibTorch's threads to its team while
// it lives: ATen calls between steps (a verifier, cache bookkeeping) run on
// one thread until it is destroyed (measured: 25.0k tok/s end to end, against
// 7.5k with ATen's OpenMP threads and the team taking turns on two cores).
// It reads and writes the same KVCache as TransformerImpl::forward(tokens,
// cache), so the two paths can be mixed within one decode, and they are
// tested against each other (same logits after a prefill, steps and a
// rollback; same cache; same greedy tokens).
//
// Variants on it (issue 12): sfcl's and oet's correction between attention
// and the MLP (models/correction.h), a before-MLP hook
// (models/correction_hook.h) that reads each block's switches at every call
// as the reference path reads them: the module (packed like the other
// weights), the coefficients a stage set (oet's table lookups, per sequence
// and position), or none. And fused's parts (models/fused_options.h), in
// models/decode_step_fused.cpp: key weighting in both forms with each
// importance (attn_mass from the cache's running column sums, hidden_norm,
// and grad_norm by its closed form through the final norm and the head),
// value distillation (the cache holds z = P v; attention reads r-wide
// values and maps their sum back through P), and the logits gate.
// And the known methods of issue 13: KV cache eviction (streaming, h2o;
// models/eviction.h), each row written after the tokens its sequence holds
// and evicting one when over budget, per head; alibi's biases, −m_h·(p − j)
// added to each score before the softmax by its score hook (models/alibi.h;
// no position embedding), and gated_attn's output gate, an after-attention
// hook: one more product C→G per layer from the block's normalised input and
// a sigmoid multiply on the attention output (models/gated_attention.h).
// The model's attention hooks (models/attention_hook.h) run in the plain
// attention (score hooks), after every attention (after-attention hooks)
// and on the MLP input (before-MLP hooks), read once when the model is packed.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "models/spin_team.h"
#include "models/transformer.h"

namespace zl {

class DecodeStep {
 public:
  // Whether `model` can take this path: CPU float32, eval mode, and nothing
  // but the baseline's parameters, fused's parts, score hooks such as
  // alibi's (not with fused's parts), gated_attn's gates and the parameters
  // a hook names as its own (sfcl's correction modules, a registered
  // network's: AttentionHook::trained_parameters); the other variants'
  // parts, latent_kv's latent among them, use the reference.
  // When not, `why` says what stops it.
  static bool supports(const Transformer& model, std::string* why = nullptr);

  explicit DecodeStep(Transformer model);
  // A second step (a speculative draft) that runs on `with`'s team: one team
  // of spinning threads per process, or they would take turns on the cores.
  // It must be destroyed before `with`.
  DecodeStep(Transformer model, const DecodeStep& with);
  ~DecodeStep();
  DecodeStep(const DecodeStep&) = delete;
  DecodeStep& operator=(const DecodeStep&) = delete;

  // Appends one token per sequence (tokens[b] at position cache.lengths[b]),
  // advances the lengths, and returns the logits [B,V].
  torch::Tensor forward(const std::vector<int64_t>& tokens, KVCache& cache);

  // Writes every prompt into an empty cache (prompt b at positions 0..n_b-1;
  // the lengths become n_b) and returns each one's last-token logits [B,V]:
  // all rows of all prompts through each product at once, and the head only
  // for the last rows.
  torch::Tensor prefill(const std::vector<std::vector<int32_t>>& prompts, KVCache& cache);

  // Appends T tokens per sequence (every tokens[b] of one length T) at
  // positions lengths[b].., advances the lengths by T, and returns every
  // row's logits [B,T,V] (or nothing, when `logits` is false): what
  // TransformerImpl::forward(tokens, cache) does, in one multi-row pass (a
  // speculative target checking its draft's proposals).
  torch::Tensor extend(const std::vector<std::vector<int64_t>>& tokens, KVCache& cache, bool logits = true);

  // A continuous-batching server's step (sim/serving/engine.h): each feed's
  // tokens go to its own sequence at positions lengths[sequence].., a
  // prefill chunk and single-token decodes side by side; sequences not fed
  // are untouched. Feeds in increasing sequence order. Advances the fed
  // lengths and returns the logits [F,V] of the last token of each feed
  // that asks for them, in order.
  struct Feed {
    int64_t sequence = 0;
    std::vector<int64_t> tokens;
    bool logits = true;
  };
  torch::Tensor feed(const std::vector<Feed>& feeds, KVCache& cache);

  // For measuring one of fused's parts' share of a step's time only (a
  // replay timed with and without it, sim/step_replay.h): the step then
  // leaves that part's work out, and its logits and cache are wrong.
  enum class Part { None, KeyWeighting, ValueDistillation, Gate };
  void skip_for_timing(Part part) { skipped_ = part; }

 private:
  struct Layer {
    const float *ln1_w, *ln1_b, *qkv, *proj, *ln2_w, *ln2_b, *fc, *mlp_proj;
    BlockImpl* block;
    const float* value_p = nullptr;  // fused value distillation: P [r,D]
  };
  Transformer model_;
  std::vector<Layer> layers_;         // matrices packed as panels for models/blas.h
  std::vector<torch::Tensor> packed_;  // owns those copies
  const float *wte_, *wte_panels_, *wpe_, *lnf_w_, *lnf_b_;
  double eps_ = 1e-5;
  std::shared_ptr<SpinTeam> team_;
  int aten_threads_ = 1;  // LibTorch's thread count before the step took them (1: nothing to give back)
  // fused (all off for the other variants)
  FusedOptions fused_;
  int64_t value_width_ = 0;                 // values per head in the cache: r, or D
  const float* wte_t_panels_ = nullptr;     // grad_norm: the head's transpose, Wᵀ [C,V], as panels
  const float *gate_fc1_ = nullptr, *gate_fc1_b_ = nullptr, *gate_fc2_ = nullptr, *gate_fc2_b_ = nullptr;
  int64_t gate_hidden_ = 0;
  Part skipped_ = Part::None;
  // The model's attention hooks as packed (models/attention_hook.h; each
  // one's for_fast_step() copy where it makes one): owned here, and those of
  // each point apart, in the order installed.
  AttentionHooks hooks_;
  std::vector<const AttentionHook*> score_hooks_, output_hooks_, mlp_hooks_;
  // Each before-MLP hook's plan_call() for the call under way (null where it made none).
  std::vector<std::unique_ptr<const CallPlan>> mlp_plans_;

  // One token of one sequence at one position; `logits`: return its logits;
  // `offset`: its index among the rows of its sequence in this call. The
  // hooks' type (models/attention_hook.h): before-MLP hooks read the rows as they are.
  using Row = StepRow;
  // product() on the threads of one through_layers call, as a hook's fast
  // form calls it (RowsProduct, models/attention_hook.h).
  struct HookProduct;
  // The transformer over rows, sequence by sequence (their keys and values
  // written to the cache; lengths untouched): the logits of the rows that
  // ask, in order [R,V]. Team members take whole sequences.
  torch::Tensor run_rows(const std::vector<Row>& rows, KVCache& cache);
  // The same for rows[0..M) on this thread alone, or with the team splitting
  // each product and the attention (one sequence); logits to `logits`.
  void through_layers(const Row* rows, int64_t M, KVCache& cache, float* logits, bool alone);
  void pack_weights();

  // C[M×N] = A·Wᵀ (+ bias, then GELU, if asked) from W's panels P: on this
  // thread alone, or split across the team by rows when there are many (a
  // prefill), else by panels.
  void product(int64_t M, int64_t N, int64_t K, const float* A, const float* P, float* C, bool alone,
               bool gelu = false, const float* bias = nullptr);
  // fused (models/decode_step_fused.cpp). Attention of layer l for rows
  // [0, M): reads q in qkv [M,3C], writes y [M,C] and, when `features` is
  // given, the gate's query-key cosines [M, H·gate_keys]; each sequence's
  // rows in order (a row's attn_mass row sums the one before it).
  void attend_fused(size_t l, const Row* rows, int64_t M, const float* qkv, float* y, KVCache& cache, bool alone,
                    float* features);
  // Attention of layer l for rows [0, M) on an evicting cache
  // (models/eviction.h): writes each row's key and value, y [M,C], and
  // evicts; the cache's held counts are advanced after the call.
  void attend_evicting(size_t l, const Row* rows, int64_t M, const float* qkv, float* y, KVCache& cache, bool alone);
  // held[b] += fed[b], at most the budget (an evicting cache; else nothing).
  static void advance_held(KVCache& cache, const std::vector<int64_t>& fed);
  // Each row's importance before layer l's block (hidden_norm, grad_norm) from its input x [M,C].
  void token_importance(int64_t M, const float* x, float* importance, bool alone);
  // The gate's log factors added to the top-k logits of each of `n` rows.
  void gate_logits(int64_t n, const float* features, float* logits, bool alone);

  // mlp_plans_ for a call over `rows`; throws here, not in a team member.
  void plan_hooks(const std::vector<Row>& rows, int64_t batch);
  // body(begin, end) over [0, n): all of it here if `alone`, else in a few
  // contiguous ranges per team member.
  void split(int64_t n, bool alone, const std::function<void(int64_t, int64_t)>& body);
};

}  // namespace zl
