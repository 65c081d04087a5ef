// Run selectors: which runs a claim compares. A selector is a space-separated
// list of key=value terms ("variant=sfvl verify.threshold=0.82", "key=a|b"
// for either value) matched against each run's resolved config; the rules are
// in the header of ablations/claims.registry. Also the text helpers the
// registry, configs and selectors share.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/claims/claim_runs.h"

namespace zl {

// `s` without the blanks (space, tab, CR, LF) around it.
std::string trim_blanks(const std::string& s);
// A number as the registry or a config writes it; "inf"/"-inf" allowed. False if not one.
bool parse_number(const std::string& text, double* out);

// Numbers compare as numbers (0.8 matches 0.80) and booleans by meaning (a
// selector's "on" matches the stored "true").
bool same_value(const std::string& have, const std::string& want);

// One term of a selector.
struct SelectorTerm {
  std::string key;
  std::vector<std::string> values;  // any of them
};
// Throws std::invalid_argument on a term that is not key=value.
std::vector<SelectorTerm> parse_selector(const std::string& text);
bool run_matches(const ClaimRun& run, const std::vector<SelectorTerm>& sel);

using RunsBySeed = std::map<int64_t, std::vector<const ClaimRun*>>;

// Complete runs matching a selector, grouped by seed.
RunsBySeed select_runs(const std::string& selector, const ClaimsInput& in);

// Why nothing matched, in words: "no complete runs with variant=sfvl" plus what is near.
std::string why_missing(const std::string& selector, const ClaimsInput& in);

// Exactly one run per seed, or false with *problem an ambiguity naming the
// first offending seed.
bool one_per_seed(const RunsBySeed& groups, const std::string& selector, std::string* problem);

}  // namespace zl
