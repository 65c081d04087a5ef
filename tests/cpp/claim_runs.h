// Hand-made runs for the claims tests: a run whose config is a selector's
// key=value list, so a test reads as the registry it exercises.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "sim/claims/claims.h"

namespace zl {

// claim_run("r1", "variant=oet decode.top_p=0.95", 1, {{"q", 0.5}}): config
// {variant: oet, decode.top_p: 0.95, seed: 1}, metrics {q: 0.5}.
inline ClaimRun claim_run(const std::string& id, const std::string& config, int64_t seed,
                          std::map<std::string, double> metrics, const std::string& status = "complete") {
  ClaimRun r;
  r.run_id = id;
  r.seed = seed;
  r.status = status;
  r.metrics = std::move(metrics);
  const std::string s = config + " seed=" + std::to_string(seed);
  size_t p = 0;
  while (p < s.size()) {
    size_t sp = s.find(' ', p);
    if (sp == std::string::npos) sp = s.size();
    const std::string term = s.substr(p, sp - p);
    if (!term.empty()) r.config[term.substr(0, term.find('='))] = term.substr(term.find('=') + 1);
    p = sp + 1;
  }
  return r;
}

}  // namespace zl
