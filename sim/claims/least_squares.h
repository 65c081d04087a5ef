// Least-squares line fit (Eigen), for claims about a trend: the verifier's
// trigger rate against context length (seed 002 §2.2, docs/design.md#claims-and-statistics S002-context).
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

// A continuous two-segment line (a hinge), y ≈ a + b·x + c·max(0, x − k),
// for claims about where behaviour changes sharply (seed 000 §5.2's 0.47):
// k is searched on `grid` points between the second-smallest and the
// second-largest distinct x (each segment keeps at least two x values), a, b
// and c by least squares at each k, the k of least squared error kept.
struct HingeFit {
  double knot, slope_below, slope_above, sse;
  int n;
};
// NaNs when fewer than 4 distinct x leave no knot with two points a side.
HingeFit fit_hinge(const std::vector<double>& x, const std::vector<double>& y, int grid = 200);

}  // namespace zl
