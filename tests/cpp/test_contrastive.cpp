// Contrastive search (Su et al. 2022, §3.2): the selection rule on a hand-made
// step, α = 0 as greedy decoding, and the batched k-candidate decode against
// a slow reference that runs the whole model on every candidate.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "models/sampling.h"
#include "models/transformer.h"
#include "sim/config.h"
#include "sim/decoder.h"
#include "sim/stages/contrastive_stage.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

TEST(Contrastive, PenaltyChangesTheChoiceOnAHandMadeStep) {
  // Candidate 0 is more probable, but its hidden state repeats a context
  // token's (cos 1); candidate 1 is orthogonal to the context.
  auto p = torch::tensor({0.6f, 0.4f}).view({1, 2});
  auto h = torch::tensor({1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f}).view({1, 2, 3});
  // Context: 2·e1, e3, and a third slot 5·e2 that is past the context (stale).
  auto ctx = torch::tensor({2.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f, 5.0f, 0.0f}).view({1, 3, 3});
  auto len2 = torch::tensor({int64_t{2}});
  // α = 0.6: 0.4·0.6 − 0.6·1 = −0.36 against 0.4·0.4 − 0.6·0 = 0.16.
  EXPECT_EQ(contrastive_choice(p, h, ctx, len2, 0.6).item<int64_t>(), 1);
  EXPECT_EQ(contrastive_choice(p, h, ctx, len2, 0.0).item<int64_t>(), 0);  // α = 0: the most probable
  // With the third slot in the context, candidate 1 repeats it too: −0.44 < −0.36.
  EXPECT_EQ(contrastive_choice(p, h, ctx, torch::tensor({int64_t{3}}), 0.6).item<int64_t>(), 0);
  // Rows are independent: a batch of both cases.
  auto two = contrastive_choice(p.repeat({2, 1}), h.repeat({2, 1, 1}), ctx.repeat({2, 1, 1}),
                                torch::tensor({int64_t{2}, int64_t{3}}), 0.6);
  EXPECT_EQ(two[0].item<int64_t>(), 1);
  EXPECT_EQ(two[1].item<int64_t>(), 0);
  // Norms do not matter, only directions.
  EXPECT_EQ(contrastive_choice(p, h * 7, ctx, len2, 0.6).item<int64_t>(), 1);
}

std::vector<std::vector<int32_t>> test_prompts() {
  return {{1, 2, 3}, {4, 5}, {6, 7, 1, 3, 9, 9}, {2}, {10, 11, 12, 13}, {0, 19}, {3, 3, 3, 3, 3}};
}

TEST(Contrastive, AlphaZeroIsGreedyDecoding) {
  Transformer lm = tiny_transformer(2);
  DecodeOptions opt;
  opt.sampling.temperature = 0;  // greedy
  opt.max_new_tokens = 14;
  opt.batch = 3;
  opt.fast_step = false;
  for (int32_t eos : {-1, 5}) {
    opt.eos_id = eos;
    auto gen = make_generator(1);
    auto greedy = decode(lm, test_prompts(), opt, gen);
    auto cs = contrastive_decode(lm, test_prompts(), opt, {4, 0.0});
    EXPECT_EQ(cs.continuations, greedy.continuations) << "eos " << eos;
    EXPECT_FALSE(cs.fast_step);
  }
  EXPECT_FALSE(lm->keep_hidden);  // restored
}

// The rule, run the slow way: the whole model on context + candidate, one
// candidate at a time, no cache.
std::vector<int32_t> slow_contrastive(Transformer& lm, std::vector<int32_t> seq, int64_t k, double alpha,
                                      int64_t steps) {
  torch::NoGradGuard no_grad;
  lm->keep_hidden = true;
  std::vector<int32_t> out;
  for (int64_t t = 0; t < steps; ++t) {
    auto ids = torch::tensor(std::vector<int64_t>(seq.begin(), seq.end())).view({1, -1});
    auto probs = torch::softmax(lm->forward(ids)[0][-1], -1);  // [V]
    auto top = probs.topk(k);
    double best = -INFINITY;
    int32_t choice = -1;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t v = std::get<1>(top)[c].item<int64_t>();
      auto with = torch::cat({ids, torch::tensor({v}).view({1, 1})}, 1);
      lm->forward(with);
      auto hid = lm->last_hidden[0];  // [T+1,C]
      auto hv = hid[-1];
      double penalty = -INFINITY;
      for (int64_t j = 0; j + 1 < hid.size(0); ++j)
        penalty = std::max(penalty, torch::cosine_similarity(hv, hid[j], 0).item<double>());
      const double score = (1 - alpha) * std::get<0>(top)[c].item<double>() - alpha * penalty;
      if (score > best) best = score, choice = static_cast<int32_t>(v);
    }
    seq.push_back(choice);
    out.push_back(choice);
  }
  lm->keep_hidden = false;
  return out;
}

TEST(Contrastive, BatchedCandidatesMatchTheSlowReference) {
  Transformer lm = tiny_transformer(4);
  DecodeOptions opt;
  opt.max_new_tokens = 10;
  opt.batch = 3;  // batches of 3, 3 and 1, prompts of different lengths (padding)
  auto cs = contrastive_decode(lm, test_prompts(), opt, {3, 0.6});
  auto greedy = contrastive_decode(lm, test_prompts(), opt, {3, 0.0});
  int differs = 0;
  for (size_t i = 0; i < test_prompts().size(); ++i) {
    EXPECT_EQ(cs.continuations[i], slow_contrastive(lm, test_prompts()[i], 3, 0.6, 10)) << "prompt " << i;
    differs += cs.continuations[i] != greedy.continuations[i];
  }
  EXPECT_GT(differs, 0);  // the penalty changes what greedy decoding would write
  // Per sequence and token the search holds k cache rows and one hidden state.
  auto one = lm->make_cache(1);
  EXPECT_EQ(cs.kv_bytes_per_token, 3 * one.bytes_per_token() + 16 * 4);
}

TEST(Contrastive, SharesTheBaselineCheckpointAndIgnoresSamplingKeys) {
  RunConfig base, cs;
  cs.variant = "contrastive";
  EXPECT_EQ(train_id(cs), train_id(base));
  RunConfig hot = cs;
  hot.decode.temperature = 1.3;
  hot.decode.top_p = 0.9;
  EXPECT_EQ(run_id(hot), run_id(cs));  // deterministic: one run, whatever the sampling keys
  hot.contrastive.alpha = 0.3;
  EXPECT_NE(run_id(hot), run_id(cs));
  EXPECT_FALSE(relevant_key("contrastive.k", "baseline"));
}

}  // namespace
}  // namespace zl
