// Intervals for a mean over a few seeds (docs/results_schema.md, issue 17), and what they
// need around them: one-sided p-values dual to each interval (for a Holm
// correction), a simulation of their real coverage, and the seeds a claim
// would need.
//
// Three interval methods, all of the mean of paired per-seed values:
//   t           Student-t: mean ± t(1−α/2, n−1)·s/√n. Exact for normal
//               values at any n ≥ 2.
//   percentile  the percentile bootstrap of the mean (Efron & Tibshirani
//               1993, §13.3). At n = 3 it is at most the range of the three
//               values and covers far less than its label.
//   bca         the bias-corrected and accelerated bootstrap (Efron 1987;
//               Efron & Tibshirani §14.3), acceleration from the jackknife.
//               Only from kBcaMinSeeds values: below that the jackknife has
//               too few points to estimate a skewness.
// Every bootstrap uses a fixed resampling seed, so a table is reproducible.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace zl {

struct Interval {
  double mean, lo, hi;
  int n;
};

// The percentile bootstrap of the mean (kept for callers that want only it).
Interval bootstrap_mean(const std::vector<double>& values, double level = 0.95, int resamples = 10000,
                        unsigned seed = 12345);

enum class CiMethod { t, percentile, bca };
const char* method_name(CiMethod m);
CiMethod parse_method(const std::string& name);  // throws std::invalid_argument naming the choices
constexpr int kBcaMinSeeds = 5;

// The mean of a few values with everything each method needs, computed once
// (the bootstrap means are drawn once and shared by every level asked).
class MeanEstimate {
 public:
  // Non-finite values are left out.
  explicit MeanEstimate(const std::vector<double>& values, int resamples = 10000, unsigned seed = 12345);

  int n() const { return static_cast<int>(v_.size()); }
  double mean() const { return mean_; }
  double sd() const { return sd_; }  // sample standard deviation (n − 1)
  bool has(CiMethod m) const;        // enough values for the method

  // Two-sided interval at `level` (NaN bounds when the method cannot run).
  Interval interval(CiMethod m, double level) const;
  // One-sided p-value of H0: mean ≤ b (small when the data put the mean above
  // b); dual to the interval: b < lo at level 1 − 2α  ⇔  p_above(b) < α.
  double p_above(CiMethod m, double b) const;
  double p_below(CiMethod m, double b) const;  // H0: mean ≥ b

 private:
  std::vector<double> v_;
  double mean_ = 0, sd_ = 0;
  std::vector<double> boot_;  // sorted bootstrap means
  double z0_ = 0, accel_ = 0; // BCa bias correction and acceleration
  double boot_cdf(double b) const;  // share of bootstrap means below b (ties count half)
};

// Student-t quantile and normal helpers (Boost.Math underneath).
double t_quantile(double p, double dof);
double normal_quantile(double p);
double normal_cdf(double x);

// Holm's step-down correction (Holm 1979): adjusted p-values in input order,
// p̃_(k) = max_{j ≤ k} min(1, (m − j + 1)·p_(j)) over ascending p. NaN
// entries are not in the family and stay NaN.
std::vector<double> holm_adjust(const std::vector<double>& p);

// The seeds a t interval at `level` needs to exclude a boundary `delta` away
// from the mean with probability `power`, for values of standard deviation
// `sd` (a power estimate: the observed mean and spread taken as the truth).
// Smallest N ≥ 2 with √N·delta/sd ≥ t(1−α/2, N−1) + t(power, N−1), the usual
// iteration of the normal closed form N = ((z(1−α/2) + z(power))·sd/delta)².
// Returns `cap` when even that many would not do (delta 0, huge spread).
int64_t seeds_needed(double delta, double sd, double level = 0.95, double power = 0.8, int64_t cap = 10000);

// Coverage by simulation (issue 17 §2): synthetic studies of n values drawn
// as truth + draw(), scored by each method's interval at `level`.
struct CoverageResult {
  CiMethod method;
  int n = 0;
  double coverage = 0;     // share of intervals that hold the truth
  double mean_width = 0;   // in units of the draws' standard deviation
};
// `shape`: standardised values (mean 0, sd 1) to resample the draws from;
// empty means standard normal draws.
std::vector<CoverageResult> simulate_coverage(const std::vector<double>& shape, int n, double level, int studies,
                                              unsigned seed, int resamples = 1000);

}  // namespace zl
