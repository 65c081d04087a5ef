// sfvl_best_of_n, a control of sfvl (issue 13 §7): the baseline's checkpoint
// samples each prompt n times (control.best_of_n); sfvl's own verifier (the
// cached one, same keys) scores every window a sample's tokens close, as sfvl
// checks every token it proposes; the sample with the best score is kept
// (control.best_score: the mean of its windows' confidences, or the least).
//
// Cost. Each generated token costs one model step and one check, as in sfvl,
// so checks per kept token (checks_per_token) are about n here and about
// 1 + the re-sampled share in sfvl: to compare at equal cost, set n to sfvl's
// measured checks_per_token, rounded (a grid n = 1, 2, 4 brackets it). A
// kept sample is known only once all n are scored, so for n > 1 its tokens
// arrive together: TTFT is the whole request's latency and TPOT is 0.
#pragma once
#include <memory>

#include "sim/stages/variant.h"
#include "sim/stages/verify_hook.h"

namespace zl {

struct BestOfNStats {
  int64_t checks = 0;  // windows scored: one per generated token of every sample, eos included
  double score_seconds = 0;
};

// Decodes every prompt n times (its samples side by side in decode()'s
// batches of decode.batch rows), `scorer` checking each token as it is
// proposed (window `window`, as sfvl's hook), and keeps per prompt the sample
// whose windows it rates best (`use_min`: by the least confidence, else by
// the mean; ties keep the earlier sample). With n = 1 it is decode() token
// for token: the same batches draw the same samples from `gen`.
DecodeOutput best_of_n_decode(Transformer& model, const std::vector<std::vector<int32_t>>& prompts,
                              const DecodeOptions& opt, int64_t n, const WindowScorer& scorer, int64_t window,
                              bool use_min, at::Generator& gen, BestOfNStats* stats = nullptr);

std::unique_ptr<VariantStage> make_best_of_n_stage(const RunConfig& cfg);

}  // namespace zl
