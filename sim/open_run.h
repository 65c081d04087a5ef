// A run opened to the point of decoding: data, trained model, its variant's
// stage with the side models prepared, prompts and decode options. A run
// (sim/run/run.h), paired timing (sim/study/paired_timing.h) and the
// serving measurement (sim/serving/serving_run.h) all start from here.
#pragma once
#include <memory>
#include <optional>

#include "sim/config.h"
#include "sim/data.h"
#include "sim/decode_timing.h"
#include "sim/judge.h"
#include "sim/prompts.h"
#include "sim/results.h"
#include "sim/run_identity.h"
#include "sim/stages/variant.h"

namespace zl {

// A run ready to decode: its data, its trained model (trained here, or
// loaded from its complete checkpoint), its variant's stage with the side
// models prepared, its prompts and decode options. Not movable: `ctx` refers
// to the members.
struct OpenRun {
  RunConfig cfg;
  RunIdentity id;  // resolved once, from the config as the study gave it
  Dataset data;
  Transformer model{nullptr};
  std::unique_ptr<VariantStage> stage;
  Judge judge;
  Prompts prompts;
  DecodeOptions opt;
  std::unique_ptr<StageContext> ctx;
};

// Brings `cfg` to the point of decoding; the figures of training and of the
// stage's preparation go into `r` (a scratch record when only timing).
// `with_judge` loads (or trains) the independent judge when judge.enabled.
// A run with an operating point (sim/operating_point.h) solves its knob here,
// unless `frozen_knob` gives the value it solved before (paired timing
// reopens a run after it completed: the same knob, not a second search).
std::unique_ptr<OpenRun> open_run(const RunConfig& cfg, RunRecord& r, bool with_judge,
                                  std::optional<double> frozen_knob = std::nullopt);

// The `repeat`-th timed pass of `run`, on its own sampling stream, into `timings`.
void timed_pass(OpenRun& run, int64_t repeat, PassTimings& timings);

}  // namespace zl
