#include "sim/claims/operating_points.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace zl {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string config_value(const ClaimRun& run, const std::string& key) {
  auto it = run.config.find(key);
  return it == run.config.end() ? "" : it->second;
}

}  // namespace

std::string describe_operating_points(const std::vector<const ClaimRun*>& runs) {
  // One entry per (variant, metric, target, knob), with the knobs its runs solved.
  std::map<std::string, std::vector<double>> solved;
  for (const ClaimRun* r : runs) {
    const std::string v = config_value(*r, "variant"), p = "calibrate." + v + ".";
    const std::string target = config_value(*r, p + "target");
    if (target.empty() || std::atof(target.c_str()) == 0) continue;
    const std::string what = v + " " + config_value(*r, p + "metric") + " = " + num(std::atof(target.c_str())) +
                             " by " + config_value(*r, p + "knob");
    auto it = r->metrics.find("calibrated_knob_value");
    auto& knobs = solved[what];
    if (it != r->metrics.end() && std::isfinite(it->second)) knobs.push_back(it->second);
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
