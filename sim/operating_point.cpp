#include "sim/operating_point.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "sim/config.h"
#include "sim/util/format.h"

namespace zl {
namespace {

std::string num(double v) { return significant(v, 3); }

}  // namespace

const std::vector<OperatingTarget>& operating_targets() {
  // sfvl: a check is a position's first when its token was not drawn by a
  // re-sample (re-checks of re-sampled tokens fire at another rate, and the
  // article's 18% is the verifier's verdict on what the model proposes).
  // "Short text" is the first quarter of the model's context, the bucket of
  // trigger_rate_short. The threshold range stops short of 0 and 1, where
  // the verifier's sigmoid rarely lands.
  static const std::vector<OperatingTarget> t{
      // the share of first checks that fire at a context under a quarter of model.context
      {"sfvl", "trigger_rate_first_short", "verify.threshold", 0.01, 0.99},
      // the share of first checks that fire
      {"sfvl", "trigger_rate_first", "verify.threshold", 0.01, 0.99},
      // sfcl: seed 000 §2.1's 11.7% of SM cycles is a time share, so the
      // correction module's width is solved for its share of a decode step
      // (time_share_correction, sim/stages/sfcl_stage.h), not set by hand;
      // the width shapes training, so it is solved before the model trains.
      {"sfcl", "time_share_correction", "sfcl.hidden", 4, 512, /*before_training=*/true},
  };
  return t;
}

std::vector<std::string> calibratable_variants() {
  std::vector<std::string> out;
  for (const auto& t : operating_targets())
    if (std::find(out.begin(), out.end(), t.variant) == out.end()) out.push_back(t.variant);
  return out;
}

std::string operating_target_problem(const std::string& variant, const std::string& metric, const std::string& knob) {
  std::string can;
  bool metric_known = false;
  for (const auto& t : operating_targets()) {
    if (t.variant != variant) continue;
    if (t.metric == metric && t.knob == knob) return "";
    metric_known = metric_known || t.metric == metric;
    can += (can.empty() ? "" : ", ") + t.metric + " by " + t.knob;
  }
  if (can.empty()) return "variant " + variant + " has no operating point to calibrate";
  if (!metric_known)
    return variant + " does not produce '" + metric + "' at a knob setting; it can be calibrated for " + can;
  return "unknown knob '" + knob + "' for " + metric + "; " + variant + " can be calibrated for " + can;
}

namespace {

// `variant`'s target as the config sets it, if any.
std::optional<OperatingPoint> resolve(const RunConfig& cfg, const std::string& variant) {
  auto it = cfg.calibrate.targets.find(variant);
  if (it == cfg.calibrate.targets.end() || it->second.target == 0) return std::nullopt;
  const CalibrateTarget& c = it->second;
  OperatingPoint op;
  op.variant = variant;
  op.metric = c.metric;
  op.knob = c.knob;
  op.target = c.target;
  const auto range = number_list(c.range);
  op.lo = range.at(0);
  op.hi = range.at(1);
  op.tolerance = cfg.calibrate.tolerance;
  op.prompts = cfg.calibrate.prompts;
  for (const auto& t : operating_targets())
    if (t.variant == variant && t.metric == op.metric && t.knob == op.knob) op.before_training = t.before_training;
  return op;
}

// Pool adjacent violators: the non-decreasing sequence nearest `v` in least
// squares (Barlow et al. 1972), each pooled block at its mean.
std::vector<double> monotone_fit(const std::vector<double>& v) {
  std::vector<double> mean, weight;
  for (double x : v) {
    mean.push_back(x);
    weight.push_back(1);
    while (mean.size() > 1 && mean[mean.size() - 2] > mean.back()) {
      const double w = weight[weight.size() - 2] + weight.back();
      const double m = (mean[mean.size() - 2] * weight[weight.size() - 2] + mean.back() * weight.back()) / w;
      mean.pop_back();
      weight.pop_back();
      mean.back() = m;
      weight.back() = w;
    }
  }
  std::vector<double> out;
  for (size_t b = 0; b < mean.size(); ++b) out.insert(out.end(), static_cast<size_t>(weight[b]), mean[b]);
  return out;
}

std::runtime_error unreachable(const OperatingPoint& op, double least, double most) {
  return std::runtime_error(op.knob + " cannot bring " + op.metric + " to " + num(op.target) + ": " + num(least) + "-" +
                            num(most) + " over " + num(op.lo) + "-" + num(op.hi));
}

}  // namespace

std::optional<OperatingPoint> operating_point(const RunConfig& cfg) {
  auto op = resolve(cfg, cfg.variant);
  if (op && op->before_training) return std::nullopt;
  return op;
}

std::optional<OperatingPoint> training_operating_point(const RunConfig& cfg) {
  auto op = resolve(cfg, trained_family(cfg));
  if (op && !op->before_training) return std::nullopt;
  return op;
}

void set_operating_knob(RunConfig& cfg, const OperatingPoint& op, double value) {
  set_key(cfg, op.knob, significant(value, 10), Origin{"the operating point of calibrate." + op.variant});
}

bool calibrate_key_counts(const std::string& key, const RunConfig& cfg, bool training_only) {
  // The tolerance ends a bisection; a grid's solution does not depend on it.
  auto reads = [&](const std::optional<OperatingPoint>& op) {
    return op && (key.rfind("calibrate." + op->variant + ".", 0) == 0 || key == "calibrate.prompts" ||
                  (key == "calibrate.tolerance" && !op->before_training));
  };
  return reads(training_operating_point(cfg)) || (!training_only && reads(operating_point(cfg)));
}

SolvedPoint solve_operating_point(const OperatingPoint& op, const std::function<double(double)>& measure,
                                  int max_probes) {
  SolvedPoint s;
  const double tol = op.tolerance * std::abs(op.target);
  auto probe = [&](double knob) {
    const double v = measure(knob);
    s.probes.emplace_back(knob, v);
    if (s.probes.size() == 1 || std::abs(v - op.target) < std::abs(s.reached - op.target)) {
      s.knob = knob;
      s.reached = v;
    }
    return v;
  };
  double lo = op.lo, hi = op.hi;
  const double at_lo = probe(lo), at_hi = probe(hi);
  if (!std::isfinite(at_lo) || !std::isfinite(at_hi))
    throw std::runtime_error(op.metric + " has no value at " + op.knob + " = " +
                             num(std::isfinite(at_lo) ? op.hi : op.lo) + ": the calibration prompts give it nothing to measure (for a short-text rate, a "
                             "model.context too short for openings under a quarter of it?)");
  const double least = std::min(at_lo, at_hi), most = std::max(at_lo, at_hi);
  if (op.target < least - tol || op.target > most + tol) throw unreachable(op, least, most);
  // Bisection keeps lo on the side of the target where the lower end lies.
  const bool rising = at_hi >= at_lo;
  while (std::abs(s.reached - op.target) > tol && static_cast<int>(s.probes.size()) < max_probes) {
    const double mid = 0.5 * (lo + hi);
    const double v = probe(mid);
    if ((v < op.target) == rising) lo = mid;
    else hi = mid;
  }
  if (std::abs(s.reached - op.target) > tol)
    throw std::runtime_error(op.knob + " cannot bring " + op.metric + " within " + num(tol) + " of " +
                             num(op.target) + ": " + num(s.reached) + " at best (" + op.knob + " = " + num(s.knob) +
                             ", " + std::to_string(s.probes.size()) + " probes); the metric jumps at the crossing");
  return s;
}

SolvedPoint solve_on_grid(const OperatingPoint& op, const std::function<double(double)>& measure, int points) {
  if (points < 2 || !(op.lo > 0) || !(op.hi > op.lo))
    throw std::invalid_argument("solve_on_grid: a grid needs 2 or more points over 0 < lo < hi");
  SolvedPoint s;
  std::vector<double> knob, value;
  for (int i = 0; i < points; ++i) {
    const double k = std::round(op.lo * std::pow(op.hi / op.lo, i / (points - 1.0)));
    if (!knob.empty() && k <= knob.back()) continue;
    knob.push_back(k);
    value.push_back(measure(k));
    s.probes.emplace_back(k, value.back());
    if (!std::isfinite(value.back()))
      throw std::runtime_error(op.metric + " has no value at " + op.knob + " = " + num(k));
  }
  // Fitted rising: a falling metric is fitted as its negative.
  const bool rising = value.back() >= value.front();
  std::vector<double> v = value;
  if (!rising)
    for (double& x : v) x = -x;
  v = monotone_fit(v);
  if (!rising)
    for (double& x : v) x = -x;
  const double tol = op.tolerance * std::abs(op.target);
  const double least = std::min(v.front(), v.back()), most = std::max(v.front(), v.back());
  if (op.target < least - tol || op.target > most + tol) throw unreachable(op, least, most);
  // The first grid point at or past the target, and the one before it.
  size_t i = 0;
  while (i < v.size() && (rising ? v[i] < op.target : v[i] > op.target)) ++i;
  double solved;
  if (i == 0) solved = knob.front();
  else if (i == v.size()) solved = knob.back();
  else {
    const double a = std::log(knob[i - 1]), b = std::log(knob[i]);
    const double f = v[i] == v[i - 1] ? 0.5 : (op.target - v[i - 1]) / (v[i] - v[i - 1]);
    solved = std::exp(a + f * (b - a));
  }
  s.knob = std::clamp(std::round(solved), op.lo, op.hi);
  s.reached = measure(s.knob);
  s.probes.emplace_back(s.knob, s.reached);
  return s;
}

}  // namespace zl
