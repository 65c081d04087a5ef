#include "sim/claims/summary.h"

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/claims/claims.h"
#include "sim/claims/stats.h"
#include "sim/results.h"

namespace zl {

void print_summary(const std::string& results_file) {
  auto rows = read_index(results_file);
  const std::vector<std::pair<std::string, const char*>> headline = {
      {"val_loss", "%.3f"},       {"bpb", "%.3f"},          {"violation_rate", "%.3f"}, {"repetition_rate", "%.3f"},
      {"train_tok_s", "%.0f"},    {"decode_tok_s", "%.0f"}, {"ttft_ms_p50", "%.2f"}};
  // A row of the table: every run whose config matches but for the seed
  // (the variant and the keys that vary between its runs, read from each
  // run's stored config, so a temperature sweep gives one row per temperature).
  const auto labels = setting_labels(load_claims_input(results_file).runs);
  std::map<std::string, std::vector<const IndexRow*>> groups;
  for (const auto& r : rows) {
    auto it = labels.find(r.strings.at("run_id"));
    std::string key = it != labels.end() ? it->second : r.strings.at("variant");
    if (r.strings.at("status") != "complete") key += " (failed)";
    groups[key].push_back(&r);
  }
  std::printf("\n%-28s %5s", "setting", "seeds");
  for (const auto& [m, f] : headline) std::printf(" %24s", m.c_str());
  std::printf("\n");
  for (const auto& [key, members] : groups) {
    std::printf("%-28s %5zu", key.c_str(), members.size());
    for (const auto& [metric, fmt] : headline) {
      std::vector<double> v;
      for (const auto* r : members) {
        auto it = r->numbers.find(metric);
        if (it != r->numbers.end()) v.push_back(it->second);
      }
      Interval ci = bootstrap_mean(v);
      char cell[96], m[32], lo[32], hi[32];
      std::snprintf(m, sizeof m, fmt, ci.mean);
      std::snprintf(lo, sizeof lo, fmt, ci.lo);
      std::snprintf(hi, sizeof hi, fmt, ci.hi);
      if (ci.n == 0) std::snprintf(cell, sizeof cell, "-");
      else if (ci.n == 1) std::snprintf(cell, sizeof cell, "%s", m);
      else std::snprintf(cell, sizeof cell, "%s [%s, %s]", m, lo, hi);
      std::printf(" %24s", cell);
    }
    std::printf("\n");
  }
  std::printf("(mean [95%% bootstrap CI] over seeds)\n");
}

}  // namespace zl
