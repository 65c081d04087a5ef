// Operating points (SPEC §9.2): a behaviour an article states is a target
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
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace zl {

struct RunConfig;

// One (variant, metric, knob) a study may calibrate.
struct OperatingTarget {
  std::string variant, metric, knob;
  double lo, hi;  // the knob's default search range
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
};
// The target of the run's own variant, if its [calibrate.VARIANT] target is set.
std::optional<OperatingPoint> operating_point(const RunConfig& cfg);

// Why `metric` by `knob` cannot be calibrated for `variant` ("" if it can):
// names what the variant can be solved for instead.
std::string operating_target_problem(const std::string& variant, const std::string& metric, const std::string& knob);

// The search and its outcome. `probes` are every (knob, value) measured, in order.
struct SolvedPoint {
  double knob = 0, reached = 0;
  std::vector<std::pair<double, double>> probes;
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

}  // namespace zl
