#include "sim/operating_point.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

#include "sim/config.h"
#include "sim/util/format.h"
#include "sim/util/sample.h"

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
      // The same share counted in the decode's FLOPs (sim/cost.h), computed
      // from the model's shapes: a width that does not move with a machine's
      // noise or model (docs/design.md#operating-points). Each run still times
      // its module's share (time_share_correction) and reports it.
      {"sfcl", "flops_share_correction", "sfcl.hidden", 4, 512, /*before_training=*/true, /*analytic=*/true},
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
  op.rounds = cfg.calibrate.timing_rounds;
  for (const auto& t : operating_targets())
    if (t.variant == variant && t.metric == op.metric && t.knob == op.knob) {
      op.before_training = t.before_training;
      op.analytic = t.analytic;
    }
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

namespace {

// The knobs of a geometric grid of `points` over [lo, hi], rounded and distinct.
std::vector<double> grid_knobs(const OperatingPoint& op, int points) {
  std::vector<double> knob;
  for (int i = 0; i < points; ++i) {
    const double k = std::round(op.lo * std::pow(op.hi / op.lo, i / (points - 1.0)));
    if (knob.empty() || k > knob.back()) knob.push_back(k);
  }
  return knob;
}

// Where the monotone fit of `value` over `knob` crosses the target,
// interpolated in log knob and rounded into [lo, hi]; throws unreachable()
// when the fit does not reach it.
double grid_crossing(const OperatingPoint& op, const std::vector<double>& knob, const std::vector<double>& value) {
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
  return std::clamp(std::round(solved), op.lo, op.hi);
}

}  // namespace

SolvedPoint solve_on_grid(const OperatingPoint& op, const std::function<double(double)>& measure, int points,
                          int rounds) {
  if (points < 2 || !(op.lo > 0) || !(op.hi > op.lo) || rounds < 1)
    throw std::invalid_argument("solve_on_grid: a grid needs 2 or more points over 0 < lo < hi, and 1 or more rounds");
  SolvedPoint s;
  s.rounds = rounds;
  const std::vector<double> knob = grid_knobs(op, points);
  const size_t n = knob.size();
  std::vector<std::vector<double>> seen(n);  // each knob's measurements
  for (int r = 0; r < rounds; ++r)
    for (size_t j = 0; j < n; ++j) {
      const size_t at = (j + static_cast<size_t>(r) * (n / 2 + 1)) % n;  // rotates, so round r starts elsewhere
      const double v = measure(knob[at]);
      s.probes.emplace_back(knob[at], v);
      if (!std::isfinite(v)) throw std::runtime_error(op.metric + " has no value at " + op.knob + " = " + num(knob[at]));
      seen[at].push_back(v);
    }
  std::vector<double> means(n);
  for (size_t j = 0; j < n; ++j) means[j] = mean_of(seen[j]);
  s.knob = grid_crossing(op, knob, means);
  if (rounds > 1) {
    // Percentile bootstrap of the crossing over each knob's measurements; a
    // fixed seed, so that one set of measurements gives one interval.
    std::mt19937_64 rng(20261207);
    std::vector<double> solutions;
    for (int b = 0; b < 400; ++b) {
      std::vector<double> resampled(n);
      for (size_t j = 0; j < n; ++j) {
        std::uniform_int_distribution<size_t> pick(0, seen[j].size() - 1);
        double sum = 0;
        for (size_t k = 0; k < seen[j].size(); ++k) sum += seen[j][pick(rng)];
        resampled[j] = sum / static_cast<double>(seen[j].size());
      }
      try {
        solutions.push_back(grid_crossing(op, knob, resampled));
      } catch (const std::runtime_error&) {
      }
    }
    if (!solutions.empty()) {
      std::sort(solutions.begin(), solutions.end());
      s.knob_lo = quantile_sorted(solutions, 0.025);
      s.knob_hi = quantile_sorted(solutions, 0.975);
    }
  }
  std::vector<double> there;
  for (int r = 0; r < rounds; ++r) {
    there.push_back(measure(s.knob));
    s.probes.emplace_back(s.knob, there.back());
  }
  s.reached = mean_of(there);
  return s;
}

SolvedPoint solve_integer(const OperatingPoint& op, const std::function<double(double)>& measure) {
  SolvedPoint s;
  auto probe = [&](double k) {
    const double v = measure(k);
    if (!std::isfinite(v)) throw std::runtime_error(op.metric + " has no value at " + op.knob + " = " + num(k));
    s.probes.emplace_back(k, v);
    return v;
  };
  double lo = std::ceil(op.lo), hi = std::floor(op.hi);
  const double at_lo = probe(lo), at_hi = probe(hi);
  const double tol = op.tolerance * std::abs(op.target);
  if (op.target < std::min(at_lo, at_hi) - tol || op.target > std::max(at_lo, at_hi) + tol)
    throw unreachable(op, std::min(at_lo, at_hi), std::max(at_lo, at_hi));
  const bool rising = at_hi >= at_lo;
  // Invariant: the target lies between the values at lo and hi.
  double v_lo = at_lo, v_hi = at_hi;
  while (hi - lo > 1) {
    const double mid = std::floor(0.5 * (lo + hi));
    const double v = probe(mid);
    if ((v < op.target) == rising) {
      lo = mid;
      v_lo = v;
    } else {
      hi = mid;
      v_hi = v;
    }
  }
  const bool take_lo = std::abs(v_lo - op.target) <= std::abs(v_hi - op.target);
  s.knob = take_lo ? lo : hi;
  s.reached = take_lo ? v_lo : v_hi;
  return s;
}

}  // namespace zl
