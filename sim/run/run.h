// One run (docs/design.md#runs-identity-and-checkpoints): a resolved config carried through train, evaluate,
// decode and measure, into a RunRecord for the results file.
#pragma once
#include <string>

#include "sim/config.h"
#include "sim/results.h"

namespace zl {

// Executes the run; throws on failure (the study records the error). With
// decode.timing = paired the record has no timing metrics yet: the study
// times the run beside the other arms of its seed (sim/study/paired_timing.h).
RunRecord execute_run(const RunConfig& cfg);

// What would fail a served run only after its model has trained, found from
// its config (sim/serving/serving_checks.h, against this tree's
// ablations/hardware.ini): "" or "KEY: why". A study asks before it trains
// anything (sim/study/study.cpp).
std::string serving_problem(const RunConfig& cfg);

// A failed run's record: status "failed" and the error message.
RunRecord failed_run(const RunConfig& cfg, const std::string& error);

}  // namespace zl
