// A row's interval and verdict, and Holm's correction across the rows.
#include "sim/claims/claim_verdicts.h"

#include <algorithm>
#include <limits>

#include "sim/claims/claim_tables.h"
#include "sim/claims/claims_calibration.h"

namespace zl {

Judgement judge_estimate(const MeanEstimate& e, CiMethod m, double region_lo, double region_hi, double level) {
  Judgement j;
  if (!e.has(m)) {
    j.verdict = "inconclusive";
    return j;
  }
  j.p_support = std::max(e.p_above(m, region_lo), e.p_below(m, region_hi));
  j.p_refute = std::min(e.p_below(m, region_lo), e.p_above(m, region_hi));
  const double alpha = (1 - level) / 2;
  j.verdict = j.p_support < alpha ? "supported" : j.p_refute < alpha ? "refuted" : "inconclusive";
  return j;
}

double nearest_boundary(const ClaimSpec& s, double mean) {
  if (std::isinf(s.region_lo)) return s.region_hi;
  if (std::isinf(s.region_hi)) return s.region_lo;
  return std::abs(mean - s.region_lo) < std::abs(mean - s.region_hi) ? s.region_lo : s.region_hi;
}

void judge_row(ClaimResult& r, const Measurement& m, const ClaimsOptions& opt, const Calibration& cal) {
  const ClaimSpec& s = *r.spec;
  auto add_note = [&](const std::string& t) { r.note += (r.note.empty() ? "" : "; ") + t; };
  if (!m.problem.empty()) {
    r.verdict = m.problem.rfind("missing", 0) == 0 ? "missing" : "inconclusive";
    r.note = m.problem;
  } else {
    std::vector<double> v;
    for (const auto& [seed, x] : m.per_seed) v.push_back(x);
    MeanEstimate e(v);
    r.seeds = e.n();
    r.method = opt.method == "auto" ? cal.best(e.n()) : parse_method(opt.method);
    r.t = e.interval(CiMethod::t, opt.level);
    r.percentile = e.interval(CiMethod::percentile, opt.level);
    r.bca = e.interval(CiMethod::bca, opt.level);
    const Interval ci = e.interval(r.method, opt.level);
    r.value = e.mean();
    r.sd = e.sd();
    r.lo = ci.lo;
    r.hi = ci.hi;
    r.note = m.note;
    const Judgement j = judge_estimate(e, r.method, s.region_lo, s.region_hi, opt.level);
    r.p_support = j.p_support;
    r.p_refute = j.p_refute;
    if (e.n() < kMinSeeds) {
      r.verdict = "inconclusive";
      add_note(std::to_string(e.n()) + " seed(s); a verdict needs >= " + std::to_string(kMinSeeds));
    } else {
      r.verdict = j.verdict;
      if (r.verdict == "inconclusive")
        add_note("interval straddles the claimed region [" + format_value(s.region_lo) + ", " +
                 format_value(s.region_hi) + "]");
    }
    if (r.verdict == "inconclusive" && e.n() >= 2)
      r.seeds_needed = std::max<int64_t>(e.n() + 1, seeds_needed(r.value - nearest_boundary(s, r.value), e.sd(),
                                                                 opt.level, opt.power));
  }
  // Below its competence floor the row is not judged: the difference of two
  // models that fail the task is not the claim's (docs/design.md#competence).
  // Every floor must hold; the first is the one the table's competence column shows.
  if (!m.floors.empty() && m.problem.empty()) {
    r.competence = m.competence.front().measured ? m.competence.front().value : NAN;
    for (size_t i = 0; i < m.floors.size(); ++i) {
      if (m.competence[i].met) continue;
      r.note = floor_note(m.floors[i], m.competence[i]) + "; would be " + r.verdict + (r.note.empty() ? "" : "; " + r.note);
      r.verdict = "untestable";
      r.seeds_needed = 0;
      break;
    }
  }
  if (!s.untestable.empty()) {
    r.note = "untestable: " + s.untestable + (r.verdict == "missing" ? "" : "; would be " + r.verdict) +
             (r.note.empty() ? "" : "; " + r.note);
    r.verdict = "untestable";
    r.seeds_needed = 0;
  }
  if (is_known_row(r) || !s.by_construction.empty()) r.seeds_needed = 0;
}

namespace {

bool judged_from_data(const ClaimResult& r) {
  return r.spec->untestable.empty() && r.spec->by_construction.empty() && !is_known_row(r) && r.seeds >= kMinSeeds &&
         (r.verdict == "supported" || r.verdict == "refuted" || r.verdict == "inconclusive");
}

}  // namespace

void apply_holm(std::vector<ClaimResult>& results, double level) {
  std::vector<double> p(results.size(), std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0; i < results.size(); ++i)
    if (judged_from_data(results[i])) p[i] = std::min(results[i].p_support, results[i].p_refute);
  const std::vector<double> adjusted = holm_adjust(p);
  const double alpha = (1 - level) / 2;
  for (size_t i = 0; i < results.size(); ++i) {
    ClaimResult& r = results[i];
    if (std::isnan(p[i])) {
      r.verdict_holm = is_known_row(r)                      ? ""
                       : !r.spec->by_construction.empty() ? "by construction"
                                                          : r.verdict;
      continue;
    }
    const bool decided = adjusted[i] < alpha;
    r.verdict_holm = !decided ? "inconclusive" : r.p_support <= r.p_refute ? "supported" : "refuted";
  }
}

}  // namespace zl
