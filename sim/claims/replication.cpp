#include "sim/claims/replication.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "sim/claims/claim_tables.h"

namespace zl {

namespace {

bool has_interval(const ClaimResult& r) { return std::isfinite(r.lo) && std::isfinite(r.hi); }

// Whether the interval [lo, hi] holds a finite boundary of the row's claimed region.
bool holds_boundary(const ClaimResult& r) {
  if (!has_interval(r) || !r.spec) return false;
  for (double edge : {r.spec->region_lo, r.spec->region_hi})
    if (std::isfinite(edge) && r.lo <= edge && edge <= r.hi) return true;
  return false;
}

std::string row_key(const SizedClaims& sc, bool sized, const ClaimResult& r) {
  return sized ? sc.size.label + "/" + r.spec->id : r.spec->id;
}

std::string side_text(const ClaimResult* r) {
  if (!r) return "-";
  std::string s = format_value(r->value);
  if (has_interval(*r)) s += " [" + format_value(r->lo) + ", " + format_value(r->hi) + "]";
  s += " " + r->verdict;
  if (!r->verdict_holm.empty() && r->verdict_holm != r->verdict) s += " (Holm " + r->verdict_holm + ")";
  return s;
}

}  // namespace

std::string decision(const ClaimResult& r) { return r.verdict_holm.empty() ? r.verdict : r.verdict_holm; }

std::vector<ReplicatedRow> replicate(const std::vector<SizedClaims>& a, const std::vector<SizedClaims>& b) {
  const bool sized = a.size() > 1 || b.size() > 1;
  std::map<std::string, const ClaimResult*> in_b;
  std::vector<std::string> b_order;
  for (const auto& sc : b)
    for (const auto& r : sc.results) {
      const auto key = row_key(sc, sized, r);
      if (in_b.emplace(key, &r).second) b_order.push_back(key);
    }
  std::vector<ReplicatedRow> rows;
  std::map<std::string, bool> seen;
  for (const auto& sc : a)
    for (const auto& r : sc.results) {
      ReplicatedRow row;
      row.id = row_key(sc, sized, r);
      if (seen[row.id]) continue;
      seen[row.id] = true;
      row.a = &r;
      auto it = in_b.find(row.id);
      row.b = it == in_b.end() ? nullptr : it->second;
      rows.push_back(row);
    }
  for (const auto& key : b_order)
    if (!seen[key]) {
      ReplicatedRow row;
      row.id = key;
      row.b = in_b[key];
      rows.push_back(row);
    }
  for (auto& row : rows) {
    if (!row.a || !row.b) {
      row.reading = "one file only";
      continue;
    }
    const ClaimResult &x = *row.a, &y = *row.b;
    row.overlap = has_interval(x) && has_interval(y) && x.lo <= y.hi && y.lo <= x.hi;
    row.plain_agree = x.verdict == y.verdict;
    row.agree = decision(x) == decision(y);
    if (row.agree)
      row.reading = "agree";
    else if (row.overlap || holds_boundary(x) || holds_boundary(y))
      row.reading = "near the boundary";
    else
      row.reading = "differ";
  }
  return rows;
}

std::string format_replication(const std::vector<ReplicatedRow>& rows, const std::string& a_name,
                               const std::string& b_name) {
  std::ostringstream out;
  out << "Replication: A = " << a_name << ", B = " << b_name
      << " (value [interval] verdict, each file judged by the same registry)\n";
  char line[1024];
  std::snprintf(line, sizeof line, "%-30s %-44s %-44s %-8s %-7s %s\n", "claim", "A", "B", "overlap", "agree",
                "reading");
  out << line;
  std::map<std::string, int> counts;
  for (const auto& r : rows) {
    const bool both = r.a && r.b;
    std::snprintf(line, sizeof line, "%-30s %-44s %-44s %-8s %-7s %s\n", r.id.c_str(), side_text(r.a).c_str(),
                  side_text(r.b).c_str(), both ? (r.overlap ? "yes" : "no") : "-",
                  both ? (r.agree ? "yes" : "no") : "-", r.reading.c_str());
    out << line;
    ++counts[r.reading];
  }
  out << rows.size() << " rows: " << counts["agree"] << " agree, " << counts["near the boundary"]
      << " near the boundary, " << counts["differ"] << " differ";
  if (counts["one file only"]) out << ", " << counts["one file only"] << " in one file only";
  out << "\n";
  return out.str();
}

}  // namespace zl
