#include "sim/claims/claims_calibration.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

namespace zl {
namespace {

constexpr CiMethod kMethods[] = {CiMethod::t, CiMethod::percentile, CiMethod::bca};
constexpr int kShapeMinSeeds = 3;
constexpr int kVerdictResamples = 1000;  // bootstrap resamples inside a synthetic study

// Per row, the share of synthetic studies (at the row's mean and spread,
// values drawn from `shape`) whose verdict contradicts where the truth lies.
double false_verdict_rate(const ClaimResult& r, const MeanEstimate& observed, const std::vector<double>& shape,
                          int n, CiMethod m, double level, int studies, unsigned seed) {
  const double lo = r.spec->region_lo, hi = r.spec->region_hi, truth = observed.mean();
  const bool inside = truth >= lo && truth <= hi;
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_int_distribution<size_t> pick(0, shape.empty() ? 0 : shape.size() - 1);
  std::vector<double> draws(n);
  int wrong = 0;
  for (int s = 0; s < studies; ++s) {
    for (double& x : draws) x = truth + observed.sd() * (shape.empty() ? normal(rng) : shape[pick(rng)]);
    MeanEstimate e(draws, kVerdictResamples, seed + 31u * static_cast<unsigned>(s + 1));
    const std::string v = judge_estimate(e, m, lo, hi, level).verdict;
    wrong += inside ? v == "refuted" : v == "supported";
  }
  return static_cast<double>(wrong) / studies;
}

}  // namespace

CiMethod Calibration::best(int n) const {
  CiMethod chosen = CiMethod::t;
  double nearest = INFINITY;
  for (const auto& c : cells) {
    if (c.n != n || !std::isfinite(c.coverage)) continue;
    const double d = std::abs(c.coverage - level);
    if (d < nearest - 1e-9) nearest = d, chosen = c.method;  // cells list t first: it wins ties
  }
  return chosen;
}

std::vector<double> residual_shape(const std::vector<ClaimResult>& results, int* rows) {
  std::vector<double> pool;
  if (rows) *rows = 0;
  for (const auto& r : results) {
    if (is_known_row(r)) continue;  // a reference beside the claims, not part of the file's shape
    std::vector<double> v;
    for (const auto& [seed, x] : r.per_seed) v.push_back(x);
    MeanEstimate e(v, 2);
    if (e.n() < kShapeMinSeeds || !(e.sd() > 0)) continue;
    const double scale = std::sqrt(e.n() / (e.n() - 1.0)) / e.sd();
    for (double x : v) pool.push_back((x - e.mean()) * scale);
    if (rows) ++*rows;
  }
  return pool;
}

Calibration calibrate(const std::vector<ClaimResult>& results, const std::vector<int>& ns, double level,
                      int studies, bool report, unsigned seed) {
  Calibration c;
  c.level = level;
  const std::vector<double> shape = residual_shape(results, &c.shape_rows);
  c.shape_values = shape.size();
  for (int n : ns) {
    const auto on_shape = simulate_coverage(shape, n, level, studies, seed + n);
    // Normal values are a reference for the printed report only; choosing the method needs the shape alone.
    const auto on_normal = report ? simulate_coverage({}, n, level, studies, seed + 1000 + n)
                                  : std::vector<CoverageResult>{};
    for (CiMethod m : kMethods) {
      MethodCalibration cell;
      cell.n = n;
      cell.method = m;
      for (const auto& x : on_shape)
        if (x.method == m) cell.coverage = x.coverage, cell.width = x.mean_width;
      for (const auto& x : on_normal)
        if (x.method == m) cell.coverage_normal = x.coverage;
      if (std::isnan(cell.coverage)) continue;  // the method cannot run at this n
      if (report) {
        double sum = 0;
        for (size_t i = 0; i < results.size(); ++i) {
          const ClaimResult& r = results[i];
          if (is_known_row(r)) continue;
          std::vector<double> v;
          for (const auto& [s, x] : r.per_seed) v.push_back(x);
          MeanEstimate observed(v, 2);
          if (observed.n() < 2 || !(observed.sd() > 0)) continue;
          sum += false_verdict_rate(r, observed, shape, n, m, level, studies / 4,
                                    seed + 97u * static_cast<unsigned>(i + 1) + n);
          ++cell.rows;
        }
        cell.false_verdicts = cell.rows ? sum / cell.rows : NAN;
      }
      c.cells.push_back(cell);
    }
  }
  return c;
}

std::string format_calibration(const Calibration& c) {
  std::ostringstream out;
  char line[256];
  out << "Interval calibration: synthetic studies around a known truth, values resampled from ";
  if (c.shape_values)
    out << c.shape_values << " standardised per-seed residuals of " << c.shape_rows << " claim rows";
  else
    out << "a normal distribution (no row has 3 seeds with spread)";
  std::snprintf(line, sizeof line, "; nominal level %.3g.\n", c.level);
  out << line;
  std::snprintf(line, sizeof line, "%4s  %-11s %9s %16s %12s %15s\n", "n", "method", "coverage", "coverage(normal)",
                "width (sd)", "false verdicts");
  out << line;
  int last_n = -1;
  for (const auto& cell : c.cells) {
    const bool chosen = c.best(cell.n) == cell.method;
    char fv[32] = "-";
    if (std::isfinite(cell.false_verdicts))
      std::snprintf(fv, sizeof fv, "%.3f (%d rows)", cell.false_verdicts, cell.rows);
    std::snprintf(line, sizeof line, "%4s  %-11s %9.3f %16.3f %12.2f %15s%s\n",
                  cell.n == last_n ? "" : std::to_string(cell.n).c_str(), method_name(cell.method), cell.coverage,
                  cell.coverage_normal, cell.width, fv, chosen ? "   <- verdicts at this n" : "");
    out << line;
    last_n = cell.n;
  }
  out << "coverage: share of 95% intervals holding the truth; a verdict is false when it says supported with the\n"
         "truth outside the claimed region, or refuted with it inside (each row simulated at its own mean and spread).\n";
  return out.str();
}

}  // namespace zl
