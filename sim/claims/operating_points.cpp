#include "sim/claims/operating_points.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "sim/config.h"
#include "sim/util/format.h"

namespace zl {
namespace {

std::string num(double v) { return significant(v, 3); }

std::string config_value(const ClaimRun& run, const std::string& key) {
  auto it = run.config.find(key);
  return it == run.config.end() ? "" : it->second;
}

}  // namespace

std::string describe_operating_points(const std::vector<const ClaimRun*>& runs) {
  // One entry per (variant, metric, target, knob), with the knobs its runs solved.
  std::map<std::string, std::vector<double>> solved;
  for (const ClaimRun* r : runs) {
    // The run's own target, or that of the family its checkpoint trains as
    // (oet decodes the width sfcl's target solved).
    const std::string variant = config_value(*r, "variant");
    for (const std::string& v : {variant, trained_family(variant)}) {
      const std::string p = "calibrate." + v + ".", target = config_value(*r, p + "target");
      if (target.empty() || std::atof(target.c_str()) == 0) continue;
      const std::string what = v + " " + config_value(*r, p + "metric") + " = " + num(std::atof(target.c_str())) +
                               " by " + config_value(*r, p + "knob");
      auto it = r->metrics.find("calibrated_knob_value");
      auto& knobs = solved[what];
      if (it != r->metrics.end() && std::isfinite(it->second)) knobs.push_back(it->second);
      break;
    }
  }
  std::string out;
  for (const auto& [what, knobs] : solved) {
    std::string s = what;
    if (!knobs.empty()) {
      const auto [lo, hi] = std::minmax_element(knobs.begin(), knobs.end());
      s += " (" + (*lo == *hi ? num(*lo) : num(*lo) + "-" + num(*hi)) + " over " + std::to_string(knobs.size()) +
           (knobs.size() == 1 ? " run)" : " runs)");
    }
    out += (out.empty() ? "" : "; ") + s;
  }
  return out;
}

}  // namespace zl
