// Confidence intervals over seeds (SPEC §5): the percentile bootstrap of the
// mean, with a fixed resampling seed so a table is reproducible.
#pragma once
#include <utility>
#include <vector>

namespace zl {

struct Interval {
  double mean, lo, hi;
  int n;
};

Interval bootstrap_mean(const std::vector<double>& values, double level = 0.95, int resamples = 10000,
                        unsigned seed = 12345);

}  // namespace zl
