#include "sim/serving/calibration.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace zl {
namespace {

constexpr int kFeatures = std::tuple_size_v<StepCoefficients>;
using Features = std::array<double, kFeatures>;

// The work of parts [begin, end): rows, keys, sequences, logits rows.
std::array<double, 4> work(const StepShape& s, size_t begin, size_t end) {
  std::array<double, 4> w{0, 0, 0, 0};
  for (size_t i = begin; i < end; ++i) {
    const auto& p = s.parts[i];
    w[0] += p.tokens;
    w[1] += p.keys();
    w[2] += 1;
    w[3] += p.samples;
  }
  return w;
}

Features step_features(const std::array<double, 4>& group_work, const StepShape& s) {
  return {1,
          static_cast<double>(s.samples()),
          group_work[0],
          group_work[1],
          group_work[2],
          group_work[3],
          s.after_idle ? 1.0 : 0.0,
          static_cast<double>(s.prefilled_before[0]),
          static_cast<double>(s.prefilled_before[1])};
}

double predict(const StepCoefficients& c, const Features& f) {
  double t = 0;
  for (int i = 0; i < kFeatures; ++i) t += c[i] * f[i];
  return t;
}

// The features of the group that takes longest under `c`.
Features slowest_group(const StepShape& s, const TeamGroups& groups, const StepCoefficients& c) {
  Features best{};
  double longest = -1;
  for (auto [b, e] : groups) {
    Features f = step_features(work(s, b, e), s);
    const double t = predict(c, f);
    if (t > longest) longest = t, best = f;
  }
  return best;
}

template <size_t N>
std::array<double, N> least_squares(const std::vector<std::array<double, N>>& x, const std::vector<double>& y) {
  Eigen::MatrixXd a(x.size(), N);
  Eigen::VectorXd b(y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t j = 0; j < N; ++j) a(i, j) = x[i][j];
    b(i) = y[i];
  }
  // Columns that never vary (no sampling in a profile, one sequence per
  // step) have no coefficient of their own: QR with pivoting gives them 0.
  Eigen::VectorXd sol = a.colPivHouseholderQr().solve(b);
  std::array<double, N> c{};
  for (size_t j = 0; j < N; ++j) c[j] = std::isfinite(sol(j)) ? sol(j) : 0;
  return c;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// A step held up far past what its shape costs (the machine is shared: a
// preempted thread, a page fault). Only these are left out of a fit: the
// ordinary spread, skewed to the slow side, is what the real server's steps
// have too, and a fit without it would predict them fast on average.
bool is_stall(double ns, double predicted) { return predicted > 0 && (ns > 3 * predicted || ns < predicted / 3); }

struct Fit {
  StepCoefficients c{};
  std::vector<bool> keep;  // per step: false for an outlier left out of the fit
};

// Least squares on `steps`, the slowest group chosen anew under each fit
// (a few rounds settle it), then again without the stalls. They are judged
// twice: first against a fit the stalls themselves pulled, then against the
// fit made without them, which decides.
Fit fit(const std::vector<const ProfiledStep*>& steps, int team, bool grouped) {
  Fit out;
  std::vector<bool> keep(steps.size(), true);
  std::vector<TeamGroups> groups;
  for (const ProfiledStep* p : steps) groups.push_back(grouped ? team_groups(p->shape, team) : TeamGroups{});
  for (int round = 0; round < 8; ++round) {
    std::vector<Features> x;
    std::vector<double> y;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (!keep[i]) continue;
      const StepShape& s = steps[i]->shape;
      // First round: the group with the most rows.
      StepCoefficients guess = round == 0 ? StepCoefficients{0, 0, 1} : out.c;
      x.push_back(grouped ? slowest_group(s, groups[i], guess) : step_features(work(s, 0, s.parts.size()), s));
      y.push_back(static_cast<double>(steps[i]->ns));
    }
    out.c = least_squares(x, y);
    if (round == 3 || round == 5) {  // drop stalls once the groups have settled
      for (size_t i = 0; i < steps.size(); ++i) {
        const StepShape& s = steps[i]->shape;
        Features f = grouped ? slowest_group(s, groups[i], out.c) : step_features(work(s, 0, s.parts.size()), s);
        keep[i] = !is_stall(steps[i]->ns, predict(out.c, f));
      }
    }
  }
  out.keep = keep;
  return out;
}

bool decode_only(const StepShape& s) {
  for (const auto& p : s.parts)
    if (p.tokens != 1) return false;
  return !s.parts.empty();
}

// Straight after another step that left the caches as decodes do.
bool warm(const StepShape& s) { return !s.after_idle && s.prefilled_before[0] == 0 && s.prefilled_before[1] == 0; }

double line_at(const DecodeLine& l, double keys) { return l.intercept + l.slope * keys; }

// DecodeCold's features of a step.
std::array<double, 4> cold_features(const StepShape& s) {
  const auto p = s.prefilled_before;
  return {p[0] > 0 ? 1.0 : 0.0, static_cast<double>(p[0]), p[1] > 0 ? 1.0 : 0.0, static_cast<double>(p[1])};
}

double cold_ns(const DecodeCold& c, const StepShape& s) {
  const auto f = cold_features(s);
  double t = 0;
  for (int i = 0; i < 4; ++i) t += c[i] * f[i];
  return t;
}

// Decode-only steps of one batch size needed for a line of their own.
constexpr size_t kMinPerSize = 12;

// Least squares ns ≈ a + b·keys, then again without the stalls. A batch
// size profiled at a single context gets a flat line.
DecodeLine line_without_stalls(const std::vector<std::pair<double, double>>& points, std::vector<bool>& keep) {
  auto solve = [](const std::vector<std::pair<double, double>>& pts) {
    double mx = 0, my = 0;
    for (auto [x, y] : pts) mx += x, my += y;
    mx /= pts.size();
    my /= pts.size();
    double sxx = 0, sxy = 0;
    for (auto [x, y] : pts) sxx += (x - mx) * (x - mx), sxy += (x - mx) * (y - my);
    // More keys never make a step faster: a slope below 0 is noise.
    const double b = sxx > 1e-9 * (1 + mx * mx) * pts.size() ? std::max(0.0, sxy / sxx) : 0;
    double lo = INFINITY, hi = -INFINITY;
    for (auto [x, y] : pts) lo = std::min(lo, x), hi = std::max(hi, x);
    return DecodeLine{my - b * mx, b, lo, hi};
  };
  // Stalls out (is_stall), judged first against the size's median (a line
  // through a dozen points, one a stall, would lean towards it), then
  // against the line through the rest.
  keep.assign(points.size(), true);
  std::vector<double> ns;
  for (auto [x, y] : points) ns.push_back(y);
  DecodeLine l{median(ns), 0, 0, 0};
  std::vector<std::pair<double, double>> kept;
  for (int round = 0; round < 2; ++round) {
    kept.clear();
    for (size_t i = 0; i < points.size(); ++i) {
      keep[i] = !is_stall(points[i].second, l.intercept + l.slope * points[i].first);
      if (keep[i]) kept.push_back(points[i]);
    }
    if (kept.size() < 2) {
      keep.assign(points.size(), true);
      return l;
    }
    l = solve(kept);
  }
  return l;
}

// DecodeCold by least squares on what decode-only steps after a prefill
// (not after an idle wait) take past their batch size's line, then again
// without the stalls (added to `left_out`, and the steps it uses to `tabled`).
DecodeCold fit_cold(const std::vector<ProfiledStep>& profile, const DecodeTable& lines,
                    std::set<const ProfiledStep*>& tabled, std::set<const ProfiledStep*>& left_out) {
  std::vector<const ProfiledStep*> steps;
  std::vector<double> base;
  for (const auto& p : profile) {
    if (!decode_only(p.shape) || p.shape.after_idle || warm(p.shape)) continue;
    auto l = lines.find(static_cast<int64_t>(p.shape.parts.size()));
    if (l == lines.end()) continue;
    steps.push_back(&p);
    base.push_back(line_at(l->second, static_cast<double>(p.shape.keys())));
  }
  DecodeCold c{};
  if (steps.size() < 8) return c;
  std::vector<bool> keep(steps.size(), true);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::array<double, 4>> x;
    std::vector<double> y;
    for (size_t i = 0; i < steps.size(); ++i)
      if (keep[i]) x.push_back(cold_features(steps[i]->shape)), y.push_back(steps[i]->ns - base[i]);
    c = least_squares(x, y);
    for (size_t i = 0; i < steps.size(); ++i) keep[i] = !is_stall(steps[i]->ns, base[i] + cold_ns(c, steps[i]->shape));
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    tabled.insert(steps[i]);
    if (!keep[i]) left_out.insert(steps[i]);
  }
  return c;
}

}  // namespace

TeamGroups team_groups(const StepShape& shape, int team) {
  // DecodeStep::run_rows: cut the rows at M·g/groups, moved forward to the
  // next sequence boundary.
  const size_t P = shape.parts.size();
  std::vector<int64_t> first_row(P + 1, 0);
  for (size_t i = 0; i < P; ++i) first_row[i + 1] = first_row[i] + shape.parts[i].tokens;
  const int64_t M = first_row[P];
  const int64_t groups = std::min<int64_t>(std::max(team, 1), std::max<size_t>(P, 1));
  std::vector<size_t> cut{0};
  for (int64_t g = 1, m = 0; g < groups; ++g) {
    m = std::max(m, M * g / groups);
    // The first part starting at or after row m.
    size_t part = std::lower_bound(first_row.begin(), first_row.end(), m) - first_row.begin();
    m = first_row[std::min(part, P)];
    if (part > cut.back() && part < P) cut.push_back(part);
  }
  cut.push_back(P);
  TeamGroups out;
  for (size_t i = 0; i + 1 < cut.size(); ++i) out.emplace_back(cut[i], cut[i + 1]);
  return out;
}

double CalibratedCost::structural_ns(const StepShape& step, const TeamGroups& groups) const {
  if (groups.size() == 1) return predict(alone_, step_features(work(step, 0, step.parts.size()), step));
  return predict(grouped_, slowest_group(step, groups, grouped_));
}

double CalibratedCost::decode_ns(const StepShape& step, const TeamGroups& cut) const {
  if (!decode_only(step) || decode_.empty()) return NAN;
  const auto size = static_cast<int64_t>(step.parts.size());
  const double keys = static_cast<double>(step.keys());
  auto at = [&](const DecodeLine& l) {
    const double reach = 0.1 * (l.keys_hi - l.keys_lo) + 1;
    return keys < l.keys_lo - reach || keys > l.keys_hi + reach ? NAN : line_at(l, keys);
  };
  // Its own line, or the nearest sizes on either side, interpolated.
  auto hi = decode_.lower_bound(size);
  double t = NAN;
  if (hi != decode_.end() && hi->first == size) {
    t = at(hi->second);
  } else if (hi != decode_.begin() && hi != decode_.end()) {
    const auto lo = std::prev(hi);
    const double w = static_cast<double>(size - lo->first) / (hi->first - lo->first);
    t = (1 - w) * at(lo->second) + w * at(hi->second);
  }
  // The table holds warm steps; a wake-up is the structural fit's.
  if (!std::isfinite(t)) return t;
  if (step.after_idle) t += (cut.size() == 1 ? alone_ : grouped_)[6];
  return t + cold_ns(cold_, step);
}

int64_t CalibratedCost::step_ns(const StepShape& step) const {
  if (step.parts.empty()) return 1;
  const TeamGroups groups = team_groups(step, team_);
  double t = decode_ns(step, groups);
  if (!std::isfinite(t)) t = structural_ns(step, groups);
  return std::max<int64_t>(1, std::llround(t));
}

Calibration calibrate(const std::vector<ProfiledStep>& profile, int team) {
  std::vector<const ProfiledStep*> one, many;
  for (const auto& p : profile) (team_groups(p.shape, team).size() == 1 ? one : many).push_back(&p);
  // A team of one never cuts a step (DecodeStep::run_rows): no step has
  // several groups, and the grouped coefficients are never used.
  const bool cuts = team > 1;
  if (one.size() < 8 || (cuts && many.size() < 8))
    throw std::invalid_argument("calibration: the profile has " + std::to_string(one.size()) + " steps on one team group and " +
                                std::to_string(many.size()) + " of several; " +
                                (cuts ? "at least 8 of each are needed" : "at least 8 are needed (a team of one cuts none)"));
  Fit a = fit(one, team, false), g = cuts ? fit(many, team, true) : Fit{a.c, {}};
  // The decode table: per batch size, a line in the keys attended, from
  // the warm steps.
  std::map<int64_t, std::vector<std::pair<double, double>>> by_size;  // -> (keys, ns)
  std::map<int64_t, std::vector<const ProfiledStep*>> of_size;
  for (const auto& p : profile)
    if (decode_only(p.shape) && warm(p.shape)) {
      const auto size = static_cast<int64_t>(p.shape.parts.size());
      by_size[size].emplace_back(static_cast<double>(p.shape.keys()), static_cast<double>(p.ns));
      of_size[size].push_back(&p);
    }
  DecodeTable lines;
  // A step is an outlier when the model that predicts it left it out.
  std::set<const ProfiledStep*> tabled, left_out;
  for (const auto& [size, points] : by_size) {
    if (points.size() < kMinPerSize) continue;
    std::vector<bool> keep;
    lines[size] = line_without_stalls(points, keep);
    for (size_t i = 0; i < points.size(); ++i) {
      tabled.insert(of_size[size][i]);
      if (!keep[i]) left_out.insert(of_size[size][i]);
    }
  }
  const DecodeCold cold = fit_cold(profile, lines, tabled, left_out);
  for (const auto& [steps, f] : {std::pair{&one, &a}, std::pair{&many, &g}})
    for (size_t i = 0; i < f->keep.size(); ++i)
      if (!f->keep[i] && !tabled.count((*steps)[i])) left_out.insert((*steps)[i]);
  Calibration out{CalibratedCost(team, a.c, g.c, lines, cold)};
  out.outliers = left_out.size();
  out.steps = profile.size();
  std::vector<double> err;
  for (const auto& p : profile)
    err.push_back(std::abs(out.cost.step_ns(p.shape) - static_cast<double>(p.ns)) / std::max<int64_t>(p.ns, 1));
  out.median_abs_error = median(err);
  return out;
}

}  // namespace zl
