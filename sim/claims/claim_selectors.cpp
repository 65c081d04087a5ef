// Run selectors: parsing, matching a run's config, and saying why nothing matched.
#include "sim/claims/claim_selectors.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "sim/config.h"

namespace zl {

std::string trim_blanks(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

bool parse_number(const std::string& text, double* out) {
  const std::string s = trim_blanks(text);
  if (s.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

namespace {

bool as_bool(const std::string& text, bool* out) {
  try {
    *out = parse_bool(text);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

}  // namespace

bool same_value(const std::string& have, const std::string& want) {
  if (have == want) return true;
  double a, b;
  if (parse_number(have, &a) && parse_number(want, &b)) return a == b;
  bool p, q;
  return as_bool(have, &p) && as_bool(want, &q) && p == q;
}

std::vector<SelectorTerm> parse_selector(const std::string& text) {
  std::vector<SelectorTerm> out;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    size_t eq = tok.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == tok.size())
      throw std::invalid_argument("selector term '" + tok + "' is not key=value");
    SelectorTerm c{tok.substr(0, eq), {}};
    std::string rest = tok.substr(eq + 1);
    for (size_t p = 0; p <= rest.size();) {
      size_t bar = rest.find('|', p);
      if (bar == std::string::npos) bar = rest.size();
      c.values.push_back(rest.substr(p, bar - p));
      p = bar + 1;
    }
    out.push_back(std::move(c));
  }
  return out;
}

bool run_matches(const ClaimRun& run, const std::vector<SelectorTerm>& sel) {
  for (const auto& c : sel) {
    auto it = run.config.find(c.key);
    if (it == run.config.end()) return false;
    bool any = false;
    for (const auto& v : c.values) any = any || same_value(it->second, v);
    if (!any) return false;
  }
  return true;
}

RunsBySeed select_runs(const std::string& selector, const ClaimsInput& in) {
  auto sel = parse_selector(selector);
  RunsBySeed by_seed;
  for (const auto& r : in.runs)
    if (r.status == "complete" && run_matches(r, sel)) by_seed[r.seed].push_back(&r);
  return by_seed;
}

std::string why_missing(const std::string& selector, const ClaimsInput& in) {
  auto sel = parse_selector(selector);
  std::string msg = "no complete runs with " + selector;
  for (const auto& c : sel) {
    bool key_known = false;
    for (const auto& r : in.runs) key_known = key_known || r.config.count(c.key);
    if (!in.runs.empty() && !key_known) return msg + " (no run has a config key " + c.key + ")";
  }
  int failed = 0;
  for (const auto& r : in.runs)
    if (r.status != "complete" && run_matches(r, sel)) ++failed;
  if (failed) msg += " (" + std::to_string(failed) + " such run(s) failed)";
  return msg;
}

bool one_per_seed(const RunsBySeed& groups, const std::string& selector, std::string* problem) {
  for (const auto& [seed, runs] : groups)
    if (runs.size() > 1) {
      *problem = "ambiguous: " + std::to_string(runs.size()) + " runs with seed=" + std::to_string(seed) + " match " +
                 selector + " (" + runs[0]->run_id + ", " + runs[1]->run_id +
                 "); name the key they differ in";
      return false;
    }
  return true;
}

}  // namespace zl
