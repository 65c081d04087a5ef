// Exact speculative sampling: the accept/reject rule, and a chi-squared test
// that the decoded tokens follow the model's distribution, not the draft's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "models/sampling.h"
#include "models/transformer.h"
#include "sim/stages/speculative.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

TEST(Speculative, AcceptsEverythingWhenDraftEqualsModel) {
  auto gen = make_generator(1);
  auto p = torch::softmax(torch::randn({4, 6}), -1);
  auto kept = accept_drafts(p, p.narrow(0, 0, 3), {1, 4, 2}, gen);
  ASSERT_EQ(kept.size(), 4u);  // 3 drafts and one bonus token
  EXPECT_EQ(kept[0], 1);
  EXPECT_EQ(kept[1], 4);
  EXPECT_EQ(kept[2], 2);
}

TEST(Speculative, RejectsATokenTheModelNeverSamplesAndDrawsFromTheResidual) {
  auto gen = make_generator(2);
  auto p = torch::tensor({{0.0, 0.5, 0.5}, {1.0, 0.0, 0.0}}).to(torch::kFloat);
  auto q = torch::tensor({{1.0, 0.0, 0.0}}).to(torch::kFloat);
  for (int i = 0; i < 20; ++i) {
    auto kept = accept_drafts(p, q, {0}, gen);
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_NE(kept[0], 0);  // residual max(0, p-q) has no mass on token 0
  }
}

// The residual's draw in a loop takes draw()'s uniform and gives its token.
TEST(Speculative, DrawOneIsDrawOnOneRow) {
  torch::manual_seed(5);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    auto p = torch::softmax(torch::randn({37}) * 2, -1).contiguous();
    auto a = make_generator(seed), b = make_generator(seed);
    EXPECT_EQ(draw_one(p.data_ptr<float>(), 37, a), draw(p.unsqueeze(0), b)[0].item<int64_t>()) << "seed " << seed;
  }
}

// Five tokens: the joint of the first two has 25 cells, each with enough
// samples for the chi-squared test below.
ModelConfig toy(int64_t dim) {
  ModelConfig c = tiny_model();
  c.vocab = 5;
  c.dim = dim;  // the draft narrower than the model
  return c;
}

// Peaky, different distributions: weights far from the small default init.
Transformer random_model(int64_t dim, uint64_t seed) {
  torch::manual_seed(seed);
  Transformer m(toy(dim));
  torch::NoGradGuard no_grad;
  for (auto& p : m->parameters())
    if (p.dim() >= 2) p.normal_(0, 0.8);
  m->eval();
  return m;
}

// The exact joint distribution of the first two sampled tokens after `prompt`.
torch::Tensor joint(Transformer& m, const std::vector<int64_t>& prompt, const SamplingOptions& s) {
  torch::NoGradGuard no_grad;
  const int64_t V = m->cfg.vocab;
  auto x = torch::tensor(prompt).view({1, -1});
  auto p1 = sampling_probs(m->forward(x).select(1, x.size(1) - 1), s)[0];  // [V]
  auto j = torch::zeros({V, V});
  for (int64_t a = 0; a < V; ++a) {
    auto xa = torch::cat({x, torch::tensor({a}).view({1, 1})}, 1);
    auto p2 = sampling_probs(m->forward(xa).select(1, xa.size(1) - 1), s)[0];
    j[a] = p1[a] * p2;
  }
  return j;
}

double chi_squared(const torch::Tensor& counts, const torch::Tensor& expected_p, int64_t n) {
  auto e = expected_p * n;
  auto keep = e > 5;  // cells too small for the approximation are left out
  return ((counts - e).pow(2) / e).masked_select(keep).sum().item<double>();
}

TEST(Speculative, OutputFollowsTheModelNotTheDraft) {
  auto model = random_model(16, 1), draft = random_model(8, 2);
  SamplingOptions s{1.0, 0, 1.0};
  const std::vector<int64_t> prompt{1, 3, 2};
  auto p = joint(model, prompt, s), q = joint(draft, prompt, s);
  ASSERT_GT((p - q).abs().sum().item<double>(), 0.5);  // the test has power only if they differ

  const int64_t n = 6000;
  std::vector<std::vector<int32_t>> prompts(n, std::vector<int32_t>(prompt.begin(), prompt.end()));
  DecodeOptions opt;
  opt.sampling = s;
  opt.max_new_tokens = 2;
  opt.batch = 500;
  auto gen = make_generator(7);
  SpeculativeStats stats;
  auto out = speculative_decode(model, draft, prompts, opt, 3, gen, stats);
  auto counts = torch::zeros({5, 5});
  for (const auto& c : out.continuations) {
    ASSERT_EQ(c.size(), 2u);
    counts[c[0]][c[1]] += 1;
  }
  // 24 degrees of freedom at most: the 0.1% critical value is 51.2.
  EXPECT_LT(chi_squared(counts, p, n), 51.2);
  EXPECT_GT(chi_squared(counts, q, n), 200.0);  // and sampling the draft would fail
  EXPECT_GT(stats.accepted, 0);
  EXPECT_LT(stats.accepted, stats.drafted);
}

// Issue 12: the draft on the fast step and the model checking its proposals
// in one multi-row pass, with rejections rolling both caches back, give the
// tokens of the reference modules (greedy, so that no draw sits on a
// boundary that 1e-6 of rounding could move); sampled, the same draws.
TEST(Speculative, FastStepGivesTheReferenceTokens) {
  auto model = random_model(16, 3), draft = random_model(8, 4);
  std::vector<std::vector<int32_t>> prompts{{1, 3, 2}, {4}, {2, 2, 0, 1, 3}, {0, 1}};
  for (double temperature : {0.0, 1.0}) {
    DecodeOptions opt;
    opt.sampling = SamplingOptions{temperature, 0, 1.0};
    opt.max_new_tokens = 9;
    opt.batch = 4;
    SpeculativeStats fast_stats, ref_stats;
    auto g1 = make_generator(11), g2 = make_generator(11);
    auto fast = speculative_decode(model, draft, prompts, opt, 3, g1, fast_stats);
    opt.fast_step = false;
    auto ref = speculative_decode(model, draft, prompts, opt, 3, g2, ref_stats);
    EXPECT_TRUE(fast.fast_step);
    EXPECT_FALSE(ref.fast_step);
    EXPECT_EQ(fast.continuations, ref.continuations) << "temperature " << temperature;
    EXPECT_EQ(fast_stats.accepted, ref_stats.accepted);
    EXPECT_LT(ref_stats.accepted, ref_stats.drafted);  // rejections happened: rollbacks were exercised
  }
}

}  // namespace
}  // namespace zl
