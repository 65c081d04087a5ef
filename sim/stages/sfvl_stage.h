// Variant sfvl (docs/articles.md, seed 002 §2.1-2.2) in a run: the verifier is trained
// after the language model (which sfvl shares with baseline), decoding goes
// through the re-sampling hook, and the event log becomes the re-sampling
// metrics, overall, by context length and out of distribution.
//
// The same stage serves two of sfvl's controls (issue 13 §7), which decode
// the baseline's checkpoint and prompts with sfvl's budget (verify.drop,
// temp_bump, max_retries) and report the same metrics: sfvl_oracle fires
// where the exact checker finds a violation (sim/stages/checker_oracle.h), and
// sfvl_random fires at every check with probability control.trigger_rate.
// The third, sfvl_best_of_n, is sim/stages/best_of_n_stage.h.
#pragma once
#include <memory>

#include "sim/stages/variant.h"
#include "sim/stages/verify_hook.h"

namespace zl {

std::unique_ptr<VariantStage> make_sfvl_stage(const RunConfig& cfg);

// sfvl's operating metric (sim/operating_point.h): the share of first checks
// that fire when `prompts` are decoded through a VerifyHook with `scorer` and
// `policy` (its threshold the knob), counting checks at a context under
// `short_context` tokens (0: every first check; the decode then stops
// there). Deterministic for a deterministic scorer: the same `seed` gives
// the same samples until the first check that the threshold decides
// differently.
double first_check_rate_at(Transformer& model, const WindowScorer& scorer, int64_t window, const VerifyPolicy& policy,
                           const std::vector<std::vector<int32_t>>& prompts, DecodeOptions opt, uint64_t seed,
                           int64_t short_context);

// sfvl_random's score: a uniform draw in [0,1) per window, whatever its
// tokens. Behind a VerifyHook whose threshold is control.trigger_rate, each
// check fires with that probability, independently.
WindowScorer random_trigger(uint64_t seed);

}  // namespace zl
