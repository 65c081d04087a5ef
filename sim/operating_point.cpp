#include "sim/operating_point.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "sim/config.h"

namespace zl {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

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

std::optional<OperatingPoint> operating_point(const RunConfig& cfg) {
  auto it = cfg.calibrate.targets.find(cfg.variant);
  if (it == cfg.calibrate.targets.end() || it->second.target == 0) return std::nullopt;
  const CalibrateTarget& c = it->second;
  OperatingPoint op;
  op.variant = cfg.variant;
  op.metric = c.metric;
  op.knob = c.knob;
  op.target = c.target;
  const auto range = number_list(c.range);
  op.lo = range.at(0);
  op.hi = range.at(1);
  op.tolerance = cfg.calibrate.tolerance;
  op.prompts = cfg.calibrate.prompts;
  return op;
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
  if (op.target < least - tol || op.target > most + tol)
    throw std::runtime_error(op.knob + " cannot bring " + op.metric + " to " + num(op.target) + ": " + num(least) +
                             "-" + num(most) + " over " + num(op.lo) + "-" + num(op.hi));
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

}  // namespace zl
