// A step's cost on this machine, calibrated on the real decode step: the
// cost model the simulator runs on here (Vidur's approach: profile the very
// engine being simulated, fit, predict; SERVING-ANCHORS.md).
//
// The model follows how the fast step spreads a step over its team
// (models/decode_step.h, DecodeStep::run_rows): the rows of the step, in
// slot order, are cut into one group of whole sequences per team member,
// near equal row counts, and the step lasts as long as its slowest group;
// a step cut into one group (one sequence, or a long prefill beside a few
// decodes) instead has the whole team split each product.
// A group's time is linear in its work: rows fed (the products), keys
// attended (Σ over rows of the context it sees), sequences (per-sequence
// bookkeeping) and logits rows (the head). A step adds a fixed overhead and
// a cost per sampled token (sampling, and sfvl's review). So two sets of
// coefficients are fitted: one for steps of one group (team mode) and
// one for steps of several (the slowest group's), each by least squares,
// with stalls (steps over 3x what the fit gives their shape) left out.
//
// Decode-only steps, most of a served run, are not linear in their batch
// here (two threads share one memory bus and caches: measured per-batch
// medians bend by 10-15% off any line, and a batch of 11 costs 10-20% less
// than one of 12 though both put 6 sequences on the slower thread). For
// them the profile is also kept as a table, as Vidur keeps decode
// attention's (keyed on batch size and KV length): per batch size profiled
// often enough, a line in the keys the step attends over; between profiled
// sizes the two nearest lines are interpolated; past them, the structural
// model answers.
// The table is fitted on warm steps (neither after an idle wait nor after
// a prefill); a decode-only step after a prefill adds a cold cost fitted
// on the rest, a step and a slope in the tokens prefilled, for the step
// before and, decayed, those before it; a step after an idle wait adds the
// structural fit's wake-up cost.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/serving/cost_model.h"

namespace zl {

// The groups DecodeStep::run_rows cuts a step into on a team of `team`
// threads: [begin, end) ranges of shape.parts.
using TeamGroups = std::vector<std::pair<size_t, size_t>>;
TeamGroups team_groups(const StepShape& shape, int team);

// Coefficients, ns per unit: {overhead, per sample, per row, per key, per
// sequence, per logits row, waking after an idle wait, per token the step
// before prefilled, per token prefilled earlier (StepShape::prefilled_before)}.
using StepCoefficients = std::array<double, 9>;

// Decode-only steps of one batch size: intercept + slope · the keys they attend.
struct DecodeLine {
  double intercept = 0, slope = 0;
  double keys_lo = 0, keys_hi = 0;  // the keys it was fitted over: it does not answer far outside them
};
using DecodeTable = std::map<int64_t, DecodeLine>;  // by decodes in the step
// What a decode-only step after a prefill adds to its line, ns:
// {after one the step before, per token it prefilled, after one earlier,
// per token prefilled earlier (decayed: StepShape::prefilled_before)}.
using DecodeCold = std::array<double, 4>;
class CalibratedCost : public StepCostModel {
 public:
  // `decode_lines`: the decode table (batch sizes the profile had too few
  // steps of are absent); empty: the structural model alone.
  CalibratedCost(int team, StepCoefficients alone, StepCoefficients grouped, DecodeTable decode_lines = {},
                 DecodeCold cold = {})
      : team_(team), alone_(alone), grouped_(grouped), decode_(std::move(decode_lines)), cold_(cold) {}
  int64_t step_ns(const StepShape& step) const override;
  std::string kind() const override { return "calibrated"; }
  int team() const { return team_; }
  const StepCoefficients& alone() const { return alone_; }      // steps of one group
  const StepCoefficients& grouped() const { return grouped_; }  // steps of several
  const DecodeTable& decode_lines() const { return decode_; }
  const DecodeCold& decode_cold() const { return cold_; }

 private:
  // The structural model's figure, and the decode table's for a
  // decode-only step (NaN where it has none), given the step's team_groups.
  double structural_ns(const StepShape& step, const TeamGroups& groups) const;
  double decode_ns(const StepShape& step, const TeamGroups& groups) const;

  int team_;
  StepCoefficients alone_, grouped_;
  DecodeTable decode_;
  DecodeCold cold_;
};

struct ProfiledStep {
  StepShape shape;
  int64_t ns = 0;
};

struct Calibration {
  CalibratedCost cost;
  double median_abs_error = 0;  // of the fitted model on the profile, relative
  int64_t steps = 0, outliers = 0;
};

// Fits the model to steps timed on the real decode step. Throws
// std::invalid_argument when the profile has too few steps of either kind
// (of one group only on a team of one, which never cuts a step).
Calibration calibrate(const std::vector<ProfiledStep>& profile, int team);

}  // namespace zl
