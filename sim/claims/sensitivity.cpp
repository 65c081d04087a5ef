#include "sim/claims/sensitivity.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "sim/claims/stats.h"

namespace zl {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string config_of(const ClaimRun& r, const std::string& key) {
  auto it = r.config.find(key);
  return it == r.config.end() ? "" : it->second;
}

// The variants a selector names ("variant=sfvl" or "variant=a|b"); none when it names no variant.
std::set<std::string> selected_variants(const std::string& selector) {
  std::set<std::string> out;
  std::istringstream in(selector);
  for (std::string term; in >> term;) {
    if (term.rfind("variant=", 0) != 0) continue;
    std::string rest = term.substr(8);
    for (size_t p = 0; p <= rest.size();) {
      size_t bar = rest.find('|', p);
      if (bar == std::string::npos) bar = rest.size();
      out.insert(rest.substr(p, bar - p));
      p = bar + 1;
    }
  }
  return out;
}

}  // namespace

Sensitivity claim_sensitivity(const std::vector<ClaimSpec>& specs, const ClaimsInput& input,
                              const ClaimsOptions& options) {
  // The settings of each variant's target among its complete runs (0: none, not a point of the curve).
  std::map<std::string, std::set<double>> settings;
  for (const auto& r : input.runs) {
    if (r.status != "complete") continue;
    const std::string v = config_of(r, "variant");
    const double x = std::atof(config_of(r, "calibrate." + v + ".target").c_str());
    if (x != 0) settings[v].insert(x);
  }
  Sensitivity out;
  std::vector<SensitivityRow> rows;
  for (const ClaimSpec& s : specs) {
    if (!s.known_method.empty()) continue;
    const std::set<std::string> in_treatment = selected_variants(s.treatment);
    const std::set<std::string> in_control = selected_variants(s.control);
    std::set<std::string> named = in_treatment;
    named.insert(in_control.begin(), in_control.end());
    for (const std::string& v : named) {
      auto it = settings.find(v);
      if (it == settings.end() || it->second.size() < 2) continue;
      const std::string key = "calibrate." + v + ".target";
      for (double x : it->second) {
        ClaimSpec narrowed = s;
        const std::string term = " " + key + "=" + format_value(x);
        if (in_treatment.count(v)) narrowed.treatment += term;
        if (in_control.count(v)) narrowed.control += term;
        out.specs.push_back(narrowed);
        SensitivityRow row;
        row.claim_id = s.id;
        row.key = key;
        row.setting = x;
        // What the target's metric came to on the test prompts, over this setting's runs.
        double sum = 0;
        int n = 0;
        for (const auto& r : input.runs) {
          if (r.status != "complete" || config_of(r, "variant") != v ||
              std::atof(config_of(r, key).c_str()) != x)
            continue;
          auto m = r.metrics.find(config_of(r, "calibrate." + v + ".metric"));
          if (m != r.metrics.end() && std::isfinite(m->second)) sum += m->second, ++n;
        }
        row.reached = n > 0 ? sum / n : kNaN;
        rows.push_back(row);
      }
    }
  }
  const std::vector<ClaimSpec> flat(out.specs.begin(), out.specs.end());
  std::vector<ClaimResult> results = evaluate_claims(flat, input, options);
  for (size_t i = 0; i < rows.size() && i < results.size(); ++i) {
    rows[i].result = results[i];
    rows[i].result.spec = &out.specs[i];  // the deque's, which outlive `flat`
    rows[i].result.verdict_holm.clear();  // one question along a curve: no family
  }
  out.rows = std::move(rows);
  return out;
}

std::string format_sensitivity(const Sensitivity& s) {
  if (s.rows.empty())
    return "no claim depends on a target that varies in this file (ablations/sensitivity.ini runs sfvl at four "
           "trigger rates)\n";
  std::ostringstream out;
  char line[512];
  for (size_t i = 0; i < s.rows.size();) {
    size_t end = i;
    while (end < s.rows.size() && s.rows[end].claim_id == s.rows[i].claim_id && s.rows[end].key == s.rows[i].key)
      ++end;
    const ClaimSpec& spec = *s.rows[i].result.spec;
    out << spec.id << " (claimed " << spec.claimed_text << ")\n";
    std::snprintf(line, sizeof line, "  %-26s %-9s %-32s %-12s %s\n", s.rows[i].key.c_str(), "reached",
                  "measured [95% CI]", "n, method", "verdict");
    out << line;
    std::set<std::string> verdicts;
    std::string path;
    for (size_t k = i; k < end; ++k) {
      const ClaimResult& r = s.rows[k].result;
      const std::string m = std::isnan(r.value) ? "-"
                            : std::isnan(r.lo)  ? format_value(r.value)
                                                : format_value(r.value) + " [" + format_value(r.lo) + ", " +
                                                      format_value(r.hi) + "]";
      const std::string n = r.seeds > 0 ? std::to_string(r.seeds) + ", " + method_name(r.method) : "-";
      std::snprintf(line, sizeof line, "  %-26s %-9s %-32s %-12s %s\n", format_value(s.rows[k].setting).c_str(),
                    std::isnan(s.rows[k].reached) ? "-" : format_value(s.rows[k].reached).c_str(), m.c_str(), n.c_str(),
                    r.verdict.c_str());
      out << line;
      verdicts.insert(r.verdict);
      path += (path.empty() ? "" : " -> ") + r.verdict + " at " + format_value(s.rows[k].setting);
    }
    if (verdicts.size() == 1) out << "  holds: " << *verdicts.begin() << " at every setting\n";
    else out << "  moves: " << path << "\n";
    i = end;
  }
  return out.str();
}

Table sensitivity_table(const Sensitivity& s) {
  std::vector<std::string> id, key, verdict, claimed, method, note;
  std::vector<double> setting, reached, value, lo, hi, region_lo, region_hi;
  std::vector<int64_t> seeds;
  for (const auto& row : s.rows) {
    const ClaimResult& r = row.result;
    id.push_back(row.claim_id);
    key.push_back(row.key);
    setting.push_back(row.setting);
    reached.push_back(row.reached);
    value.push_back(r.value);
    lo.push_back(r.lo);
    hi.push_back(r.hi);
    seeds.push_back(r.seeds);
    verdict.push_back(r.verdict);
    claimed.push_back(r.spec->claimed_text);
    region_lo.push_back(r.spec->region_lo);
    region_hi.push_back(r.spec->region_hi);
    method.push_back(r.seeds > 0 ? method_name(r.method) : "");
    note.push_back(r.note);
  }
  Table t;
  t.add("id", id);
  t.add("key", key);
  t.add("setting", setting);
  t.add("reached", reached);  // the target's metric on the test prompts, mean over the setting's runs
  t.add("value", value);
  t.add("ci_lo", lo);
  t.add("ci_hi", hi);
  t.add("seeds", seeds);
  t.add("verdict", verdict);
  t.add("claimed", claimed);
  t.add("region_lo", region_lo);
  t.add("region_hi", region_hi);
  t.add("method", method);
  t.add("note", note);
  return t;
}

}  // namespace zl
