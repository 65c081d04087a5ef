#include "sim/serving/calibration.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace zl {
namespace {

constexpr int kFeatures = 6;
using Features = std::array<double, kFeatures>;

// The work of parts [begin, end): rows, keys, sequences, logits rows.
std::array<double, 4> work(const StepShape& s, size_t begin, size_t end) {
  std::array<double, 4> w{0, 0, 0, 0};
  for (size_t i = begin; i < end; ++i) {
    const auto& p = s.parts[i];
    const double n = p.tokens, c = p.context;
    w[0] += n;
    w[1] += n * c + n * (n + 1) / 2;  // row t of the part sees c + t + 1 keys
    w[2] += 1;
    w[3] += p.samples;
  }
  return w;
}

Features step_features(const std::array<double, 4>& group_work, const StepShape& s) {
  double samples = 0;
  for (const auto& p : s.parts) samples += p.samples;
  return {1, samples, group_work[0], group_work[1], group_work[2], group_work[3]};
}

double predict(const StepCoefficients& c, const Features& f) {
  double t = 0;
  for (int i = 0; i < kFeatures; ++i) t += c[i] * f[i];
  return t;
}

// The features of the group that takes longest under `c`.
Features slowest_group(const StepShape& s, int team, const StepCoefficients& c) {
  Features best{};
  double longest = -1;
  for (auto [b, e] : team_groups(s, team)) {
    Features f = step_features(work(s, b, e), s);
    const double t = predict(c, f);
    if (t > longest) longest = t, best = f;
  }
  return best;
}

StepCoefficients least_squares(const std::vector<Features>& x, const std::vector<double>& y) {
  Eigen::MatrixXd a(x.size(), kFeatures);
  Eigen::VectorXd b(y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    for (int j = 0; j < kFeatures; ++j) a(i, j) = x[i][j];
    b(i) = y[i];
  }
  // Columns that never vary (no sampling in a profile, one sequence per
  // step) have no coefficient of their own: QR with pivoting gives them 0.
  Eigen::VectorXd sol = a.colPivHouseholderQr().solve(b);
  StepCoefficients c{};
  for (int j = 0; j < kFeatures; ++j) c[j] = std::isfinite(sol(j)) ? sol(j) : 0;
  return c;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

struct Fit {
  StepCoefficients c{};
  int64_t outliers = 0;
};

// Least squares on `steps`, the slowest group chosen anew under each fit
// (a few rounds settle it), then again without the outliers. The outliers
// are judged twice: first against a fit the stalls themselves pulled (which
// misjudges honest steps near them), then against the fit made without
// them, which decides.
Fit fit(const std::vector<const ProfiledStep*>& steps, int team, bool grouped) {
  Fit out;
  std::vector<bool> keep(steps.size(), true);
  for (int round = 0; round < 8; ++round) {
    std::vector<Features> x;
    std::vector<double> y;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (!keep[i]) continue;
      const StepShape& s = steps[i]->shape;
      // First round: the group with the most rows.
      StepCoefficients guess = round == 0 ? StepCoefficients{0, 0, 1, 0, 0, 0} : out.c;
      x.push_back(grouped ? slowest_group(s, team, guess) : step_features(work(s, 0, s.parts.size()), s));
      y.push_back(static_cast<double>(steps[i]->ns));
    }
    out.c = least_squares(x, y);
    if (round == 3 || round == 5) {  // drop outliers once the groups have settled
      std::vector<double> res;
      for (size_t i = 0; i < steps.size(); ++i) {
        const StepShape& s = steps[i]->shape;
        Features f = grouped ? slowest_group(s, team, out.c) : step_features(work(s, 0, s.parts.size()), s);
        res.push_back(steps[i]->ns - predict(out.c, f));
      }
      std::vector<double> dev;
      const double mid = median(res);
      for (double r : res) dev.push_back(std::abs(r - mid));
      const double mad = 1.4826 * median(dev);
      out.outliers = 0;
      for (size_t i = 0; i < steps.size(); ++i) {
        keep[i] = std::abs(res[i] - mid) <= 4 * mad;
        out.outliers += !keep[i];
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::pair<size_t, size_t>> team_groups(const StepShape& shape, int team) {
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
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i + 1 < cut.size(); ++i) out.emplace_back(cut[i], cut[i + 1]);
  return out;
}

int64_t CalibratedCost::step_ns(const StepShape& step) const {
  if (step.parts.empty()) return 1;
  double t;
  if (team_groups(step, team_).size() == 1) {
    t = predict(alone_, step_features(work(step, 0, step.parts.size()), step));
  } else {
    t = predict(grouped_, slowest_group(step, team_, grouped_));
  }
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
  Fit a = fit(one, team, false), g = cuts ? fit(many, team, true) : Fit{a.c, 0};
  Calibration out{CalibratedCost(team, a.c, g.c)};
  out.steps = profile.size();
  out.outliers = a.outliers + g.outliers;
  std::vector<double> err;
  for (const auto& p : profile)
    err.push_back(std::abs(out.cost.step_ns(p.shape) - static_cast<double>(p.ns)) / std::max<int64_t>(p.ns, 1));
  out.median_abs_error = median(err);
  return out;
}

}  // namespace zl
