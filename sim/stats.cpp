#include "sim/stats.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace zl {

Interval bootstrap_mean(const std::vector<double>& raw, double level, int resamples, unsigned seed) {
  std::vector<double> v;
  for (double x : raw)
    if (std::isfinite(x)) v.push_back(x);
  const double nan = std::nan("");
  if (v.empty()) return {nan, nan, nan, 0};
  double m = 0;
  for (double x : v) m += x;
  m /= v.size();
  if (v.size() == 1) return {m, nan, nan, 1};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, v.size() - 1);
  std::vector<double> means(resamples);
  for (int r = 0; r < resamples; ++r) {
    double s = 0;
    for (size_t i = 0; i < v.size(); ++i) s += v[pick(rng)];
    means[r] = s / v.size();
  }
  std::sort(means.begin(), means.end());
  double a = (1 - level) / 2;
  auto at = [&](double q) { return means[std::min<size_t>(means.size() - 1, static_cast<size_t>(q * resamples))]; };
  return {m, at(a), at(1 - a), static_cast<int>(v.size())};
}

}  // namespace zl
