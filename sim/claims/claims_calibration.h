// How far to trust a claims table's intervals (issue 17 §1-2): synthetic
// studies drawn around a known truth, with the spread and shape of the
// results file's own per-seed values, scored by each interval method at
// n = 3, 5, 8 (and the file's own n). It reports each method's real coverage
// and how often it gives a false verdict, and it is what picks the method a
// row's verdict uses: the one whose coverage at the row's n is nearest the
// nominal level.
//
// The shape: every row with at least 3 seeds and some spread gives its
// values' residuals from their mean, scaled to unit variance
// ((x − mean)/sd·√(n/(n−1)), so a residual has the variance of one value);
// the pool of all rows' residuals is what synthetic values are resampled
// from. Coverage is location- and scale-free for these methods, so one pool
// serves every row; the false-verdict rate is not, so it is simulated per
// row at the row's own mean and spread.
#pragma once
#include <string>
#include <vector>

#include "sim/claims/claims.h"
#include "sim/claims/stats.h"

namespace zl {

struct MethodCalibration {
  int n = 0;
  CiMethod method = CiMethod::t;
  double coverage = NAN;         // on the file's shape
  double coverage_normal = NAN;  // on normal values, for reference
  double width = NAN;            // mean width, in standard deviations of one value
  double false_verdicts = NAN;   // share of synthetic verdicts that contradict the truth (rows below)
  int rows = 0;                  // rows the false-verdict rate averages over
};

struct Calibration {
  double level = 0.95;
  int shape_rows = 0;            // rows whose residuals make the shape (0: normal values)
  size_t shape_values = 0;
  std::vector<MethodCalibration> cells;
  // The method nearest the nominal level at n (t on ties and where n is not calibrated).
  CiMethod best(int n) const;
};

// The pooled standardised residuals (see above) and the rows that gave them;
// empty when no row qualifies.
std::vector<double> residual_shape(const std::vector<ClaimResult>& results, int* rows = nullptr);

// Coverage of every method at each n, on the file's shape: all that choosing
// a method needs. With `report` (for --calibrate), also the coverage on
// normal values and the false-verdict rate: for each row with a region and
// ≥ 2 seeds, synthetic studies at its own mean (the truth) and spread; a
// verdict is false when it is "supported" with the truth outside the region
// or "refuted" with it inside.
Calibration calibrate(const std::vector<ClaimResult>& results, const std::vector<int>& ns, double level,
                      int studies, bool report, unsigned seed = 20261204);

std::string format_calibration(const Calibration& c);

}  // namespace zl
