// The verification layer (sfvl): the verifier's shape and training signal,
// the re-sampling policy (drops, retries, resolution), the metric definitions
// on a hand-made log, and decoding through the hook.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/sampling.h"
#include "models/transformer.h"
#include "models/verifier.h"
#include "sim/decoder.h"
#include "sim/stages/resample_log.h"
#include "sim/stages/verifier_training.h"
#include "sim/stages/verify_hook.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

// The verifier reads windows of a stream of digits 0-9: a vocabulary of
// about that many ids (12 by default).
ModelConfig tiny_lm(int64_t vocab = 12) {
  ModelConfig c = tiny_model();
  c.vocab = vocab;
  return c;
}

TEST(Verifier, ShapesAndParameterCount) {
  VerifierConfig vc{100, 5, 12};
  Verifier v(vc);
  int64_t numel = 0;
  for (const auto& p : v->parameters()) numel += p.numel();
  EXPECT_EQ(vc.parameter_count(), numel);
  auto c = v->confidence(torch::randint(100, {7, 5}, torch::kLong));
  ASSERT_EQ(c.sizes(), (std::vector<int64_t>{7}));
  EXPECT_TRUE((c >= 0).all().item<bool>() && (c <= 1).all().item<bool>());
}

TEST(Verifier, FastScoreEqualsTheModule) {
  torch::manual_seed(1);
  Verifier v(VerifierConfig{100, 5, 12});
  v->eval();
  auto w = torch::randint(100, {9, 5}, torch::kLong);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::allclose(v->score(w), v->confidence(w), 1e-5, 1e-5));
  // Wider (vector-width channels), and after the weights change in place
  // (as an optimiser step does): the prepared taps follow.
  Verifier wide(VerifierConfig{100, 5, 40});
  wide->eval();
  EXPECT_TRUE(torch::allclose(wide->score(w), wide->confidence(w), 1e-5, 1e-5));
  wide->conv1->weight.mul_(-1.5);
  wide->conv2->weight.add_(0.05);
  EXPECT_TRUE(torch::allclose(wide->score(w), wide->confidence(w), 1e-5, 1e-5));
}

TEST(Verifier, SizedForAShareOfTheModel) {
  auto vc = VerifierConfig::sized_for(1024, 5, 47000);
  EXPECT_NEAR(vc.parameter_count(), 47000, 1500);  // one width step is ~1.1k parameters here
  EXPECT_GT(VerifierConfig::sized_for(1024, 5, 200000).width, vc.width);
}

TEST(Verifier, WindowsAreRealOrCorruptedInTheirLastTokens) {
  torch::manual_seed(0);
  Transformer lm(tiny_lm());
  auto stream = (torch::arange(4000) % 10).to(torch::kInt);  // 0 1 2 ... 9 0 1 ...
  auto w = make_verifier_windows(lm, stream, 400, 5, 8, 3.0, 7);
  ASSERT_EQ(w.tokens.sizes(), (std::vector<int64_t>{400, 5}));
  auto diffs = w.tokens.narrow(1, 1, 4) - w.tokens.narrow(1, 0, 4);
  auto periodic = ((diffs == 1) | (diffs == -9)).all(1) & (w.tokens < 10).all(1);  // [N]
  // A window is labelled real exactly when it follows the stream.
  auto bad = (periodic.to(torch::kFloat) != w.labels).nonzero().squeeze(1);
  EXPECT_EQ(bad.numel(), 0) << w.tokens.index({bad}) << w.labels.index({bad});
  // The first three tokens are never touched (at most 2 are replaced).
  auto head = w.tokens.narrow(1, 0, 3);
  auto hd = head.narrow(1, 1, 2) - head.narrow(1, 0, 2);
  EXPECT_TRUE(((hd == 1) | (hd == -9)).all().item<bool>());
  const double real = w.labels.mean().item<double>();
  EXPECT_GT(real, 0.45);  // half are real by construction, a few corrupted ones come out real
  EXPECT_LT(real, 0.65);
}

TEST(Verifier, LearnsToSeparateRealFromCorrupted) {
  torch::manual_seed(0);
  Transformer lm(tiny_lm());
  auto stream = (torch::arange(6000) % 10).to(torch::kInt);
  auto train = make_verifier_windows(lm, stream, 2048, 5, 8, 3.0, 1);
  auto held = make_verifier_windows(lm, stream, 512, 5, 8, 3.0, 2);
  Verifier untrained(VerifierConfig{12, 5, 16});
  Verifier v = train_verifier(VerifierConfig{12, 5, 16}, train, 150, 3);
  torch::NoGradGuard no_grad;
  double before = auroc(untrained->confidence(held.tokens), held.labels);
  double after = auroc(v->confidence(held.tokens), held.labels);
  EXPECT_GT(after, 0.95);
  EXPECT_GT(after, before);
}

TEST(Verifier, AurocAndCalibrationOnKnownScores) {
  auto s = torch::tensor({0.15, 0.42, 0.35, 0.85}, torch::kDouble), y = torch::tensor({0.0, 0.0, 1.0, 1.0}, torch::kDouble);
  EXPECT_DOUBLE_EQ(auroc(s, y), 0.75);
  EXPECT_DOUBLE_EQ(auroc(torch::tensor({0.5, 0.5}), torch::tensor({0.0, 1.0})), 0.5);  // ties count half
  // Ten bins of 0.1, one score each: |0.15-0|, |0.42-0|, |0.35-1|, |0.85-1|.
  EXPECT_NEAR(calibration_error(s, y), (0.15 + 0.42 + 0.65 + 0.15) / 4, 1e-12);
  // Two scores in one bin are averaged before comparing with their labels.
  EXPECT_NEAR(calibration_error(torch::tensor({0.31, 0.39}, torch::kDouble), torch::tensor({0.0, 1.0}, torch::kDouble)),
              std::abs(0.35 - 0.5), 1e-12);
}

// A scorer that rejects every window ending in token 7.
WindowScorer reject_seven() {
  return [](const torch::Tensor& w) { return (w.select(1, w.size(1) - 1) != 7).to(torch::kFloat); };
}

VerifyPolicy policy(std::string drop, int64_t retries) { return {0.5, std::move(drop), 0.8, 0.3, retries}; }

TEST(VerifyHook, DropsAndReSamplesHotterBelowTheThreshold) {
  VerifyHook hook(reject_seven(), 3, policy("1", 3), 1, true);
  hook.begin_batch(2);
  auto v = hook.review({{1, 2, 3, 7}, {1, 2, 3, 4}}, {true, true});
  EXPECT_EQ(v.drop, (std::vector<int64_t>{1, 0}));
  EXPECT_DOUBLE_EQ(v.temperature[0], 0.8 + 0.3);
  EXPECT_DOUBLE_EQ(v.temperature[1], 0.8);
  ASSERT_EQ(hook.events.size(), 2u);
  EXPECT_TRUE(hook.events[0].fired && hook.events[0].resampled);
  EXPECT_EQ(hook.events[0].position, 0);
  EXPECT_EQ(hook.events[0].before, (std::vector<int32_t>{7}));
  EXPECT_FALSE(hook.events[1].fired);
  // The re-sample comes back with 5: the event is resolved.
  v = hook.review({{1, 2, 3, 5}, {1, 2, 3, 4, 6}}, {true, true});
  EXPECT_EQ(v.drop, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(hook.events[0].after, (std::vector<int32_t>{5}));
  EXPECT_TRUE(hook.events[0].resolved());
  EXPECT_EQ(hook.checks, 4);
  // The re-sampled 5 is a re-check of position 0; sequence 1's new token is a first check.
  EXPECT_TRUE(hook.events[0].first && hook.events[1].first);
  EXPECT_FALSE(hook.events[2].first);
  EXPECT_TRUE(hook.events[3].first);
  EXPECT_DOUBLE_EQ(first_check_trigger_rate(hook.events), 1.0 / 3);  // 7 fired; 4 and 6 passed
  EXPECT_DOUBLE_EQ(first_check_trigger_rate_short(hook.events, 5), 1.0 / 2);  // contexts of 4 tokens only
  EXPECT_TRUE(std::isnan(first_check_trigger_rate_short(hook.events, 4)));
}

TEST(VerifyHook, RetriesRunOutThenTheTokenIsKept) {
  VerifyHook hook(reject_seven(), 3, policy("1", 2), 1, true);
  hook.begin_batch(1);
  EXPECT_EQ(hook.review({{1, 2, 7}}, {true}).drop[0], 1);
  EXPECT_EQ(hook.review({{1, 2, 7}}, {true}).drop[0], 1);
  EXPECT_EQ(hook.review({{1, 2, 7}}, {true}).drop[0], 0);  // exhausted: kept
  EXPECT_TRUE(hook.events[2].fired);
  EXPECT_FALSE(hook.events[2].resampled);
  // Past the furthest fire, the budget is refilled.
  EXPECT_EQ(hook.review({{1, 2, 7, 4}}, {true}).drop[0], 0);
  EXPECT_EQ(hook.review({{1, 2, 7, 4, 7}}, {true}).drop[0], 1);
  auto r = resample_rates(hook.events, 0.5);
  EXPECT_EQ(r.checks, 5);
  EXPECT_EQ(r.fired, 4);
  EXPECT_EQ(r.resamples, 3);
  EXPECT_DOUBLE_EQ(r.exhausted_rate, 0.25);
}

TEST(VerifyHook, DropOfTwoStopsAtThePromptAndResolvesAtTheSameLength) {
  VerifyHook hook(reject_seven(), 3, policy("2", 5), 1, true);
  hook.begin_batch(1);
  EXPECT_EQ(hook.review({{1, 2, 7}}, {true}).drop[0], 1);  // only one generated token to drop
  EXPECT_EQ(hook.review({{1, 2, 4}}, {true}).drop[0], 0);
  EXPECT_EQ(hook.review({{1, 2, 4, 7}}, {true}).drop[0], 2);
  EXPECT_EQ(hook.events[2].before, (std::vector<int32_t>{4, 7}));
  EXPECT_EQ(hook.events[2].prefix, (std::vector<int32_t>{1, 2}));
  hook.review({{1, 2, 4}}, {true});  // the first re-sampled token: not resolved yet
  EXPECT_FALSE(hook.events[2].resolved());
  hook.review({{1, 2, 4, 5}}, {true});
  EXPECT_EQ(hook.events[2].after, (std::vector<int32_t>{4, 5}));
}

TEST(VerifyHook, RandomDropIsOneOrTwoAndInactiveSequencesAreSkipped) {
  VerifyHook hook(reject_seven(), 3, policy("random", 100), 42, true);
  hook.begin_batch(2);
  hook.review({{1, 2, 3, 4}, {7, 7, 7, 7}}, {true, false});  // prompt: 3 tokens
  std::set<int64_t> seen;
  for (int i = 0; i < 40; ++i) {
    auto v = hook.review({{1, 2, 3, 4, 7}, {7, 7, 7, 7}}, {true, false});
    seen.insert(v.drop[0]);
    EXPECT_EQ(v.drop[1], 0);
  }
  EXPECT_EQ(seen, (std::set<int64_t>{1, 2}));
  for (const auto& e : hook.events) EXPECT_EQ(e.item, 0);
}

TEST(ResampleRates, DefinitionsOnAHandMadeLog) {
  auto ev = [](int64_t ctx, bool fired, std::vector<int32_t> before, std::vector<int32_t> after, int64_t vb, int64_t va,
               double nb, double na) {
    VerifyEvent e;
    e.context_len = ctx;
    e.fired = fired;
    e.resampled = fired && !before.empty();
    e.dropped = before.size();
    e.before = before;
    e.after = after;
    e.violation_before = vb;
    e.violation_after = va;
    e.nll_before = nb;
    e.nll_after = na;
    return e;
  };
  std::vector<VerifyEvent> log{
      ev(10, false, {}, {}, -1, -1, NAN, NAN),
      ev(10, true, {5}, {5}, 0, 0, 2.0, 2.0),       // same token: same and equivalent
      ev(10, true, {5}, {6}, 1, 0, 2.0, 2.1),       // fixed a violation
      ev(40, true, {5, 6}, {5, 8}, 0, 0, 2.0, 3.0), // same verdict, NLL moved by 1.0 > eps: not equivalent
      ev(40, true, {5}, {9}, 0, 0, 2.0, 2.2),       // equivalent
      ev(40, true, {}, {}, -1, -1, NAN, NAN),       // fired, retries exhausted
      ev(40, false, {}, {}, -1, -1, NAN, NAN),
      ev(40, false, {}, {}, -1, -1, NAN, NAN),
  };
  auto r = resample_rates(log, 0.5);
  EXPECT_EQ(r.checks, 8);
  EXPECT_DOUBLE_EQ(r.trigger_rate, 5.0 / 8);
  EXPECT_EQ(r.resolved, 4);
  EXPECT_DOUBLE_EQ(r.same_rate, 1.0 / 4);
  EXPECT_DOUBLE_EQ(r.equiv_rate, 2.0 / 4);
  EXPECT_DOUBLE_EQ(r.fix_rate, 1.0 / 4);
  EXPECT_DOUBLE_EQ(r.exhausted_rate, 1.0 / 5);
  // Among the re-samples that changed the tokens ({6}, {5 8}, {9}) only {9} is equivalent.
  EXPECT_EQ(r.changed, 3);
  EXPECT_DOUBLE_EQ(r.equiv_changed_rate, 1.0 / 3);
  auto by = rates_by_context(log, {0, 32, 64}, 0.5);
  ASSERT_EQ(by.size(), 2u);
  EXPECT_DOUBLE_EQ(by[0].trigger_rate, 2.0 / 3);
  EXPECT_DOUBLE_EQ(by[1].trigger_rate, 3.0 / 5);
  EXPECT_DOUBLE_EQ(by[1].equiv_rate, 0.5);
  // No self-judged NLLs in this log: that rate is not measured, the judge's is.
  EXPECT_TRUE(std::isnan(r.equiv_rate_self));
  // The two judges are kept apart: the run's own LM calls the 1.0 move small.
  for (auto& e : log) {
    e.nll_before_self = e.nll_before;
    e.nll_after_self = std::isnan(e.nll_after) ? NAN : e.nll_before;  // no move at all
  }
  auto both = resample_rates(log, 0.5);
  EXPECT_DOUBLE_EQ(both.equiv_rate, 2.0 / 4);
  EXPECT_DOUBLE_EQ(both.equiv_rate_self, 3.0 / 4);  // every same-verdict re-sample
  EXPECT_DOUBLE_EQ(both.equiv_changed_rate_self, 2.0 / 3);
  // Without the judge's NLLs (judge off) its rate is not measured, the self-judged one is.
  for (auto& e : log) e.nll_before = e.nll_after = NAN;
  auto self_only = resample_rates(log, 0.5);
  EXPECT_TRUE(std::isnan(self_only.equiv_rate));
  EXPECT_DOUBLE_EQ(self_only.equiv_rate_self, 3.0 / 4);
  // Without a checker verdict equivalence and fixes are not measured.
  for (auto& e : log) e.violation_after = -1;
  EXPECT_TRUE(std::isnan(resample_rates(log, 0.5).equiv_rate_self));
  EXPECT_TRUE(std::isnan(resample_rates(log, 0.5).fix_rate));
}

TEST(VerifyHook, DecodingThroughTheHookNeverKeepsARejectedToken) {
  torch::manual_seed(3);
  Transformer lm(tiny_lm(8));
  // Reject odd tokens; with a large budget no odd token survives.
  WindowScorer even = [](const torch::Tensor& w) { return (w.select(1, w.size(1) - 1) % 2 == 0).to(torch::kFloat); };
  VerifyHook hook(even, 3, policy("random", 1000), 5, true);
  DecodeOptions opt;
  opt.sampling.temperature = 1.0;
  opt.max_new_tokens = 10;
  opt.batch = 3;
  auto gen = make_generator(11);
  std::vector<std::vector<int32_t>> prompts{{1, 2, 3}, {4, 5}, {6, 7, 1, 3}, {2}};
  auto out = decode(lm, prompts, opt, gen, &hook);
  ASSERT_EQ(out.continuations.size(), 4u);
  for (const auto& c : out.continuations) {
    EXPECT_EQ(c.size(), 10u);
    for (auto t : c) EXPECT_EQ(t % 2, 0);
  }
  EXPECT_GT(resample_rates(hook.events, 0.5).resamples, 0);
  EXPECT_EQ(hook.events.back().item, 3);  // items count across batches
}

}  // namespace
}  // namespace zl
