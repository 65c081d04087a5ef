// The claims as tables for the results file and as text for the terminal.
#include "sim/claims/claim_tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "sim/claims/claim_measurement.h"
#include "sim/util/format.h"

namespace zl {
namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return significant(v, 4);
}

Table claim_seeds_table(const std::vector<ClaimResult>& results) {
  std::vector<std::string> id;
  std::vector<int64_t> seed;
  std::vector<double> value;
  for (const auto& r : results)
    for (const auto& [s, v] : r.per_seed) {
      id.push_back(r.spec->id);
      seed.push_back(s);
      value.push_back(v);
    }
  Table t;
  t.add("id", id);
  t.add("seed", seed);
  t.add("value", value);
  return t;
}

Table claims_table(const std::vector<ClaimResult>& results) {
  std::vector<std::string> id, source, claim, metric, comparison, treatment, control, claimed, verdict, note, method,
      verdict_holm, known_method, projection, of_claim, by_construction, operating_point, requires_floor, commit_list,
      revised;
  std::vector<double> lo_r, hi_r, value, lo, hi, t_lo, t_hi, boot_lo, boot_hi, bca_lo, bca_hi, p_support, p_refute,
      competence;
  std::vector<int64_t> seeds, needed, commits;
  for (const auto& r : results) {
    const ClaimSpec& s = *r.spec;
    id.push_back(s.id);
    source.push_back(s.source);
    claim.push_back(s.claim);
    metric.push_back(reads_table(s)
                         ? s.y + " ~ " + s.x + " in " + s.table + (s.rows.empty() ? "" : " where " + s.rows)
                         : s.metric);
    comparison.push_back(s.comparison + (s.over.empty() ? "" : " over " + s.over));
    treatment.push_back(s.treatment);
    control.push_back(s.control);
    claimed.push_back(s.claimed_text);
    lo_r.push_back(s.region_lo);
    hi_r.push_back(s.region_hi);
    value.push_back(r.value);
    lo.push_back(r.lo);
    hi.push_back(r.hi);
    seeds.push_back(r.seeds);
    verdict.push_back(r.verdict);
    note.push_back(r.note);
    method.push_back(r.seeds > 0 ? method_name(r.method) : "");
    t_lo.push_back(r.seeds > 0 ? r.t.lo : kNaN);
    t_hi.push_back(r.seeds > 0 ? r.t.hi : kNaN);
    boot_lo.push_back(r.seeds > 0 ? r.percentile.lo : kNaN);
    boot_hi.push_back(r.seeds > 0 ? r.percentile.hi : kNaN);
    bca_lo.push_back(r.seeds > 0 ? r.bca.lo : kNaN);
    bca_hi.push_back(r.seeds > 0 ? r.bca.hi : kNaN);
    p_support.push_back(r.p_support);
    p_refute.push_back(r.p_refute);
    verdict_holm.push_back(r.verdict_holm);
    needed.push_back(r.seeds_needed);
    known_method.push_back(s.projected ? "" : s.known_method);
    projection.push_back(s.projected ? s.known_method : "");
    of_claim.push_back(s.of_claim);
    by_construction.push_back(s.by_construction);
    operating_point.push_back(r.operating_point);
    requires_floor.push_back(s.requires_floor);
    competence.push_back(r.competence);
    commits.push_back(static_cast<int64_t>(r.commits.size()));
    std::string list;
    for (const auto& c : r.commits) list += (list.empty() ? "" : ",") + c;
    commit_list.push_back(list);
    revised.push_back(revision_dates(s));
  }
  Table t;
  t.add("id", id);
  t.add("source", source);
  t.add("claim", claim);
  t.add("metric", metric);
  t.add("comparison", comparison);
  t.add("treatment", treatment);
  t.add("control", control);
  t.add("claimed", claimed);
  t.add("region_lo", lo_r);
  t.add("region_hi", hi_r);
  t.add("value", value);
  t.add("ci_lo", lo);
  t.add("ci_hi", hi);
  t.add("seeds", seeds);
  t.add("verdict", verdict);
  t.add("note", note);
  t.add("method", method);
  t.add("t_lo", t_lo);
  t.add("t_hi", t_hi);
  t.add("boot_lo", boot_lo);
  t.add("boot_hi", boot_hi);
  t.add("bca_lo", bca_lo);
  t.add("bca_hi", bca_hi);
  t.add("p_support", p_support);
  t.add("p_refute", p_refute);
  t.add("verdict_holm", verdict_holm);
  t.add("seeds_needed", needed);
  t.add("known_method", known_method);
  t.add("projection", projection);  // a projected row's name ("" for measured rows)
  t.add("of_claim", of_claim);
  t.add("by_construction", by_construction);  // why the value is fixed by the design ("": a finding)
  t.add("operating_point", operating_point);  // the calibrated targets of its runs (sim/operating_point.h)
  t.add("requires", requires_floor);  // its competence floor (sim/claims/competence_floor.h), "" for none
  t.add("competence", competence);     // the floor's metric as read on its side's runs (NaN: no floor)
  t.add("commits", commits);           // how many commits its runs ran at or were trained by; > 1: mixed
  t.add("commit_list", commit_list);   // those commits, comma-separated
  t.add("revised", revised);           // dates its reading changed after its data was seen, comma-separated
  return t;
}

std::string format_plan(const std::vector<ClaimResult>& results, const std::string& study, double power) {
  // Beyond this many seeds more seeds is not the answer: a larger effect (a bigger model, a longer run) is.
  constexpr int64_t kPlanCap = 64;
  std::ostringstream out;
  char line[256];
  std::vector<const ClaimResult*> rows;
  for (const auto& r : results)
    if (r.seeds_needed > 0) rows.push_back(&r);
  if (rows.empty()) return "no inconclusive claim with 2 or more seeds: nothing to plan\n";
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ClaimResult* a, const ClaimResult* b) { return a->seeds_needed < b->seeds_needed; });
  std::snprintf(line, sizeof line, "%-28s %6s %7s  %s\n", "inconclusive claim", "seeds", "needed",
                "boundary to exclude (observed mean, sd over seeds)");
  out << line;
  int64_t most = 0;
  for (const ClaimResult* r : rows) {
    std::snprintf(line, sizeof line, "%-28s %6d %7lld  %s (%s, %s)\n", r->spec->id.c_str(), r->seeds,
                  static_cast<long long>(r->seeds_needed), format_value(nearest_boundary(*r->spec, r->value)).c_str(),
                  format_value(r->value).c_str(), format_value(r->sd).c_str());
    out << line;
    if (r->seeds_needed <= kPlanCap) most = std::max(most, r->seeds_needed);
  }
  std::snprintf(line, sizeof line,
                "seeds needed: a power estimate (%.0f%% chance that a t interval excludes the boundary if the\n"
                "observed mean and spread were the truth), not a promise.\n",
                100 * power);
  out << line;
  // Issue 29 item 7: a per-fact row has many units per seed, but the t
  // interval above is over seeds, so only the spread it plans with shrinks.
  out << "the unit is the seed on every row: a per-fact row (ID/per-fact) pools a run's judged statements,\n"
         "which lowers the sampling noise in each seed's value (not the spread training adds between seeds);\n"
         "its interval still counts seeds.\n";
  if (most == 0) {
    out << "every row needs more than " << kPlanCap
        << " seeds: decide them with a larger effect (a bigger model, longer training), not more seeds\n";
    return out.str();
  }
  std::string seeds = "1";
  for (int64_t s = 2; s <= most; ++s) seeds += "," + std::to_string(s);
  out << "\nto run " << most << " seeds (complete runs are kept; only the new seeds run):\n  zerolayer ablate " << study
      << " --seed " << seeds << "\n";
  out << "on a cluster, one slice per task, then merge:\n  zerolayer ablate " << study << " --seed " << seeds
      << " --shard i/N   # i = 0..N-1\n  zerolayer merge OUTPUT_DIR\n";
  for (const ClaimResult* r : rows)
    if (r->seeds_needed > kPlanCap)
      out << r->spec->id << " would need " << r->seeds_needed << " seeds: beyond " << kPlanCap
          << ", decide it with a larger effect (a bigger model, longer training), not more seeds\n";
  return out.str();
}

namespace {

// "mean [lo, hi]", the mean alone where there is no interval, "-" without a value.
std::string measured_cell(const ClaimResult& r) {
  if (std::isnan(r.value)) return "-";
  if (std::isnan(r.lo)) return format_value(r.value);
  return format_value(r.value) + " [" + format_value(r.lo) + ", " + format_value(r.hi) + "]";
}

// "5, bca": the seeds and the interval method, "-" without seeds.
std::string seeds_cell(const ClaimResult& r) {
  return r.seeds > 0 ? std::to_string(r.seeds) + ", " + method_name(r.method) : "-";
}

// A known method's row, under its claim: where the method lies against the
// claimed region, said as a place rather than a verdict.
std::string format_known(const ClaimResult& r) {
  const ClaimSpec& s = *r.spec;
  const std::string m = measured_cell(r), n = seeds_cell(r);
  const std::string where = r.verdict == "supported"      ? "inside the region"
                            : r.verdict == "refuted"      ? "outside the region"
                            : r.verdict == "inconclusive" ? "straddles the region"
                                                          : r.verdict;
  char line[512];
  std::snprintf(line, sizeof line, "  %-26s %-30s %-22s %-12s %s\n", ("@" + s.known_method).c_str(), m.c_str(),
                s.served ? "(served here)" : s.projected ? "(projected)" : "(known method)", n.c_str(), where.c_str());
  std::string out = line;
  const std::string how = reads_table(s) ? s.y + " ~ " + s.x + " (" + s.table + ")" : s.metric;
  out += "    " + how + ", " + s.comparison + ": " + s.treatment + (s.control.empty() ? "" : " vs " + s.control) + "\n";
  if (!r.note.empty()) out += "    " + r.note + "\n";
  return out;
}

}  // namespace

std::string format_claims(const std::vector<ClaimResult>& results, bool holm) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-28s %-30s %-22s %-12s %s%s\n", "claim", "measured [95% CI]", "claimed",
                "n, method", "verdict", holm ? "        Holm" : "");
  out << line;
  // Rows true by construction (docs/design.md#claims-and-statistics) come
  // last, apart, with their known methods' rows: manipulation checks, not
  // findings.
  std::vector<const ClaimResult*> order, apart;
  for (const auto& r : results) (r.spec->by_construction.empty() ? order : apart).push_back(&r);
  if (!apart.empty()) order.push_back(nullptr);  // the heading of the rows apart
  order.insert(order.end(), apart.begin(), apart.end());
  for (const ClaimResult* row : order) {
    if (!row) {
      out << "\nby construction (a value fixed by the design or enforced by training: a manipulation check, "
             "outside the Holm family)\n";
      continue;
    }
    const ClaimResult& r = *row;
    const ClaimSpec& s = *r.spec;
    if (is_known_row(r)) {
      out << format_known(r);
      continue;
    }
    const std::string m = measured_cell(r), n = seeds_cell(r);
    std::string v = r.verdict;
    if (holm) v.resize(std::max<size_t>(v.size(), 13), ' ');
    std::snprintf(line, sizeof line, "%-28s %-30s %-22s %-12s %s%s\n", s.id.c_str(), m.c_str(),
                  s.claimed_text.c_str(), n.c_str(), v.c_str(), holm ? r.verdict_holm.c_str() : "");
    out << line;
    std::string how = reads_table(s)
                          ? s.y + " ~ " + s.x + " (" + s.table + (s.rows.empty() ? "" : " where " + s.rows) + ")"
                          : s.metric;
    how += ", " + s.comparison + (s.over.empty() ? "" : " over " + s.over) + ": " + s.treatment +
           (s.control.empty() ? "" : " vs " + s.control);
    out << "    " << s.source << ": " << s.claim << "\n    " << how << "\n";
    if (r.seeds >= 2 && r.method != CiMethod::percentile && !std::isnan(r.percentile.lo))
      out << "    percentile bootstrap [" << format_value(r.percentile.lo) << ", " << format_value(r.percentile.hi)
          << "]\n";
    if (r.seeds_needed > 0)
      out << "    seeds needed (power estimate, 80%): " << r.seeds_needed << "\n";
    if (!s.by_construction.empty()) out << "    by construction: " << s.by_construction << "\n";
    for (const auto& rev : s.revisions)
      out << "    revised " << rev.date << " after its data was seen: read " << rev.reading << " (" << rev.value
          << "): " << rev.reason << "\n";
    out << "    operating point: " << (r.operating_point.empty() ? "as configured" : r.operating_point) << "\n";
    if (!r.note.empty()) out << "    " << r.note << "\n";
  }
  return out.str();
}

}  // namespace zl
