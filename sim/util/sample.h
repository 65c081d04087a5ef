// Two summaries of a sample that the statistics of the claims
// (sim/claims/stats.h) and the operating points' bootstrap
// (sim/operating_point.h) share.
#pragma once
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace zl {

// The arithmetic mean of a non-empty sample.
inline double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// The q-quantile of sorted, non-empty values, as the order statistic at floor(q·B).
inline double quantile_sorted(const std::vector<double>& s, double q) {
  const double at = std::clamp(q, 0.0, 1.0) * static_cast<double>(s.size());
  return s[std::min<size_t>(s.size() - 1, static_cast<size_t>(at))];
}

}  // namespace zl
