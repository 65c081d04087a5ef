// Operating points (docs/design.md#operating-points): a behaviour an article states is a target
// that a knob is solved for, not a knob value. A score threshold does not
// carry over between two verifiers; a trigger rate does. So sfvl's
// verify.threshold is solved per run (per seed) on calibration prompts,
// disjoint from the test prompts, for seed 002 §2.2's 18% first-check
// trigger rate on short text, then frozen for every pass of the run.
//
// A study states a target in a [calibrate.VARIANT] section:
//   [calibrate.sfvl]
//   target = 0.18                       # 0 = no target: the knob as configured
//   metric = trigger_rate_first_short   # what the target is a value of
//   knob = verify.threshold             # the config key solved for it
//   range = 0.01, 0.99                  # where the knob is searched
// Which metrics a variant can be calibrated for, and by which knob, is the
// table below (operating_targets): a metric is calibratable when the stage
// can measure it at a knob setting without the rest of the run
// (VariantStage::operating_metric).
//
// A knob that shapes training (sfcl's width `sfcl.hidden`, solved for seed
// 000 §2.1's 11.7% time share of the correction loop) is solved before the
// model trains, on the model's untrained weights: a step's time follows its
// shapes, not its values. The solution is kept beside the checkpoint
// (operating_point.ini), so every variant that decodes that checkpoint (oet
// decodes sfcl's) and every later pass reads the same width. Such a knob
// leaves the run's identity; the target enters it in its place.
#pragma once
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace zl {

struct RunConfig;

// One (variant, metric, knob) a study may calibrate.
struct OperatingTarget {
  std::string variant, metric, knob;
  double lo, hi;                 // the knob's default search range
  bool before_training = false;  // the knob shapes the model: solved before it trains
  // Of a knob solved before training: its metric is computed from the model's
  // shapes (an analytic count, the same on every machine) rather than timed.
  bool analytic = false;
};
const std::vector<OperatingTarget>& operating_targets();
// The variants that have a target (each gets its [calibrate.VARIANT] keys).
std::vector<std::string> calibratable_variants();

// A run's target, resolved from its config.
struct OperatingPoint {
  std::string variant, metric, knob;
  double target = 0;
  double lo = 0, hi = 1;   // search range of the knob
  double tolerance = 0.1;  // relative: |reached − target| <= tolerance · target
  int64_t prompts = 64;    // calibration prompts
  bool before_training = false;
  bool analytic = false;   // OperatingTarget::analytic
  int64_t rounds = 3;      // a timed grid's measurements per knob (calibrate.timing_rounds)
};
// The decode-time target of the run's own variant, if its [calibrate.VARIANT]
// target is set and its knob does not shape training.
std::optional<OperatingPoint> operating_point(const RunConfig& cfg);
// The target whose knob shapes the model the run decodes: that of the
// variant its checkpoint is trained as (trained_family: oet decodes sfcl's).
std::optional<OperatingPoint> training_operating_point(const RunConfig& cfg);
// Whether the [calibrate] key `key` is part of the run's identity (only a set
// target's keys are: a run without one keeps the identity it had before
// operating points existed); `training_only` for its train_id.
bool calibrate_key_counts(const std::string& key, const RunConfig& cfg, bool training_only);

// Puts `value` in force as the run's `op.knob` (every digit a probe or a
// solution needs), its origin named as the operating point's.
void set_operating_knob(RunConfig& cfg, const OperatingPoint& op, double value);

// Why `metric` by `knob` cannot be calibrated for `variant` ("" if it can):
// names what the variant can be solved for instead.
std::string operating_target_problem(const std::string& variant, const std::string& metric, const std::string& knob);

// The search and its outcome. `probes` are every (knob, value) measured, in order.
struct SolvedPoint {
  double knob = 0, reached = 0;
  std::vector<std::pair<double, double>> probes;
  // A timed grid's: the knob's 95% interval over resamples of its repeated
  // measurements (NaN for a search without repeats), and the repeats per knob.
  double knob_lo = NAN, knob_hi = NAN;
  int64_t rounds = 1;
};

// Solves measure(knob) = target over [lo, hi] by bisection on the sign of
// measure − target (which the two ends decide: the metric may rise or fall
// with the knob), stopping once a probe is within tolerance. `measure` must
// be deterministic in the knob (common random numbers: every probe decodes
// the same prompts from the same sampling seed), so the search is
// repeatable. Throws std::runtime_error when the target lies outside what
// the range reaches ("verify.threshold cannot bring trigger_rate_first_short
// to 0.18: 0.35-0.60 over 0.01-0.99") or when no probe comes within
// tolerance (a jump in the metric at the crossing).
SolvedPoint solve_operating_point(const OperatingPoint& op, const std::function<double(double)>& measure,
                                  int max_probes = 24);

// For a timed metric, which repeats only within the machine's noise, and an
// integer knob: the metric at a geometric grid of knobs over [lo, hi]
// (`points` of them), made monotone (pool adjacent violators, in the
// direction the two ends give), the crossing interpolated in log knob and
// rounded, then measured there once more (`reached`). The grid pools the
// noise of every probe where bisection would follow a single noisy sign.
// Throws as solve_operating_point does when the target lies outside what the
// grid reaches; a reached value outside tolerance is the machine's noise and
// is recorded, not an error.
//
// With `rounds` > 1 every knob of the grid is measured that many times, the
// grid walked once per round in an order that rotates from round to round (so
// that a burst of load falls on different knobs), the crossing found on the
// means, and its 95% interval from 400 resamples of each knob's measurements
// (percentile bootstrap; a resample whose grid does not reach the target is
// skipped). `reached` is then the mean of `rounds` measurements at the solution.
SolvedPoint solve_on_grid(const OperatingPoint& op, const std::function<double(double)>& measure, int points = 8,
                          int rounds = 1);

// For a metric computed, not measured (OperatingTarget::analytic), which must
// be monotone in an integer knob: the knob in [lo, hi] whose value is nearest
// the target, found by bisection. The same on every machine. Throws as
// solve_operating_point does when the target lies outside what the range reaches.
SolvedPoint solve_integer(const OperatingPoint& op, const std::function<double(double)>& measure);

}  // namespace zl
