// model → decoder: batched sampling with the KV cache, per-token timing, and
// the hook where a verification policy sits (variant sfvl: it reviews each
// new token and may send sequences back to re-sample).
#pragma once
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "models/eviction.h"
#include "models/sampling.h"
#include "models/transformer.h"
#include "sim/config.h"

namespace zl {

struct DecodeOptions {
  SamplingOptions sampling;
  int64_t max_new_tokens = 48;
  int64_t batch = 8;
  int32_t eos_id = -1;  // a sequence that samples eos stops (its later tokens are dropped)
  bool fast_step = true;  // the hand-written CPU step (models/decode_step.h) where the model allows it
  EvictionOptions eviction;  // the KV cache's eviction (streaming, h2o; models/eviction.h); off by default
};

// The options a run's [decode] section describes.
DecodeOptions decode_options(const DecodeConfig& d, int32_t eos_id);

// The verification seam. After every decode step the decoder shows the hook
// each sequence (prompt + kept tokens, the newest last); the hook answers,
// per sequence, how many of the newest tokens to drop (0 keeps them) and the
// temperature to re-sample them at. The decoder rolls the KV cache back and
// re-samples. The hook owns its budget (max retries) and its event log.
struct DecodeHook {
  struct Verdict {
    std::vector<int64_t> drop;         // per sequence
    std::vector<double> temperature;   // per sequence, used when drop > 0
  };
  virtual ~DecodeHook() = default;
  virtual void begin_batch(int64_t batch) = 0;
  // Just before the prompts of the batch are prefilled (as truncated to fit):
  // a hook may set per-sequence model state for the prefill (oet's table
  // corrections at the prompt's events). Default: nothing.
  virtual void before_prefill(const std::vector<std::vector<int32_t>>& prompts) {}
  // A serving loop (sim/serving/engine.h) reuses rows of one batch: row
  // `sequence` now holds a new request whose first `prompt_len` tokens are
  // its prompt. Default: nothing.
  virtual void begin_sequence(int64_t sequence, int64_t prompt_len) {}
  // A serving loop is about to run one step: row `fed[i].sequence` of a
  // `batch`-row cache is fed `fed[i].count` tokens from position
  // `fed[i].position` on (a prompt's chunk, or its newest token). A hook may
  // set per-row model state for that step (oet's table corrections where a
  // fed token fires an event). Default: nothing.
  struct Fed {
    int64_t sequence, position;
    const int64_t* tokens;
    int64_t count;
  };
  virtual void before_step(const std::vector<Fed>& fed, int64_t batch) {}
  virtual Verdict review(const std::vector<std::vector<int32_t>>& sequences, const std::vector<bool>& active) = 0;
};

// Timing of one request (sequence), vLLM's definitions (docs/results_schema.md):
// TTFT = first token time − start; TPOT = (e2e − TTFT)/(N − 1); ITL = gaps.
struct RequestTiming {
  double ttft_ms = 0, tpot_ms = 0, e2e_ms = 0;
  int64_t tokens = 0;
  std::vector<double> itl_ms;
};

// How many of a prompt's last tokens a decode keeps: the context must hold
// the continuation too (at least one prompt token is kept).
size_t kept_prompt_tokens(size_t prompt_size, int64_t context, const DecodeOptions& opt);

// A request's timing from its start and the arrival time of each token.
RequestTiming request_timing(std::chrono::steady_clock::time_point start,
                             const std::vector<std::chrono::steady_clock::time_point>& token_times);

struct DecodeOutput {
  std::vector<std::vector<int32_t>> continuations;  // per prompt, eos excluded
  std::vector<RequestTiming> timings;               // per prompt
  double seconds = 0;                               // wall time of the whole decode
  int64_t kept_tokens = 0;                          // tokens in continuations
  // Cache bytes, from the cache's tensors (KVCache::bytes_per_token). decode()
  // measures what the cache holds: after the prefill and after every step,
  // each running sequence's held tokens over the tokens it has been fed;
  // kv_bytes_per_token is bytes per token × Σ held / Σ fed (for a cache that
  // keeps every token, bytes per token itself), kv_bytes_peak the most one
  // sequence's cache held at once, the token attending included (0: not measured).
  double kv_bytes_per_token = 0;
  int64_t kv_bytes_peak = 0;
  bool fast_step = false;      // the hand-written step decoded (models/decode_step.h)
  std::string step_note;       // asked for the fast step but not on it: why not

  // Records request `item`: its generated tokens (a final eos is dropped),
  // their count in kept_tokens, and its timing.
  template <class It>
  void record(size_t item, It generated_begin, It generated_end, int32_t eos_id,
              std::chrono::steady_clock::time_point start,
              const std::vector<std::chrono::steady_clock::time_point>& token_times) {
    auto& cont = continuations[item];
    cont.assign(generated_begin, generated_end);
    if (!cont.empty() && cont.back() == eos_id) cont.pop_back();
    kept_tokens += cont.size();
    timings[item] = request_timing(start, token_times);
  }
};

// Decodes every prompt (in batches of opt.batch), sampling with `gen`.
// Prompts longer than model.context − max_new_tokens keep their last tokens.
DecodeOutput decode(Transformer& model, const std::vector<std::vector<int32_t>>& prompts, const DecodeOptions& opt,
                    at::Generator& gen, DecodeHook* hook = nullptr);

}  // namespace zl
