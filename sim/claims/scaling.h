// Claims across model sizes (issue 15): a results file holding several model
// shapes (ablations/scale.ini) is judged size by size, each size a table of
// its own (its own Holm family), and each claim gets a trend: the slope of
// its measured value against log10(parameters), with a bootstrap interval in
// which the seeds are resampled whole (a seed's values at every size travel
// together, so the pairing by seed that the per-size rows rely on is kept),
// and whether that slope moves the value toward the claimed region or away.
// This is the honest way to speak of a large model from small ones: not the
// value at any one size, but where the values go as the model grows.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/claims/claims.h"

namespace zl {

// One model shape among the runs: every model.* config key, as resolved.
struct ModelSize {
  std::string label;       // "4x128" (layers x dim)
  std::string signature;   // every model.* key=value, what tells shapes apart
  double params = NAN;     // the plain baseline's parameter count (metric `params`)
  size_t runs = 0;
};

// The shapes among `runs`, smallest first (by params, then label). The
// parameter count is the median `params` of the size's baseline runs, or the
// smallest of any run's when the size has no baseline (variants add modules).
std::vector<ModelSize> model_sizes(const std::vector<ClaimRun>& runs);

// The runs of one size (the per-run tables still reached through `in.table`).
ClaimsInput runs_of_size(const ClaimsInput& in, const ModelSize& size);

struct SizedClaims {
  ModelSize size;
  std::vector<ClaimResult> results;  // evaluate_claims on the runs of this size alone
};

// Every claim, size by size. A file of one size gives one entry: the plain table.
std::vector<SizedClaims> evaluate_claims_by_size(const std::vector<ClaimSpec>& specs, const ClaimsInput& input,
                                                 const ClaimsOptions& options = {});

struct ClaimTrend {
  const ClaimSpec* spec = nullptr;
  std::vector<std::string> sizes;      // labels of the sizes with a value, smallest first
  std::vector<double> params, values;  // per such size (values: means over the common `seeds`)
  std::vector<std::string> verdicts;   // the per-size verdicts, same order
  int seeds = 0;                       // seeds with a value at every one of those sizes
  double slope = NAN;                  // value per decade of parameters (least squares on the means)
  double lo = NAN, hi = NAN;           // percentile bootstrap, seeds resampled whole
  double t_lo = NAN, t_hi = NAN;       // Student-t over the per-seed slopes (more conservative at 3 seeds)
  // toward | away (the bootstrap interval excludes 0 and the slope moves the
  // fitted value at the largest size toward / away from the claimed region;
  // inside the region, toward its middle or, for a one-sided region, deeper
  // in) | flat (the interval holds 0) | "" (no trend: see note)
  std::string direction;
  std::string note;
};

// The direction the claimed region lies in from `value`: +1 above, -1 below,
// for a value inside the region its middle (a one-sided region: deeper in);
// 0 when the region is the whole line.
int toward_region(double value, double region_lo, double region_hi);

// One trend per claim row of the first size's table (known and projected rows
// included), from the sizes that measured it. Needs two sizes with a value;
// the interval needs two seeds common to them.
std::vector<ClaimTrend> claim_trends(const std::vector<SizedClaims>& sized, double level = 0.95,
                                     int resamples = 10000, unsigned seed = 12345);

// /claims for several sizes: claims_table's rows for each size, with the
// columns `size` (label) and `params`; /claims_seeds likewise with `size`.
Table sized_claims_table(const std::vector<SizedClaims>& sized);
Table sized_claim_seeds_table(const std::vector<SizedClaims>& sized);
// /claims_trend: one row per claim (docs/results_schema.md).
Table claim_trends_table(const std::vector<ClaimTrend>& trends);

// Text: each size's table under a header, then the trend table.
std::string format_sized_claims(const std::vector<SizedClaims>& sized, bool holm);
std::string format_trends(const std::vector<ClaimTrend>& trends, double level);

}  // namespace zl
