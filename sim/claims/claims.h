// The claims table (SPEC §4): each claim of the seed articles, as data in a
// registry file (ablations/claims.registry, whose header documents the format,
// the comparisons and the verdict rule), measured on a results file with a 95%
// interval over seeds, paired by seed, and judged supported, refuted or
// inconclusive; beside it the verdict under a Holm correction across the
// table, and for an inconclusive row the seeds that would decide it. The
// interval's method is the one whose simulated coverage at the row's number
// of seeds is nearest the nominal level (sim/claims/claims_calibration.h). A claim
// whose runs are missing says which.
#pragma once
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/claims/stats.h"
#include "sim/results.h"

namespace zl {

// One [claim ID] section of the registry.
struct ClaimSpec {
  std::string id, source, claim, metric, comparison;
  std::string treatment, control;  // run selectors: "variant=sfvl verify.threshold=0.82"
  std::string over;                // argmin: the config key swept
  std::string table, x, y;         // trend: per-run table and its columns
  std::string rows;                // trend: a selector over the table's columns ("first=1 pass=quality|context")
  std::string claimed_text;        // as written ("0.37", "0.25 .. 0.44")
  double region_lo = 0, region_hi = 0;  // the claimed region the value must lie in
  std::string untestable;          // reason, or empty
  // Why the value follows from the design, not from a measurement (SPEC
  // §9.5): the row keeps its verdict as a manipulation check, is printed
  // apart, and is left out of the Holm family and the seeds plan.
  std::string by_construction;
  std::string file;                // where the section is, for errors
  int line = 0;
  // A known method's row beside the claim (registry key `known.NAME`): the
  // claim's comparison with `treatment` the method's runs, id "CLAIM@NAME".
  // It reads the method against the claimed region and takes no part in the
  // Holm family or the seeds plan: it is a reference, not a claim.
  std::string known_method;  // NAME; empty for the article's own claims
  std::string of_claim;      // the claim it stands beside
  // A projected row (registry key `projected.NAME = METRIC`): the claim's own
  // runs and comparison on a projected metric (the serving simulator on named
  // hardware, sim/serving/projection.h), id "CLAIM@NAME". A reference beside
  // the claim like a known method's row, and labelled "projected".
  bool projected = false;
  // A served row (registry key `served.NAME = METRIC`): the same on a metric
  // of the real server here (serve_*, sim/serving/serving_run.h), labelled
  // "served"; otherwise a projected row (projected = true, name in the
  // /claims projection column).
  bool served = false;
};

// Parses a registry; each claim's `known.NAME` rows follow it in the list.
// Throws std::runtime_error naming the file, line and key
// on an unknown key, a missing required key, a bad number or comparison, or
// a metric expression that does not parse.
std::vector<ClaimSpec> parse_registry(const std::string& text, const std::string& file);
std::vector<ClaimSpec> load_registry(const std::string& path);
// The /index metric names a claim's metric expression reads.
std::set<std::string> metric_names(const std::string& metric);

// What the claims are computed from: one entry per run of a results file.
struct ClaimRun {
  std::string run_id, status;
  int64_t seed = 0;
  std::map<std::string, std::string> config;  // dotted key -> value, from /runs/<id> attr config
  std::map<std::string, double> metrics;      // the /index metric columns
};
struct ClaimsInput {
  std::vector<ClaimRun> runs;
  // The per-run table `name` (e.g. "decode/events"); null result when absent.
  std::function<const Table*(const std::string& run_id, const std::string& name)> table;
};

// Reads every run of a results file (index, config; tables on demand).
ClaimsInput load_claims_input(const std::string& results_file);

// A label per run_id naming its setting: the variant plus every config key
// whose value varies between runs of that variant (seed and output keys
// excluded), e.g. "sfvl verify.threshold=0.82". Runs that differ only in the
// seed share a label: a row of a summary over seeds. A knob a run solved
// for its operating point (verify.threshold under [calibrate.sfvl]) is an
// outcome, not a setting, and is left out: the target names the setting.
std::map<std::string, std::string> setting_labels(const std::vector<ClaimRun>& runs);

// "variant = sfvl\n[verify]\nthreshold = 0.82\n" -> {variant: sfvl, verify.threshold: 0.82}.
std::map<std::string, std::string> parse_config_ini(const std::string& ini);

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

struct ClaimsOptions {
  double level = 0.95;                 // two-sided confidence of every interval
  std::string method = "auto";         // auto (nearest calibrated coverage) | t | percentile | bca
  int calibration_studies = 2000;      // synthetic studies per n for `auto`
  double power = 0.8;                  // of the seeds-needed estimate
};

// Evaluates every claim. A known method's row whose runs are not in the
// file is left out (a study that did not run the method has nothing to say
// about it); known_without_runs names them.
std::vector<ClaimResult> evaluate_claims(const std::vector<ClaimSpec>& specs, const ClaimsInput& input,
                                         const ClaimsOptions& options = {});

// The known-method rows of the registry that evaluate_claims left out for want
// of runs: "S000-kv@h2o (variant=h2o)", one per row.
std::vector<std::string> known_without_runs(const std::vector<ClaimSpec>& specs,
                                            const std::vector<ClaimResult>& results);

// Holm's correction over the rows that have a verdict from data: each row's
// p-value is the smaller of p_support and p_refute, adjusted across the rows,
// and the row keeps its direction only if the adjusted p is below
// (1 − level)/2. Fills verdict_holm (untestable and missing rows copy their verdict).
void apply_holm(std::vector<ClaimResult>& results, double level);

// The per-seed values behind every row: id, seed, value (the /claims_seeds table).
Table claim_seeds_table(const std::vector<ClaimResult>& results);

// What would decide the inconclusive rows: per row the seeds needed, then the
// overrides that run them (`study` is the study file to name). It says that
// the seed is every row's unit, per-fact rows (many judged statements per
// seed) included.
std::string format_plan(const std::vector<ClaimResult>& results, const std::string& study, double power);

// The /claims table written into the results file: one row per claim.
Table claims_table(const std::vector<ClaimResult>& results);

// A value as the tables print it: 4 significant digits, nan and inf spelled out.
std::string format_value(double v);

// The table as text, two lines per claim; `holm` adds the Holm column.
std::string format_claims(const std::vector<ClaimResult>& results, bool holm = true);

}  // namespace zl
