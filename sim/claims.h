// The claims table (SPEC §4): each claim of the seed articles, as data in a
// registry file (ablations/claims.registry, whose header documents the format,
// the comparisons and the verdict rule), measured on a results file with a 95%
// bootstrap interval over seeds, paired by seed, and judged supported, refuted
// or inconclusive. A claim whose runs are missing says which.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/results.h"

namespace zl {

// One [claim ID] section of the registry.
struct ClaimSpec {
  std::string id, source, claim, metric, comparison;
  std::string treatment, control;  // run selectors: "variant=sfvl verify.threshold=0.82"
  std::string over;                // argmin: the config key swept
  std::string table, x, y;         // trend: per-run table and its columns
  std::string claimed_text;        // as written ("0.37", "0.25 .. 0.44")
  double region_lo = 0, region_hi = 0;  // the claimed region the value must lie in
  std::string untestable;          // reason, or empty
  std::string file;                // where the section is, for errors
  int line = 0;
};

// Parses a registry. Throws std::runtime_error naming the file, line and key
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
// seed share a label: a row of a summary over seeds.
std::map<std::string, std::string> setting_labels(const std::vector<ClaimRun>& runs);

// "variant = sfvl\n[verify]\nthreshold = 0.82\n" -> {variant: sfvl, verify.threshold: 0.82}.
std::map<std::string, std::string> parse_config_ini(const std::string& ini);

struct ClaimResult {
  const ClaimSpec* spec = nullptr;
  double value, lo, hi;  // mean over seeds and its bootstrap interval (NaN if none)
  int seeds = 0;         // seeds that gave a value
  std::string verdict;   // supported | refuted | inconclusive | untestable | missing
  std::string note;      // why (the missing selector, an ambiguity, too few seeds)
};

// Evaluates every claim. `level` is the interval's confidence (0.95).
std::vector<ClaimResult> evaluate_claims(const std::vector<ClaimSpec>& specs, const ClaimsInput& input,
                                         double level = 0.95);

// The /claims table written into the results file: one row per claim.
Table claims_table(const std::vector<ClaimResult>& results);

// The table as text, two lines per claim.
std::string format_claims(const std::vector<ClaimResult>& results);

}  // namespace zl
