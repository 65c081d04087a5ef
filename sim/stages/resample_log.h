// The sfvl event log and the re-sampling metrics of docs/design.md#metrics-and-cost, as pure
// functions of the log so that tests can feed a hand-made one.
//
// One event per verifier check (every token the decoder proposes). A check
// `fires` when the confidence is below verify.threshold; it `resamples` when
// retries are left: the newest `dropped` tokens (`before`) go, and the
// tokens the decoder produces at those positions next (`after`) are its
// outcome. Outcomes are compared with the checker (violations in the
// continuation up to the checked token) and with a judge's mean NLL of the
// replaced tokens: the independent judge's (sim/judge.h) and the run's own
// LM's (self-judged: the model grading its own alternatives), kept apart.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace zl {

struct VerifyEvent {
  std::string pass = "quality";  // quality | context | ood: which decode produced it
  int64_t item = 0;              // prompt index within its pass
  int64_t position = 0;          // index of the checked token in the continuation
  int64_t context_len = 0;       // tokens in the sequence, the checked one included
  int32_t proposed = 0;          // the checked token
  double score = 0;              // verifier confidence
  bool fired = false;            // score < threshold
  bool first = true;             // the position's first check: its token was not drawn by a re-sample
  bool resampled = false;        // fired with retries left: tokens dropped
  int64_t dropped = 0;
  std::vector<int32_t> prefix;   // the sequence before the dropped tokens (prompt included)
  int64_t prompt_len = 0;        // prompt tokens at the start of `prefix`
  std::vector<int32_t> before, after;  // dropped tokens, and what replaced them (empty: never resolved)
  int64_t violation_before = -1, violation_after = -1;  // checker counts (-1: no checker)
  double nll_before = NAN, nll_after = NAN;             // the judge's mean NLL of before / after (nats/token)
  double nll_before_self = NAN, nll_after_self = NAN;   // the same under the run's own LM

  bool resolved() const { return resampled && after.size() == before.size() && !after.empty(); }
};

struct ResampleRates {
  int64_t checks = 0, fired = 0, resamples = 0, resolved = 0;
  double trigger_rate = NAN;        // fired / checks
  double exhausted_rate = NAN;      // fired but kept (no retries left) / fired
  double same_rate = NAN;           // after == before, over resolved re-samples
  double equiv_rate = NAN;          // same violation count and |Δ judge NLL| < epsilon, over resolved (needs a
                                    // checker and the judge)
  double equiv_rate_self = NAN;     // the same with the run's own LM as the judge
  double fix_rate = NAN;            // fewer violations after, over resolved (needs a checker)
  // Over the resolved re-samples that changed the tokens (after != before):
  // a re-sample that draws the very tokens it dropped is equivalent by
  // definition, so these say how often a *different* outcome is as good.
  int64_t changed = 0;
  double equiv_changed_rate = NAN;       // the judge's
  double equiv_changed_rate_self = NAN;  // the run's own LM's
};

// The share of first checks (VerifyEvent::first) that fired, over the events
// for which `keep` is true (all when null): the verifier's verdict on what
// the model proposes, apart from its re-checks of its own re-samples (the
// operating point of sim/operating_point.h). NaN without a first check.
double first_check_trigger_rate(const std::vector<VerifyEvent>& events, bool (*keep)(const VerifyEvent&) = nullptr);
// The same at a context shorter than `short_context` tokens ("short text").
double first_check_trigger_rate_short(const std::vector<VerifyEvent>& events, int64_t short_context,
                                      bool (*keep)(const VerifyEvent&) = nullptr);

// Rates over the events for which `keep` is true (all when null).
ResampleRates resample_rates(const std::vector<VerifyEvent>& events, double equiv_epsilon,
                             bool (*keep)(const VerifyEvent&) = nullptr);

// The same rates by context length: bucket b holds events with context_len
// in [edges[b], edges[b+1]).
std::vector<ResampleRates> rates_by_context(const std::vector<VerifyEvent>& events, const std::vector<int64_t>& edges,
                                            double equiv_epsilon);

}  // namespace zl
