// The sfvl re-sampling policy (seed 002 §2.1-2.2) as a DecodeHook: after each
// new token the verifier scores every active sequence's last `window`
// tokens; below the threshold the newest 1 or 2 tokens are dropped and
// re-sampled at temperature + temp_bump, at most max_retries times.
//
// The retry budget belongs to the furthest position a sequence has fired at:
// it is refilled only when the sequence gets past that position, so a drop of
// 2 followed by a fire on the first re-sampled token cannot loop for ever.
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "sim/config.h"
#include "sim/decoder.h"
#include "sim/stages/resample_log.h"

namespace zl {

struct VerifyPolicy {
  double threshold = 0.82;
  std::string drop = "1";    // 1 | 2 | random (1 or 2, evenly)
  double temperature = 0.8;  // the decode temperature
  double temp_bump = 0.3;    // re-samples are drawn at temperature + temp_bump
  int64_t max_retries = 3;

  // A run's [verify] section at decode temperature `temperature`.
  static VerifyPolicy from(const VerifyConfig& v, double temperature) {
    return {v.threshold, v.drop, temperature, v.temp_bump, v.max_retries};
  }
};

// Scores windows [N,W] int64 -> confidences [N] in [0,1] (the verifier's).
using WindowScorer = std::function<torch::Tensor(const torch::Tensor&)>;

// A check that reads a whole sequence instead of a token window: the checker
// oracle among sfvl's controls (issue 13 §7, sim/stages/checker_oracle.h). It sees
// sequence `item` of the decode (prompt + kept tokens, the newest last, its
// first `prompt_len` tokens the prompt) and says whether it fires and, when
// it does, how many of the newest tokens to drop (0: the policy's drop).
struct SequenceVerdict {
  bool fire = false;
  int64_t drop = 0;
};
using SequenceCheck =
    std::function<SequenceVerdict(int64_t item, const std::vector<int32_t>& sequence, int64_t prompt_len)>;

class VerifyHook : public DecodeHook {
 public:
  VerifyHook(WindowScorer scorer, int64_t window, VerifyPolicy policy, uint64_t seed, bool log,
             std::string pass = "quality");
  // The same policy (budget, drop, temperature bump) behind a sequence check;
  // policy.threshold is not read. Logged scores are 0 (fired) or 1.
  VerifyHook(SequenceCheck check, VerifyPolicy policy, uint64_t seed, bool log, std::string pass = "quality");

  void begin_batch(int64_t batch) override;
  void begin_sequence(int64_t sequence, int64_t prompt_len) override;
  Verdict review(const std::vector<std::vector<int32_t>>& sequences, const std::vector<bool>& active) override;

  std::vector<VerifyEvent> events;  // when logging: one per check, in order
  double seconds = 0;               // wall time spent in review (gathering windows and scoring)
  int64_t checks = 0;

 private:
  struct Sequence {
    int64_t prompt_len = -1;   // learnt at the first review (prompt + one token)
    int64_t retries = 0;       // re-samples spent at `fired_len`
    int64_t fired_len = -1;    // the furthest length at which a check fired
    int64_t checked_len = -1;  // the furthest length checked: a check at or below it is a re-check
    std::vector<size_t> open;  // logged re-samples awaiting their replacement tokens
  };
  WindowScorer scorer_;
  SequenceCheck check_;  // set instead of scorer_ by the second constructor
  int64_t window_;
  VerifyPolicy policy_;
  std::mt19937_64 rng_;
  bool log_;
  std::string pass_;
  int64_t first_item_ = 0, batch_ = 0;
  std::vector<Sequence> seq_;
};

}  // namespace zl
