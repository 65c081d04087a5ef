#include "sim/stages/resample_log.h"

#include <cstdint>

namespace zl {
namespace {

double first_rate(const std::vector<VerifyEvent>& events, int64_t below, bool (*keep)(const VerifyEvent&)) {
  int64_t first = 0, fired = 0;
  for (const auto& e : events) {
    if (!e.first || e.context_len >= below || (keep && !keep(e))) continue;
    ++first;
    fired += e.fired;
  }
  return first > 0 ? static_cast<double>(fired) / first : NAN;
}

}  // namespace

double first_check_trigger_rate(const std::vector<VerifyEvent>& events, bool (*keep)(const VerifyEvent&)) {
  return first_rate(events, INT64_MAX, keep);
}

double first_check_trigger_rate_short(const std::vector<VerifyEvent>& events, int64_t short_context,
                                      bool (*keep)(const VerifyEvent&)) {
  return first_rate(events, short_context, keep);
}

ResampleRates resample_rates(const std::vector<VerifyEvent>& events, double eps, bool (*keep)(const VerifyEvent&)) {
  ResampleRates r;
  int64_t same = 0, equiv = 0, equiv_self = 0, fix = 0, judged = 0, judge_scored = 0, self_scored = 0;
  int64_t equiv_changed = 0, equiv_changed_self = 0;
  for (const auto& e : events) {
    if (keep && !keep(e)) continue;
    ++r.checks;
    r.fired += e.fired;
    r.resamples += e.resampled;
    if (!e.resolved()) continue;
    ++r.resolved;
    const bool changed = e.after != e.before;
    same += !changed;
    r.changed += changed;
    if (e.violation_before < 0 || e.violation_after < 0) continue;
    ++judged;
    fix += e.violation_after < e.violation_before;
    const bool same_verdict = e.violation_after == e.violation_before;
    if (std::isfinite(e.nll_before) && std::isfinite(e.nll_after)) {
      ++judge_scored;
      const bool eq = same_verdict && std::abs(e.nll_after - e.nll_before) < eps;
      equiv += eq;
      equiv_changed += changed && eq;
    }
    if (std::isfinite(e.nll_before_self) && std::isfinite(e.nll_after_self)) {
      ++self_scored;
      const bool eq = same_verdict && std::abs(e.nll_after_self - e.nll_before_self) < eps;
      equiv_self += eq;
      equiv_changed_self += changed && eq;
    }
  }
  auto share = [](int64_t a, int64_t b) { return b > 0 ? static_cast<double>(a) / b : NAN; };
  r.trigger_rate = share(r.fired, r.checks);
  r.exhausted_rate = share(r.fired - r.resamples, r.fired);
  r.same_rate = share(same, r.resolved);
  // Equivalence and fixes need the checker's verdict on every resolved re-sample.
  // Equivalence also needs every one scored by its judge (none: no judge).
  r.equiv_rate = judged == r.resolved && judge_scored == r.resolved ? share(equiv, r.resolved) : NAN;
  r.equiv_rate_self = judged == r.resolved && self_scored == r.resolved ? share(equiv_self, r.resolved) : NAN;
  r.fix_rate = judged == r.resolved ? share(fix, r.resolved) : NAN;
  // Defined exactly when the rate over every re-sample is (each resolved one scored).
  r.equiv_changed_rate = !std::isnan(r.equiv_rate) ? share(equiv_changed, r.changed) : NAN;
  r.equiv_changed_rate_self = !std::isnan(r.equiv_rate_self) ? share(equiv_changed_self, r.changed) : NAN;
  return r;
}

std::vector<ResampleRates> rates_by_context(const std::vector<VerifyEvent>& events, const std::vector<int64_t>& edges,
                                            double eps) {
  std::vector<ResampleRates> out;
  for (size_t b = 0; b + 1 < edges.size(); ++b) {
    std::vector<VerifyEvent> in;
    for (const auto& e : events)
      if (e.context_len >= edges[b] && e.context_len < edges[b + 1]) in.push_back(e);
    out.push_back(resample_rates(in, eps));
  }
  return out;
}

}  // namespace zl
