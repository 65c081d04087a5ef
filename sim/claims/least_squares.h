// Least-squares line fit (Eigen), for claims about a trend: the verifier's
// trigger rate against context length (seed 002 §2.2, SPEC §4 S002-context).
#pragma once
#include <vector>

namespace zl {

struct LineFit {
  double intercept, slope;
  int n;  // points used (finite x and y)
};

// Ordinary least squares y ≈ intercept + slope·x over the finite pairs.
// Throws std::invalid_argument when x and y differ in length, and returns NaNs
// when fewer than 2 points or a single distinct x leave the slope undefined.
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace zl
