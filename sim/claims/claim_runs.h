// What the claims are computed from: every run of a results file, with its
// seed, resolved config and /index metrics, and its per-run tables on demand;
// and the label that names a run's setting in the summaries.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/results.h"

namespace zl {

// One run of a results file.
struct ClaimRun {
  std::string run_id, status;
  // The commit the run ran at and the one that trained its model (/index;
  // empty in files from before they were recorded).
  std::string commit, train_commit;
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

}  // namespace zl
