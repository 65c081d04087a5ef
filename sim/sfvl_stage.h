// Variant sfvl (SPEC §1, seed 002 §2.1-2.2) in a run: the verifier is trained
// after the language model (which sfvl shares with baseline), decoding goes
// through the re-sampling hook, and the event log becomes the re-sampling
// metrics, overall, by context length and out of distribution.
#pragma once
#include <memory>

#include "sim/variant.h"

namespace zl {

std::unique_ptr<VariantStage> make_sfvl_stage(const RunConfig& cfg);

}  // namespace zl
