// Variant speculative (issue 3's reference point): the baseline's language
// model decoded by exact speculative sampling with a draft of about the
// verifier's size (speculative.draft_ratio of the model's parameters),
// trained on the same data for as many steps and cached like any model.
#pragma once
#include <memory>

#include "sim/stages/variant.h"

namespace zl {

// The draft's run config: one block, the width whose parameter count comes
// closest to draft_ratio × the model's, otherwise the run's own config.
RunConfig draft_config(const RunConfig& cfg, int64_t vocab, int64_t target_params);

std::unique_ptr<VariantStage> make_speculative_stage(const RunConfig& cfg);

}  // namespace zl
