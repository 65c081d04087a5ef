#include "sim/claims/least_squares.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace zl {

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size())
    throw std::invalid_argument("fit_line: " + std::to_string(x.size()) + " x values for " +
                                std::to_string(y.size()) + " y values");
  std::vector<int> keep;
  for (size_t i = 0; i < x.size(); ++i)
    if (std::isfinite(x[i]) && std::isfinite(y[i])) keep.push_back(static_cast<int>(i));
  const int n = static_cast<int>(keep.size());
  const double nan = std::nan("");
  if (n < 2) return {nan, nan, n};
  // Design matrix [1, x - mean(x)]: centring keeps the normal equations well
  // conditioned when x is a context length in the thousands.
  double mx = 0;
  for (int i : keep) mx += x[i];
  mx /= n;
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b(n);
  for (int r = 0; r < n; ++r) {
    a(r, 0) = 1.0;
    a(r, 1) = x[keep[r]] - mx;
    b(r) = y[keep[r]];
  }
  if (a.col(1).squaredNorm() == 0) return {nan, nan, n};  // one distinct x: no slope
  Eigen::Vector2d beta = a.colPivHouseholderQr().solve(b);
  return {beta(0) - beta(1) * mx, beta(1), n};
}

HingeFit fit_hinge(const std::vector<double>& x, const std::vector<double>& y, int grid) {
  if (x.size() != y.size())
    throw std::invalid_argument("fit_hinge: " + std::to_string(x.size()) + " x values for " +
                                std::to_string(y.size()) + " y values");
  std::vector<int> keep;
  std::vector<double> xs;
  for (size_t i = 0; i < x.size(); ++i)
    if (std::isfinite(x[i]) && std::isfinite(y[i])) {
      keep.push_back(static_cast<int>(i));
      xs.push_back(x[i]);
    }
  const int n = static_cast<int>(keep.size());
  const double nan = std::nan("");
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  HingeFit best{nan, nan, nan, nan, n};
  if (xs.size() < 4) return best;
  const double lo = xs[1], hi = xs[xs.size() - 2];
  Eigen::MatrixXd a(n, 3);
  Eigen::VectorXd b(n);
  for (int r = 0; r < n; ++r) {
    a(r, 0) = 1.0;
    a(r, 1) = x[keep[r]];
    b(r) = y[keep[r]];
  }
  for (int g = 0; g <= grid; ++g) {
    const double k = lo + (hi - lo) * g / grid;
    for (int r = 0; r < n; ++r) a(r, 2) = std::max(0.0, x[keep[r]] - k);
    Eigen::Vector3d beta = a.colPivHouseholderQr().solve(b);
    const double sse = (a * beta - b).squaredNorm();
    if (!(sse >= best.sse)) best = {k, beta(1), beta(1) + beta(2), sse, n};  // the first k on a tie
  }
  return best;
}

}  // namespace zl
