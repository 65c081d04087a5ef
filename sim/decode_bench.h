// The decode benchmark (issue 3): tokens/s of the baseline decoder and of
// sfvl's re-sampling decoder on one randomly initialised model of the run's
// shape, batch decode.batch, random prompts, and the verifier's measured
// share of decode time against its analytic share of FLOPs. Weights are
// random because throughput does not depend on them (no row stops at eos).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/config.h"

namespace zl {

struct VariantDecodeSpeed {
  std::string variant;
  double fast_tok_s = 0, reference_tok_s = 0;
  bool fast_step = false;  // the fast step served it (else both passes ran the reference)
};

struct DecodeBenchResult {
  double baseline_tok_s = 0, sfvl_tok_s = 0;
  double sfvl_checks_per_token = 0;  // verifier checks per kept token
  double verifier_time_share = 0;    // time in the hook / decode time
  double verifier_flops_share = 0;   // verifier FLOPs / (model + verifier) per check
  std::vector<VariantDecodeSpeed> variants;
};

// Best of `repeats` timed passes (after one warm-up) for each decoder, and
// for each of `variants` (models of those variants: baseline, sfcl, fused
// with the config's sfcl.* and fused.* keys; oet with a synthetic trigger
// firing on about 7% of tokens and a random table; speculative with a random
// draft of its draft shape) on both steps.
DecodeBenchResult run_decode_bench(const RunConfig& cfg, int64_t prompt_tokens, int64_t repeats,
                                   const std::vector<std::string>& variants = {});

}  // namespace zl
