// Reading the claims registry: sections, keys, and each claim checked as it
// is read (its comparison against the kinds of claim_measurement.h, its
// selectors, its metric expression, its claimed region), then the reference
// rows beside it.
#include "sim/claims/claim_registry.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/claims/claim_expression.h"
#include "sim/claims/claim_measurement.h"
#include "sim/claims/claim_selectors.h"
#include "sim/claims/competence_floor.h"
#include "sim/config.h"

namespace zl {
namespace {

// Throws the registry error "WHERE: claim ID: LABEL 'METRIC': why" when the metric does not parse.
void check_metric(const std::string& where, const std::string& id, const std::string& label,
                  const std::string& metric) {
  try {
    [[maybe_unused]] const MetricExpression parsed(metric);
  } catch (const std::exception& e) {
    throw std::runtime_error(where + ": claim " + id + ": " + label + " '" + metric + "': " + e.what());
  }
}

// Throws the registry error "WHERE: claim ID: KEY: why" when the selector does not parse.
void check_selector(const std::string& where, const std::string& id, const std::string& key,
                    const std::string& selector) {
  try {
    parse_selector(selector);
  } catch (const std::exception& e) {
    throw std::runtime_error(where + ": claim " + id + ": " + key + ": " + e.what());
  }
}

// "revised.2026-12-06 = reading R; value V; reason W": a reading changed
// after its data was seen. Every part is required, so the history says what
// the row read, what it gave, and why it changed.
ClaimRevision parse_revision(const std::string& key, const std::string& value, const std::string& where) {
  ClaimRevision r;
  r.date = key.substr(std::string("revised.").size());
  const bool date_ok = r.date.size() == 10 && r.date[4] == '-' && r.date[7] == '-' &&
                       std::all_of(r.date.begin(), r.date.end(), [](unsigned char c) { return std::isdigit(c) || c == '-'; });
  if (!date_ok) throw std::runtime_error(where + ": " + key + ": the date must be YYYY-MM-DD");
  std::vector<std::string> parts;
  size_t from = 0;
  while (from <= value.size()) {
    const size_t semi = std::min(value.find(';', from), value.size());
    parts.push_back(trim_blanks(value.substr(from, semi - from)));
    from = semi + 1;
  }
  const char* labels[] = {"reading ", "value ", "reason "};
  std::string* fields[] = {&r.reading, &r.value, &r.reason};
  bool ok = parts.size() == 3;
  for (size_t i = 0; ok && i < 3; ++i) {
    ok = parts[i].rfind(labels[i], 0) == 0 && !trim_blanks(parts[i].substr(std::string(labels[i]).size())).empty();
    if (ok) *fields[i] = trim_blanks(parts[i].substr(std::string(labels[i]).size()));
  }
  if (!ok)
    throw std::runtime_error(where + ": " + key + ": expected 'reading OLD READING; value OLD VALUE; reason WHY', got '" +
                             value + "'");
  return r;
}

void finish_spec(ClaimSpec& s, const std::map<std::string, std::string>& kv, const std::string& where) {
  auto need = [&](const char* key) {
    auto it = kv.find(key);
    if (it == kv.end() || it->second.empty())
      throw std::runtime_error(where + ": claim " + s.id + " has no " + key);
    return it->second;
  };
  auto get = [&](const char* key) {
    auto it = kv.find(key);
    return it == kv.end() ? std::string() : it->second;
  };
  s.source = need("source");
  s.claim = need("claim");
  s.comparison = need("comparison");
  const ComparisonKind* kind = find_comparison(s.comparison);
  if (kind == nullptr)
    throw std::runtime_error(where + ": claim " + s.id + ": comparison '" + s.comparison + "' is not one of " +
                             comparison_names());
  s.treatment = need("treatment");
  s.control = get("control");
  s.untestable = get("untestable");
  s.by_construction = get("by_construction");
  s.requires_floor = get("requires");
  if (!s.requires_floor.empty()) {
    try {
      for (const CompetenceFloor& floor : parse_floors(s.requires_floor))
        if (floor.on == "control" && s.control.empty() && !kind->needs_control)
          throw std::invalid_argument("'" + floor.text + "': 'on control', but the claim has no control");
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": claim " + s.id + ": requires: " + e.what());
    }
  }
  if (kind->needs_control) s.control = need("control");
  if (kind->needs_over) s.over = need("over");
  if (kind->reads_table) {
    s.table = need("table");
    s.x = need("x");
    s.y = need("y");
    s.rows = get("rows");
  } else {
    s.metric = need("metric");
    check_metric(where, s.id, "metric", s.metric);
  }
  for (const char* key : {"treatment", "control", "rows"}) check_selector(where, s.id, key, get(key));
  for (const auto& [key, value] : kv)
    if (key.rfind("revised.", 0) == 0) s.revisions.push_back(parse_revision(key, value, where + ": claim " + s.id));
  // The claimed region: `region = lo .. hi`, or claimed ± tolerance (or × / ÷ factor).
  const std::string region = get("region"), claimed = get("claimed"), tol = get("tolerance");
  if (!region.empty()) {
    size_t dots = region.find("..");
    if (dots == std::string::npos || !parse_number(region.substr(0, dots), &s.region_lo) ||
        !parse_number(region.substr(dots + 2), &s.region_hi) || !(s.region_lo < s.region_hi))
      throw std::runtime_error(where + ": claim " + s.id + ": region '" + region + "' is not 'lo .. hi' with lo < hi");
    s.claimed_text = claimed.empty() ? region : claimed + " (" + region + ")";
  } else {
    double c, t;
    if (!parse_number(claimed, &c))
      throw std::runtime_error(where + ": claim " + s.id + ": claimed '" + claimed + "' is not a number (or give region)");
    const std::string tt = trim_blanks(tol);
    if (!tt.empty() && tt[0] == 'x') {
      if (!parse_number(tt.substr(1), &t) || t <= 1 || c <= 0)
        throw std::runtime_error(where + ": claim " + s.id + ": tolerance '" + tol +
                                 "' needs a factor > 1 and a positive claimed value");
      s.region_lo = c / t;
      s.region_hi = c * t;
      s.claimed_text = claimed + " (x/" + trim_blanks(tt.substr(1)) + ")";
    } else {
      if (!parse_number(tt, &t) || t < 0)
        throw std::runtime_error(where + ": claim " + s.id + ": tolerance '" + tol + "' is not a number >= 0");
      s.region_lo = c - t;
      s.region_hi = c + t;
      s.claimed_text = claimed + " +- " + tt;
    }
  }
}

// "known.h2o", "known_metric.h2o", "projected.h2o" and "served.h2o" -> "h2o"
// (and "revised.2026-12-06" -> its date); "" for any other key.
std::string known_key_name(const std::string& key) {
  for (const char* prefix : {"known.", "known_metric.", "projected.", "served.", "revised."}) {
    const std::string p = prefix;
    if (key.rfind(p, 0) != 0) continue;
    const std::string name = key.substr(p.size());
    const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '_' || c == '-';
    });
    return ok ? name : std::string();
  }
  return "";
}

// A claim's projected (or served) row: its runs and comparison on a
// projected metric (or on one of the real server here).
ClaimSpec projected_spec(const ClaimSpec& claim, const std::string& key, const std::string& metric,
                         const std::string& where) {
  if (!find_comparison(claim.comparison)->takes_projected_metric())
    throw std::runtime_error(where + ": claim " + claim.id + ": " + key + " on a " + claim.comparison +
                             " claim (a projected row reads one metric per run)");
  ClaimSpec k = claim;
  k.known_method = known_key_name(key);
  k.of_claim = claim.id;
  k.id = claim.id + "@" + k.known_method;
  k.projected = true;
  k.served = key.rfind("served.", 0) == 0;
  k.metric = metric;
  k.untestable.clear();  // what cannot be measured here may still be projected
  check_metric(where, claim.id, key, k.metric);
  return k;
}

// The rows of a claim's known methods: the claim with the method's runs as
// the treatment (and its own metric where the method names the same
// quantity differently), in the order of their names.
std::vector<ClaimSpec> known_specs(const ClaimSpec& claim, const std::map<std::string, std::string>& kv,
                                   const std::string& where) {
  std::vector<ClaimSpec> out;
  for (const auto& [key, value] : kv) {
    if (key.rfind("known_metric.", 0) == 0 && !kv.count("known." + known_key_name(key)))
      throw std::runtime_error(where + ": claim " + claim.id + ": " + key + " without known." + known_key_name(key));
    if (key.rfind("projected.", 0) == 0 || key.rfind("served.", 0) == 0) {
      out.push_back(projected_spec(claim, key, value, where));
      continue;
    }
    if (key.rfind("known.", 0) != 0) continue;
    ClaimSpec k = claim;
    k.known_method = known_key_name(key);
    k.of_claim = claim.id;
    k.id = claim.id + "@" + k.known_method;
    if (value.empty()) throw std::runtime_error(where + ": claim " + claim.id + ": " + key + " has no run selector");
    k.treatment = value;
    check_selector(where, claim.id, key, value);
    auto metric = kv.find("known_metric." + k.known_method);
    if (metric != kv.end()) {
      if (reads_table(claim))
        throw std::runtime_error(where + ": claim " + claim.id + ": known_metric." + k.known_method + " on a " +
                                 claim.comparison + " claim (it reads a table, not a metric)");
      k.metric = metric->second;
      check_metric(where, claim.id, "known_metric." + k.known_method, k.metric);
    }
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace

std::vector<ClaimSpec> parse_registry(const std::string& text, const std::string& file) {
  static const std::set<std::string> kKeys = {"source", "claim",   "metric",    "comparison", "treatment",
                                              "control", "over",   "table",     "x",          "y",
                                              "claimed", "tolerance", "region", "untestable",
                                              "by_construction", "rows", "requires"};
  std::vector<ClaimSpec> specs;
  std::vector<std::map<std::string, std::string>> values;
  std::set<std::string> ids;
  std::istringstream in(text);
  std::string raw;
  int n = 0;
  while (std::getline(in, raw)) {
    ++n;
    const std::string line = trim_blanks(raw);
    const std::string where = file + ":" + std::to_string(n);
    if (line.empty() || line[0] == '#') continue;
    if (line.front() == '[') {
      if (line.back() != ']' || line.rfind("[claim ", 0) != 0)
        throw std::runtime_error(where + ": expected a section [claim ID], got '" + line + "'");
      ClaimSpec s;
      s.id = trim_blanks(line.substr(7, line.size() - 8));
      if (s.id.empty() || s.id.find_first_of(" \t") != std::string::npos)
        throw std::runtime_error(where + ": bad claim id '" + s.id + "'");
      if (!ids.insert(s.id).second) throw std::runtime_error(where + ": claim " + s.id + " is defined twice");
      s.file = file;
      s.line = n;
      specs.push_back(s);
      values.emplace_back();
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) throw std::runtime_error(where + ": expected key = value, got '" + line + "'");
    const std::string key = trim_blanks(line.substr(0, eq));
    if (specs.empty()) throw std::runtime_error(where + ": key " + key + " before any [claim ID] section");
    if (!kKeys.count(key) && known_key_name(key).empty())
      throw std::runtime_error(where + ": claim " + specs.back().id + ": unknown key " + key);
    if (!values.back().emplace(key, trim_blanks(line.substr(eq + 1))).second)
      throw std::runtime_error(where + ": claim " + specs.back().id + ": key " + key + " given twice");
  }
  if (specs.empty()) throw std::runtime_error(file + ": no [claim ID] sections");
  std::vector<ClaimSpec> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string where = file + ":" + std::to_string(specs[i].line);
    finish_spec(specs[i], values[i], where);
    out.push_back(specs[i]);
    for (ClaimSpec& k : known_specs(specs[i], values[i], where)) out.push_back(std::move(k));
  }
  return out;
}

std::string revision_dates(const ClaimSpec& s) {
  std::string dates;
  for (const auto& rev : s.revisions) dates += (dates.empty() ? "" : ",") + rev.date;
  return dates;
}

std::string read_registry(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("claims registry '" + path + "' cannot be read (give one with --registry PATH)");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<ClaimSpec> load_registry(const std::string& path) { return parse_registry(read_registry(path), path); }

std::string registry_hash(const std::string& text) { return hash_hex(text); }

}  // namespace zl
