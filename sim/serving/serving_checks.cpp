#include "sim/serving/serving_checks.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "sim/memory_estimate.h"
#include "sim/util/format.h"

namespace zl {
namespace {

std::string number(double v) { return significant(v, 15); }

// `x` > 0 rounded up to 3 significant digits: a figure to type that holds at
// least `x` once parsed back (the exact one may parse a hair below it).
double rounded_up(double x) {
  const double unit = std::pow(10.0, std::floor(std::log10(x)) - 2);
  return std::ceil(x / unit) * unit;
}

// What the budget is, for the message: the key's value, or the default's rule.
std::string budget_text(const RunConfig& cfg) {
  const std::string bytes = number(serve_kv_budget_bytes(cfg)) + " bytes";
  if (cfg.serve.kv_budget_mb > 0) return number(cfg.serve.kv_budget_mb) + " MB (" + bytes + ")";
  return "0, the default (serve.max_num_seqs = " + std::to_string(cfg.serve.max_num_seqs) +
         " full contexts of the baseline's cache: " + bytes + ")";
}

std::string kv_budget_problem(const RunConfig& cfg) {
  const double per_token = kv_bytes_per_token(cfg);
  if (serve_kv_blocks(cfg, per_token) >= 1) return "";
  const double block = static_cast<double>(cfg.serve.block_size) * per_token;
  const std::string needed = significant(rounded_up(block / 1e6), 3);
  return "serve.kv_budget_mb: " + budget_text(cfg) + " holds no KV block of variant " + cfg.variant +
         "'s cache: a block of serve.block_size = " + std::to_string(cfg.serve.block_size) + " tokens at " +
         number(per_token) + " bytes per token needs " + number(block) + " bytes; set serve.kv_budget_mb to at least " +
         needed + " (or lower serve.block_size)";
}

// The first name of `key`'s list that `lookup` does not know, in the
// catalog's own words (which list the known names).
template <typename Lookup>
std::string unknown_name(const std::string& key, const std::string& list, Lookup lookup) {
  for (const auto& name : name_list(list)) {
    try {
      lookup(name);
    } catch (const std::invalid_argument& e) {
      return key + ": " + e.what();
    }
  }
  return "";
}

}  // namespace

double serve_kv_budget_bytes(const RunConfig& cfg) {
  if (cfg.serve.kv_budget_mb > 0) return cfg.serve.kv_budget_mb * 1e6;
  const double baseline_per_token = 2.0 * static_cast<double>(cfg.model.layers * cfg.model.dim) * sizeof(float);
  return static_cast<double>(cfg.serve.max_num_seqs * cfg.model.context) * baseline_per_token;
}

int64_t serve_kv_blocks(const RunConfig& cfg, double bytes_per_token) {
  return static_cast<int64_t>(serve_kv_budget_bytes(cfg) / (static_cast<double>(cfg.serve.block_size) * bytes_per_token));
}

bool projected(const RunConfig& cfg) { return !name_list(cfg.serve.hardware).empty() && !name_list(cfg.serve.shapes).empty(); }

std::string serving_problem(const RunConfig& cfg, const HardwareCatalog& catalog) {
  if (!cfg.serve.enabled) return "";
  if (cfg.serve.output_len >= cfg.model.context)
    return "serve.output_len: " + std::to_string(cfg.serve.output_len) + " leaves no room for a prompt in model.context = " +
           std::to_string(cfg.model.context) + " (at most " + std::to_string(cfg.model.context - 1) + ")";
  if (std::string p = kv_budget_problem(cfg); !p.empty()) return p;
  if (!projected(cfg)) return "";
  if (std::string p = unknown_name("serve.hardware", cfg.serve.hardware,
                                   [&](const std::string& n) { catalog.accelerator(n); });
      !p.empty())
    return p;
  return unknown_name("serve.shapes", cfg.serve.shapes, [&](const std::string& n) { catalog.model_shape(n); });
}

}  // namespace zl
