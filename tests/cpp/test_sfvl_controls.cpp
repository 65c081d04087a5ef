// sfvl's controls (issue 13 §7): the checker oracle fires only where the exact
// checker finds a new violation in the window and, on a case built to
// violate, lowers the violation rate; the random trigger fires at its rate
// within a binomial bound; best-of-n with n = 1 is the plain decode.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>

#include "datasets/contracts_checker.h"
#include "datasets/tokenizer.h"
#include "models/sampling.h"
#include "models/transformer.h"
#include "sim/config.h"
#include "sim/decoder.h"
#include "sim/stages/best_of_n_stage.h"
#include "sim/stages/checker_oracle.h"
#include "sim/stages/resample_log.h"
#include "sim/stages/sfvl_stage.h"
#include "sim/stages/verify_hook.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

const std::string kPrompt =
    "AGREEMENT between Acme Corp (the Seller) and Borealis Ltd (the Buyer).\n"
    "1. The Seller shall deliver 40 units to the Buyer by 2024-03-12.\n"
    "2. The Buyer shall pay $12,400 to the Seller within 30 days.\n";

std::vector<int32_t> bytes(const std::string& s) { return std::vector<int32_t>(s.begin(), s.end()); }

TEST(CheckerOracle, ReadsCompleteValuesBeforeTheSentenceEnds) {
  const std::string bad = "3. Each delivery of 45 units under clause 1";
  // "45" alone has no unit yet, "45 units" may still become "45 unitsX":
  // neither is read; once whitespace follows, the value is complete.
  EXPECT_TRUE(oracle_violations(kPrompt, "3. Each delivery of 45").empty());
  EXPECT_TRUE(oracle_violations(kPrompt, "3. Each delivery of 45 units").empty());
  auto v = oracle_violations(kPrompt, "3. Each delivery of 45 units ");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], std::make_pair(std::string("amount"), bad.find("45")));
  // The complete sentence gives the same violation, once.
  EXPECT_EQ(oracle_violations(kPrompt, bad + " shall be inspected.\n"), v);
  // An "if" is judged only when its sentence ends without a "then".
  EXPECT_TRUE(oracle_violations(kPrompt, "3. If the goods are late ").empty());
  auto open_if = oracle_violations(kPrompt, "3. If the goods are late.\n");
  ASSERT_EQ(open_if.size(), 1u);
  EXPECT_EQ(open_if[0].first, "conditional");
  EXPECT_TRUE(oracle_violations(kPrompt, "3. Each delivery of 40 units under clause 1 is due.\n").empty());
}

TEST(CheckerOracle, FiresOnceWhereTheNewestTokenCompletesAViolationInTheWindow) {
  std::shared_ptr<const Tokenizer> tok = make_byte_tokenizer();
  const std::string cont = "3. Each delivery of 45 units under clause 1 is due.\n";
  const auto prompt = bytes(kPrompt);
  for (bool span : {true, false}) {
    SequenceCheck check = checker_oracle(tok, 12, span);
    std::vector<size_t> fired_at;
    for (size_t n = 1; n <= cont.size(); ++n) {
      auto seq = prompt;
      auto c = bytes(cont.substr(0, n));
      seq.insert(seq.end(), c.begin(), c.end());
      SequenceVerdict v = check(0, seq, prompt.size());
      if (!v.fire) continue;
      fired_at.push_back(n);
      // The byte after "units" completes the value: span drops "45 units ".
      EXPECT_EQ(v.drop, span ? static_cast<int64_t>(std::string("45 units ").size()) : 0);
    }
    EXPECT_EQ(fired_at, (std::vector<size_t>{cont.find("units") + 6})) << "span " << span;
  }
  // With a window too short to hold "45", a verifier could not see it: no fire.
  SequenceCheck narrow = checker_oracle(tok, 5, true);
  for (size_t n = 1; n <= cont.size(); ++n) {
    auto seq = prompt;
    auto c = bytes(cont.substr(0, n));
    seq.insert(seq.end(), c.begin(), c.end());
    EXPECT_FALSE(narrow(0, seq, prompt.size()).fire) << n;
  }
}

// A scripted decoder over bytes that writes `target`, drawing the byte at
// '?' as '0' (right) or '5' (a contradicted quantity) evenly; with a hook it
// drops and re-writes as decode() does. Returns the violation rate over
// `items` continuations.
double scripted_violation_rate(VerifyHook* hook, int items, uint64_t seed) {
  const std::string target = "3. Each delivery of 4? units under clause 1 shall be inspected by the Buyer.\n";
  const size_t q = target.find('?');
  const auto prompt = bytes(kPrompt);
  std::mt19937_64 rng(seed);
  int violating = 0;
  for (int item = 0; item < items; ++item) {
    if (hook) hook->begin_batch(1);
    auto seq = prompt;
    for (int guard = 0; seq.size() - prompt.size() < target.size() && guard < 10000; ++guard) {
      const size_t at = seq.size() - prompt.size();
      seq.push_back(static_cast<unsigned char>(at == q ? (rng() % 2 ? '5' : '0') : target[at]));
      if (!hook) continue;
      auto v = hook->review({seq}, {true});
      if (v.drop[0] > 0) seq.resize(seq.size() - v.drop[0]);
    }
    const std::string text(seq.begin() + prompt.size(), seq.end());
    violating += !check_contract(kPrompt, text).empty();
  }
  return static_cast<double>(violating) / items;
}

TEST(CheckerOracle, ReSamplesOnlyAtFlaggedWindowsAndLowersTheViolationRate) {
  std::shared_ptr<const Tokenizer> tok = make_byte_tokenizer();
  VerifyPolicy policy{0.82, "1", 0.8, 0.3, 3};
  VerifyHook hook(checker_oracle(tok, 12, true), policy, 1, true);
  const int items = 400;
  const double plain = scripted_violation_rate(nullptr, items, 9);
  const double oracle = scripted_violation_rate(&hook, items, 9);
  EXPECT_NEAR(plain, 0.5, 0.1);
  // Three retries at each fire: about 0.5^4 of the items keep the bad value.
  EXPECT_LT(oracle, 0.15);
  auto r = resample_rates(hook.events, 0.5);
  EXPECT_GT(r.resamples, items / 3);
  for (const auto& e : hook.events) {
    if (!e.fired) continue;
    // Every fire is at the byte after "45 units" and drops exactly the bad value.
    EXPECT_EQ(std::string(e.before.begin(), e.before.end()), e.resampled ? "45 units " : "");
    EXPECT_EQ(e.position, static_cast<int64_t>(std::string("3. Each delivery of 45 units ").size()) - 1);
  }
  // A fire past the budget keeps the token: retries exhausted about 1/8 of the fired items.
  EXPECT_GT(r.exhausted_rate, 0.0);
}

ModelConfig tiny_lm() {
  ModelConfig c = tiny_model();
  c.vocab = 12;    // few ids: prompts drawn from all of them, half the tokens even
  c.context = 64;  // 40 new tokens after a 3-token prompt
  return c;
}

TEST(RandomTrigger, FiresAtTheConfiguredRateWithinABinomialBound) {
  torch::manual_seed(5);
  Transformer lm(tiny_lm());
  const double rate = 0.1;
  VerifyPolicy policy{rate, "random", 0.8, 0.3, 3};
  VerifyHook hook(random_trigger(77), 1, policy, 3, true);
  DecodeOptions opt;
  opt.sampling.temperature = 1.0;
  opt.max_new_tokens = 40;
  opt.batch = 8;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 64; ++i) prompts.push_back({i % 12, (i * 5) % 12, 3});
  auto gen = make_generator(21);
  decode(lm, prompts, opt, gen, &hook);
  auto r = resample_rates(hook.events, 0.5);
  ASSERT_GT(r.checks, 2560);  // 64 × 40 kept tokens, plus the re-sampled ones
  // Independent Bernoulli(rate) fires: 4.5 standard deviations of the binomial.
  const double sd = std::sqrt(rate * (1 - rate) / r.checks);
  EXPECT_NEAR(r.trigger_rate, rate, 4.5 * sd) << r.fired << " of " << r.checks;
  EXPECT_LE(r.resamples, r.fired);
  // The score ignores the tokens: a rate of 0 never fires, 1 always does.
  VerifyHook never(random_trigger(1), 1, VerifyPolicy{0.0, "1", 0.8, 0.3, 3}, 1, true);
  VerifyHook always(random_trigger(1), 1, VerifyPolicy{1.0, "1", 0.8, 0.3, 3}, 1, true);
  never.begin_batch(1);
  always.begin_batch(1);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(never.review({{1, 2, 3}}, {true}).drop[0], 0);
    always.review({{1, 2, 3}}, {true});
  }
  EXPECT_EQ(resample_rates(always.events, 0.5).trigger_rate, 1.0);
}

TEST(BestOfN, WithOneSampleIsThePlainDecodeTokenForToken) {
  torch::manual_seed(8);
  Transformer lm(tiny_lm());
  DecodeOptions opt;
  opt.sampling.temperature = 1.0;
  opt.max_new_tokens = 12;
  opt.batch = 3;
  opt.eos_id = 11;
  std::vector<std::vector<int32_t>> prompts{{1, 2, 3}, {4, 5}, {6, 7, 1, 3}, {2}, {9, 9, 9}, {0}, {3, 4}};
  WindowScorer any = [](const torch::Tensor& w) { return torch::rand({w.size(0)}); };
  for (bool fast : {true, false}) {
    opt.fast_step = fast;
    auto g1 = make_generator(4), g2 = make_generator(4);
    auto plain = decode(lm, prompts, opt, g1);
    BestOfNStats stats;
    auto best = best_of_n_decode(lm, prompts, opt, 1, any, 5, false, g2, &stats);
    EXPECT_EQ(best.continuations, plain.continuations) << "fast " << fast;
    EXPECT_EQ(best.kept_tokens, plain.kept_tokens);
    // One check per generated token, the eos that ended a sample included.
    int64_t ended = 0;
    for (const auto& c : plain.continuations) ended += static_cast<int64_t>(c.size()) < opt.max_new_tokens;
    EXPECT_EQ(stats.checks, plain.kept_tokens + ended);
  }
}

TEST(BestOfN, KeepsTheSampleTheScorerPrefers) {
  torch::manual_seed(9);
  Transformer lm(tiny_lm());
  DecodeOptions opt;
  opt.sampling.temperature = 1.0;
  opt.max_new_tokens = 10;
  opt.batch = 8;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 24; ++i) prompts.push_back({i % 12, 3});
  // Confidence 1 for an even newest token: the kept sample has the most.
  WindowScorer even = [](const torch::Tensor& w) { return (w.select(1, w.size(1) - 1) % 2 == 0).to(torch::kFloat); };
  auto share_even = [](const DecodeOutput& out) {
    double even_tokens = 0, all = 0;
    for (const auto& c : out.continuations)
      for (auto t : c) even_tokens += t % 2 == 0, ++all;
    return even_tokens / all;
  };
  auto g1 = make_generator(2), g4 = make_generator(2);
  BestOfNStats s1, s4;
  auto one = best_of_n_decode(lm, prompts, opt, 1, even, 3, false, g1, &s1);
  auto four = best_of_n_decode(lm, prompts, opt, 4, even, 3, false, g4, &s4);
  EXPECT_GT(share_even(four), share_even(one) + 0.05);
  EXPECT_EQ(s4.checks, 4 * 24 * 10);  // no eos: every sample is 10 tokens, each checked
  // Not streamed: the kept sample's tokens arrive together, once chosen.
  for (const auto& t : four.timings) {
    EXPECT_DOUBLE_EQ(t.ttft_ms, t.e2e_ms);
    EXPECT_DOUBLE_EQ(t.tpot_ms, 0.0);
  }
}

TEST(SfvlControls, ShareTheBaselineCheckpointAndReadOnlyTheirKeys) {
  RunConfig base, oracle, coin, best;
  oracle.variant = "sfvl_oracle";
  coin.variant = "sfvl_random";
  best.variant = "sfvl_best_of_n";
  for (const auto* c : {&oracle, &coin, &best}) EXPECT_EQ(train_id(*c), train_id(base));
  EXPECT_TRUE(relevant_key("control.trigger_rate", "sfvl_random"));
  EXPECT_FALSE(relevant_key("control.trigger_rate", "sfvl"));
  EXPECT_FALSE(relevant_key("verify.threshold", "sfvl_oracle"));
  EXPECT_TRUE(relevant_key("verify.max_retries", "sfvl_oracle"));
  EXPECT_TRUE(relevant_key("verify.params_ratio", "sfvl_best_of_n"));
  EXPECT_FALSE(relevant_key("verify.temp_bump", "sfvl_best_of_n"));
  // sfvl's identity is unchanged by the controls' keys.
  RunConfig sfvl = base, sfvl2 = base;
  sfvl.variant = sfvl2.variant = "sfvl";
  sfvl2.control.trigger_rate = 0.5;
  sfvl2.control.best_of_n = 7;
  EXPECT_EQ(run_id(sfvl), run_id(sfvl2));
}

}  // namespace
}  // namespace zl
