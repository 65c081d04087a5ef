// The real server: a StepRunner (sim/serving/serve_loop.h) that decodes on
// the hand-written fast step (models/decode_step.h). Its KV cache has one
// row per running request (`max_num_seqs` rows of the model's context); the
// scheduler's block budget decides who runs, as PagedAttention's allocator
// would, and a request that takes a row starts it empty. A step feeds each
// scheduled request its tokens (a prefill chunk, or its newest token) in
// one pass, samples where a part ends its known tokens, and shows the
// variant's hook (sfvl's verifier) every sampled token, rolling back what
// it takes back. Time is the wall clock since the first arrival; idle, the
// server sleeps, then spins, until the next arrival.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/decode_step.h"
#include "sim/decoder.h"
#include "sim/serving/serve_loop.h"

namespace zl {

class ServingEngine : public StepRunner {
 public:
  // Throws std::invalid_argument saying why when the model has no fast step.
  ServingEngine(Transformer model, const std::vector<ServeRequest>& requests, const DecodeOptions& opt,
                DecodeHook* hook, int64_t max_num_seqs, uint64_t seed);
  int64_t run(const StepPlan& plan, int64_t start_ns, std::vector<int64_t>& dropped) override;
  void wait_until(int64_t ns) override;
  // Starts the clock: the first arrival is now.
  void start();
  // Request `id`'s prompt and the tokens it has kept so far.
  const std::vector<int32_t>& tokens(int64_t id) const { return tokens_.at(id); }
  // Seconds the hook spent reviewing.
  double hook_seconds() const { return hook_seconds_; }

 private:
  int64_t now_ns() const;
  void reset_row(int64_t slot);

  Transformer model_;
  const std::vector<ServeRequest>& requests_;
  DecodeOptions opt_;
  DecodeHook* hook_;
  std::unique_ptr<DecodeStep> step_;
  KVCache cache_;
  at::Generator gen_;
  std::vector<std::vector<int32_t>> tokens_;  // per request: prompt + kept output tokens
  std::vector<std::vector<int32_t>> rows_;    // per cache row, for the hook: its request's tokens while it reviews
  std::vector<double> temperature_;           // per row: the next sample's (a re-sample's is hotter)
  std::chrono::steady_clock::time_point t0_;
  double hook_seconds_ = 0;
};

}  // namespace zl
