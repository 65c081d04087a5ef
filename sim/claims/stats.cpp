#include "sim/claims/stats.h"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

#include "sim/util/sample.h"

namespace zl {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> finite(const std::vector<double>& raw) {
  std::vector<double> v;
  for (double x : raw)
    if (std::isfinite(x)) v.push_back(x);
  return v;
}

}  // namespace

const char* method_name(CiMethod m) {
  switch (m) {
    case CiMethod::t: return "t";
    case CiMethod::percentile: return "percentile";
    case CiMethod::bca: return "bca";
  }
  return "?";
}

CiMethod parse_method(const std::string& name) {
  for (CiMethod m : {CiMethod::t, CiMethod::percentile, CiMethod::bca})
    if (name == method_name(m)) return m;
  throw std::invalid_argument("interval method '" + name + "' is not one of t, percentile, bca");
}

double t_quantile(double p, double dof) { return boost::math::quantile(boost::math::students_t(dof), p); }
double normal_quantile(double p) { return boost::math::quantile(boost::math::normal(), p); }
double normal_cdf(double x) { return boost::math::cdf(boost::math::normal(), x); }

Interval bootstrap_mean(const std::vector<double>& raw, double level, int resamples, unsigned seed) {
  MeanEstimate e(raw, resamples, seed);
  return e.interval(CiMethod::percentile, level);
}

MeanEstimate::MeanEstimate(const std::vector<double>& values, int resamples, unsigned seed) : v_(finite(values)) {
  if (v_.empty()) return;
  const size_t n = v_.size();
  mean_ = mean_of(v_);
  double ss = 0;
  for (double x : v_) ss += (x - mean_) * (x - mean_);
  // Equal values have no spread, exactly (their float mean may not be exact).
  const auto [lo, hi] = std::minmax_element(v_.begin(), v_.end());
  sd_ = n > 1 && *lo != *hi ? std::sqrt(ss / (n - 1)) : 0;
  if (n < 2) return;

  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  boot_.resize(resamples);
  for (double& b : boot_) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += v_[pick(rng)];
    b = s / n;
  }
  std::sort(boot_.begin(), boot_.end());

  // BCa (Efron & Tibshirani §14.3): bias correction from the share of
  // bootstrap means below the estimate, acceleration from the jackknife's skew.
  const double below = boot_cdf(mean_);
  const double eps = 0.5 / boot_.size();
  z0_ = normal_quantile(std::clamp(below, eps, 1 - eps));
  std::vector<double> jack(n);
  for (size_t i = 0; i < n; ++i) jack[i] = (mean_ * n - v_[i]) / (n - 1);
  const double jm = mean_of(jack);
  double num = 0, den = 0;
  for (double j : jack) {
    num += std::pow(jm - j, 3);
    den += std::pow(jm - j, 2);
  }
  accel_ = den > 0 ? num / (6 * std::pow(den, 1.5)) : 0;
}

bool MeanEstimate::has(CiMethod m) const {
  if (m == CiMethod::bca) return n() >= kBcaMinSeeds;
  return n() >= 2;
}

double MeanEstimate::boot_cdf(double b) const {
  auto lo = std::lower_bound(boot_.begin(), boot_.end(), b);
  auto hi = std::upper_bound(lo, boot_.end(), b);
  return ((lo - boot_.begin()) + 0.5 * (hi - lo)) / static_cast<double>(boot_.size());
}

Interval MeanEstimate::interval(CiMethod m, double level) const {
  Interval out{v_.empty() ? kNaN : mean_, kNaN, kNaN, n()};
  if (!has(m)) return out;
  const double a = (1 - level) / 2;
  switch (m) {
    case CiMethod::t: {
      const double half = t_quantile(1 - a, n() - 1) * sd_ / std::sqrt(static_cast<double>(n()));
      out.lo = mean_ - half;
      out.hi = mean_ + half;
      break;
    }
    case CiMethod::percentile:
      out.lo = quantile_sorted(boot_, a);
      out.hi = quantile_sorted(boot_, 1 - a);
      break;
    case CiMethod::bca: {
      auto adjusted = [&](double q) {
        const double u = z0_ + normal_quantile(q);
        return normal_cdf(z0_ + u / (1 - accel_ * u));
      };
      out.lo = quantile_sorted(boot_, adjusted(a));
      out.hi = quantile_sorted(boot_, adjusted(1 - a));
      break;
    }
  }
  return out;
}

double MeanEstimate::p_above(CiMethod m, double b) const {
  if (!has(m)) return kNaN;
  if (std::isinf(b)) return b < 0 ? 0 : 1;
  switch (m) {
    case CiMethod::t: {
      if (sd_ == 0) return mean_ > b ? 0 : 1;
      const double tstat = (mean_ - b) / (sd_ / std::sqrt(static_cast<double>(n())));
      return boost::math::cdf(boost::math::complement(boost::math::students_t(n() - 1), tstat));
    }
    case CiMethod::percentile: return boot_cdf(b);
    case CiMethod::bca: {
      // Inverts the BCa lower bound: b < lo at level 1 − 2α ⇔ Φ(w/(1 + a·w) − z0) < α,
      // with w = Φ⁻¹(F(b)) − z0 and F the bootstrap distribution.
      const double eps = 0.5 / boot_.size();
      const double w = normal_quantile(std::clamp(boot_cdf(b), eps, 1 - eps)) - z0_;
      const double d = 1 + accel_ * w;
      if (d <= 0) return w < 0 ? 0 : 1;
      return normal_cdf(w / d - z0_);
    }
  }
  return kNaN;
}

double MeanEstimate::p_below(CiMethod m, double b) const {
  // H0: mean ≥ b is H0: −mean ≤ −b; for the symmetric t this is the
  // complement. For the bootstraps, the mirror of p_above on the upper tail.
  if (!has(m)) return kNaN;
  if (std::isinf(b)) return b > 0 ? 0 : 1;
  switch (m) {
    case CiMethod::t: {
      if (sd_ == 0) return mean_ < b ? 0 : 1;
      const double tstat = (mean_ - b) / (sd_ / std::sqrt(static_cast<double>(n())));
      return boost::math::cdf(boost::math::students_t(n() - 1), tstat);
    }
    case CiMethod::percentile: return 1 - boot_cdf(b);
    case CiMethod::bca: {
      // b > hi at level 1 − 2α ⇔ F(b) > Φ(z0 + u) with u = (z0 + z(1−α))/(1 − a(z0 + z(1−α))).
      const double eps = 0.5 / boot_.size();
      const double w = normal_quantile(std::clamp(boot_cdf(b), eps, 1 - eps)) - z0_;
      const double d = 1 + accel_ * w;
      if (d <= 0) return w < 0 ? 1 : 0;
      return 1 - normal_cdf(w / d - z0_);
    }
  }
  return kNaN;
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  std::vector<size_t> order;
  for (size_t i = 0; i < p.size(); ++i)
    if (!std::isnan(p[i])) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> out(p.size(), kNaN);
  const size_t m = order.size();
  double running = 0;
  for (size_t k = 0; k < m; ++k) {
    running = std::max(running, std::min(1.0, (m - k) * p[order[k]]));
    out[order[k]] = running;
  }
  return out;
}

int64_t seeds_needed(double delta, double sd, double level, double power, int64_t cap) {
  delta = std::abs(delta);
  if (!(delta > 0) || !std::isfinite(sd)) return cap;
  if (sd == 0) return 2;
  const double a = (1 - level) / 2;
  for (int64_t n = 2; n < cap; ++n) {
    const double need = t_quantile(1 - a, n - 1) + t_quantile(power, n - 1);
    if (std::sqrt(static_cast<double>(n)) * delta / sd >= need) return n;
  }
  return cap;
}

std::vector<CoverageResult> simulate_coverage(const std::vector<double>& shape, int n, double level, int studies,
                                              unsigned seed, int resamples) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::uniform_int_distribution<size_t> pick(0, shape.empty() ? 0 : shape.size() - 1);
  const CiMethod methods[] = {CiMethod::t, CiMethod::percentile, CiMethod::bca};
  std::vector<CoverageResult> out;
  for (CiMethod m : methods) out.push_back({m, n, 0, 0});
  std::vector<int> counted(3, 0);
  std::vector<double> draws(n);
  for (int s = 0; s < studies; ++s) {
    for (double& x : draws) x = shape.empty() ? normal(rng) : shape[pick(rng)];
    MeanEstimate e(draws, resamples, seed + 7919u * static_cast<unsigned>(s + 1));
    for (size_t k = 0; k < 3; ++k) {
      if (!e.has(methods[k])) continue;
      Interval ci = e.interval(methods[k], level);
      ++counted[k];
      out[k].coverage += ci.lo <= 0 && 0 <= ci.hi;
      out[k].mean_width += ci.hi - ci.lo;
    }
  }
  std::vector<CoverageResult> kept;
  for (size_t k = 0; k < 3; ++k) {
    if (counted[k] == 0) continue;
    out[k].coverage /= counted[k];
    out[k].mean_width /= counted[k];
    kept.push_back(out[k]);
  }
  return kept;
}

}  // namespace zl
