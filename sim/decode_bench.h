// The decode benchmark (issue 3): tokens/s of the baseline decoder and of
// sfvl's re-sampling decoder on one randomly initialised model of the run's
// shape, batch decode.batch, random prompts, and the verifier's measured
// share of decode time against its analytic share of FLOPs. Weights are
// random because throughput does not depend on them (no row stops at eos).
#pragma once
#include <cstdint>

#include "sim/config.h"

namespace zl {

struct DecodeBenchResult {
  double baseline_tok_s = 0, sfvl_tok_s = 0;
  double sfvl_checks_per_token = 0;  // verifier checks per kept token
  double verifier_time_share = 0;    // time in the hook / decode time
  double verifier_flops_share = 0;   // verifier FLOPs / (model + verifier) per check
};

// Best of `repeats` timed passes (after one warm-up) for each decoder.
DecodeBenchResult run_decode_bench(const RunConfig& cfg, int64_t prompt_tokens, int64_t repeats);

}  // namespace zl
