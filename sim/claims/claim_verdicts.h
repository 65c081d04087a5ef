// Verdicts: a claim's per-seed values become a mean, every interval method's
// interval, and a verdict against the claimed region (supported, refuted or
// inconclusive; the rule is in the header of ablations/claims.registry and in
// docs/design.md#claims-and-statistics), then Holm's correction across the
// table's rows, and for an inconclusive row the seeds that would decide it.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/claims/claim_measurement.h"
#include "sim/claims/claim_registry.h"
#include "sim/claims/stats.h"

namespace zl {

struct Calibration;  // sim/claims/claims_calibration.h

// Fewer seeds than this give no verdict (registry header).
constexpr int kMinSeeds = 3;

struct ClaimsOptions {
  double level = 0.95;                 // two-sided confidence of every interval
  std::string method = "auto";         // auto (nearest calibrated coverage) | t | percentile | bca
  int calibration_studies = 2000;      // synthetic studies per n for `auto`
  double power = 0.8;                  // of the seeds-needed estimate
};

struct ClaimResult {
  const ClaimSpec* spec = nullptr;
  double value, lo, hi;  // mean over seeds and the interval of `method` (NaN if none)
  int seeds = 0;         // seeds that gave a value
  double sd = NAN;       // of the per-seed values
  std::string verdict;   // supported | refuted | inconclusive | untestable | missing
  std::string note;      // why (the missing selector, an ambiguity, too few seeds)
  CiMethod method = CiMethod::t;           // the interval the verdict used
  Interval t, percentile, bca;             // every method's interval (NaN bounds where it cannot run)
  double p_support = NAN, p_refute = NAN;  // one-sided p-values of `method` (below)
  std::string verdict_holm;                // the verdict under Holm across the table's rows
  int64_t seeds_needed = 0;                // inconclusive rows: power estimate (0: not applicable)
  std::map<int64_t, double> per_seed;      // the values behind the interval
  // The calibrated targets of the runs it compares ("" when every setting is
  // as configured): sim/claims/operating_points.h.
  std::string operating_point;
  // Its competence floor as read (sim/claims/competence_floor.h): the
  // side's mean, NaN where the row has no floor or no value for it.
  double competence = NAN;
  // The commits its runs ran at and their models were trained by, each once,
  // in order (empty where the file predates them); more than one: mixed.
  std::vector<std::string> commits;
};

// A known method's row (ClaimSpec::known_method), not one of the articles' claims.
inline bool is_known_row(const ClaimResult& r) { return r.spec != nullptr && !r.spec->known_method.empty(); }

// p_support: the data put the value inside the region (the larger of the two
// one-sided p-values against its bounds, TOST); p_refute: the data put it
// outside (the smaller of the p-values for "below lo" and "above hi"). The
// plain verdict is supported when p_support < (1 − level)/2, refuted when
// p_refute < (1 − level)/2: exactly "the interval lies inside / outside".
struct Judgement {
  std::string verdict;  // supported | refuted | inconclusive
  double p_support = NAN, p_refute = NAN;
};
Judgement judge_estimate(const MeanEstimate& e, CiMethod m, double region_lo, double region_hi, double level);

// Fills row `r` (its spec set) from its measurement: with a problem, missing
// (or inconclusive for an ambiguity); otherwise the mean, every method's
// interval, the verdict of the method options.method names (for "auto", the
// calibration's best at the row's n), inconclusive below kMinSeeds, and the
// seeds an inconclusive row needs. An untestable row keeps its value under
// the verdict "untestable"; known and by-construction rows plan no seeds.
void judge_row(ClaimResult& r, const Measurement& m, const ClaimsOptions& options, const Calibration& calibration);

// The region boundary nearest the mean (a finite one): the interval must
// exclude it for any verdict.
double nearest_boundary(const ClaimSpec& s, double mean);

// Holm's correction over the rows that have a verdict from data: each row's
// p-value is the smaller of p_support and p_refute, adjusted across the rows,
// and the row keeps its direction only if the adjusted p is below
// (1 − level)/2. Fills verdict_holm (untestable and missing rows copy their verdict).
void apply_holm(std::vector<ClaimResult>& results, double level);

}  // namespace zl
