// Hand-made runs for the claims tests: a run whose config is a selector's
// key=value list, so a test reads as the registry it exercises.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "sim/claims/claims.h"
#include "sim/results.h"

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

// A small results file of the claims study on disk: sfcl and oet (module on,
// T 0.8, top_p 1) on seeds 1-3, decode_tok_s 100 + seed for sfcl and
// oet_tok_s + seed for oet, written as shards into `dir` and merged. Returns
// the merged file's path.
inline std::string write_oet_and_sfcl_study(const std::string& dir, double oet_tok_s) {
  Provenance prov;
  prov.git_commit = "test";
  for (int s = 1; s <= 3; ++s)
    for (const char* v : {"sfcl", "oet"}) {
      RunRecord r;
      r.run_id = std::string(v) + std::to_string(s);
      r.train_id = "t";
      r.variant = v;
      r.seed = s;
      r.status = "complete";
      r.config_ini = std::string("variant = ") + v + "\nseed = " + std::to_string(s) +
                     "\n\n[decode]\ntop_p = 1\ntemperature = 0.8\n\n[sfcl]\nat_inference = true\n";
      r.metrics["decode_tok_s"] = (std::string(v) == "oet" ? oet_tok_s : 100.0) + s;
      write_shard((std::filesystem::path(dir) / "runs" / (r.run_id + ".h5")).string(), prov, r);
    }
  const std::string results = (std::filesystem::path(dir) / "results.h5").string();
  merge_shards(dir, results, prov);
  return results;
}

}  // namespace zl
