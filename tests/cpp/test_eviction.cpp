// KV cache eviction (issue 13): streaming (StreamingLLM, Xiao et al., ICLR
// 2024, §3.2) and h2o (Heavy-Hitter Oracle, Zhang et al., NeurIPS 2023, §4,
// Algorithm 1); models/eviction.h. The victim rule on hand-made scores and
// H2O's eviction order on hand-made attention; what each cache keeps through
// the whole model on both steps (exactly sinks + window; H2O's heavy hitters
// under attention made uniform); with a budget of at least the context, the
// baseline's logits and greedy tokens; the fast step against the reference;
// the bytes a decode reports; the config keys.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "models/decode_step.h"
#include "models/eviction.h"
#include "models/factory.h"
#include "models/sampling.h"
#include "models/transformer.h"
#include "sim/config.h"
#include "sim/decoder.h"
#include "sim/model_options.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

using Policy = EvictionOptions::Policy;

ModelConfig shape() {
  ModelConfig c = tiny_model_four_heads();
  c.context = 40;  // decodes of up to 36 tokens (a 16-token prompt and 20 new) without eviction
  return c;
}

EvictionOptions streaming(int64_t sinks, int64_t window, bool cache_positions = false) {
  EvictionOptions e;
  e.policy = Policy::Streaming;
  e.sinks = sinks;
  e.budget = sinks + window;
  e.cache_positions = cache_positions;
  return e;
}

EvictionOptions h2o(int64_t budget, int64_t recent) {
  EvictionOptions e;
  e.policy = Policy::H2O;
  e.budget = budget;
  e.recent = recent;
  return e;
}

// Both implementations of the rule: the fast step's loop and the reference's tensors.
int64_t victim_both(const EvictionOptions& e, const std::vector<int32_t>& order, const std::vector<float>& score) {
  const int64_t n = order.size();
  const int64_t fast = eviction_victim(e, order.data(), score.empty() ? nullptr : score.data(), n);
  auto o = torch::tensor(std::vector<int64_t>(order.begin(), order.end())).to(torch::kInt).view({1, n});
  auto s = score.empty() ? torch::Tensor() : torch::tensor(score).view({1, n});
  const int64_t ref = eviction_victims(e, o, s)[0].item<int64_t>();
  EXPECT_EQ(fast, ref);
  return fast;
}

TEST(Eviction, VictimRuleOnHandMadeScores) {
  // Slots hold tokens out of text order, as they do after evictions.
  // streaming, 4 sinks: the oldest token past them goes (order 5, slot 2).
  EXPECT_EQ(victim_both(streaming(4, 3), {0, 7, 5, 2, 6, 1, 3, 8}, {}), 2);
  // no sinks (window attention): the oldest of all (order 0, slot 3).
  EXPECT_EQ(victim_both(streaming(0, 3), {2, 1, 3, 0}, {}), 3);
  // h2o, 2 recent: orders 8 and 9 are protected whatever their scores (0);
  // among the rest the least score (0.25, orders 3 and 6) goes, the older on a tie.
  const std::vector<int32_t> order{6, 0, 9, 3, 8, 5};
  EXPECT_EQ(victim_both(h2o(5, 2), order, {0.25f, 2.0f, 0.0f, 0.25f, 0.0f, 0.5f}), 3);
  // the recent window is by text position: with 3 recent, 7 (not held), 8 and 9 are protected; 6 competes.
  EXPECT_EQ(victim_both(h2o(5, 3), order, {0.75f, 2.0f, 0.0f, 1.0f, 0.0f, 0.5f}), 5);
  // several heads at once (the reference's form): each its own victim.
  auto o = torch::tensor({0, 1, 2, 3, 3, 2, 1, 0}, torch::kInt).view({2, 4});
  auto s = torch::tensor({1.0f, 0.5f, 0.25f, 0.0f, 0.0f, 0.25f, 0.5f, 1.0f}).view({2, 4});
  auto v = eviction_victims(h2o(3, 1), o, s);  // candidates: orders 0..2
  EXPECT_EQ(v[0].item<int64_t>(), 2);  // order 2 (0.25)
  EXPECT_EQ(v[1].item<int64_t>(), 1);  // order 2 (0.25), in slot 1
}

// H2O's greedy policy (Algorithm 1) over hand-made attention: at each step
// the new token joins, its query's weights over the held tokens and itself
// are added to their accumulated scores, and over the budget the least-
// scored token outside the recent window is evicted.
TEST(Eviction, H2OEvictionOrderOnHandMadeAttention) {
  const auto e = h2o(/*budget=*/3, /*recent=*/1);
  // attention[i]: token i's weights on the tokens held when it attends (by order).
  const std::vector<std::vector<std::pair<int32_t, float>>> attention{
      {{0, 1.0f}},
      {{0, 0.5f}, {1, 0.5f}},
      {{0, 0.2f}, {1, 0.6f}, {2, 0.2f}},
      {{0, 0.1f}, {1, 0.1f}, {2, 0.7f}, {3, 0.1f}},   // 0: 1.8, 1: 1.2, 2: 0.9 -> 2 goes, though it got the most now
      {{0, 0.1f}, {1, 0.1f}, {3, 0.4f}, {4, 0.4f}},   // 0: 1.9, 1: 1.3, 3: 0.5 -> 3
      {{0, 0.05f}, {1, 0.05f}, {4, 0.1f}, {5, 0.8f}},  // 0: 1.95, 1: 1.35, 4: 0.5 -> 4
      {{0, 0.0f}, {1, 0.0f}, {5, 1.0f}, {6, 0.0f}},   // 0: 1.95, 1: 1.35, 5: 1.8 -> 1, an old heavy hitter overtaken
  };
  std::vector<int32_t> order;
  std::vector<float> score;
  std::vector<int32_t> evicted;
  for (int32_t i = 0; i < static_cast<int32_t>(attention.size()); ++i) {
    order.push_back(i);
    score.push_back(0);
    ASSERT_EQ(attention[i].size(), order.size());
    for (const auto& [token, w] : attention[i]) {
      auto at = std::find(order.begin(), order.end(), token);
      ASSERT_NE(at, order.end()) << "token " << token << " attended after its eviction";
      score[at - order.begin()] += w;
    }
    if (static_cast<int64_t>(order.size()) <= e.budget) continue;
    const int64_t v = victim_both(e, order, score);
    evicted.push_back(order[v]);
    order.erase(order.begin() + v);
    score.erase(score.begin() + v);
  }
  EXPECT_EQ(evicted, (std::vector<int32_t>{2, 3, 4, 1}));
  EXPECT_EQ(order, (std::vector<int32_t>{0, 5, 6}));
}

// The orders (text positions) each head of each layer holds in sequence b.
std::set<int32_t> held_orders(const KVCache& cache, int64_t l, int64_t b, int64_t h) {
  const int64_t n = cache.held[b].item<int64_t>();
  auto o = cache.layers[l].order[b][h].narrow(0, 0, n).to(torch::kLong);
  std::set<int32_t> out;
  for (int64_t j = 0; j < n; ++j) out.insert(static_cast<int32_t>(o[j].item<int64_t>()));
  EXPECT_EQ(static_cast<int64_t>(out.size()), n) << "a token held twice";
  return out;
}

std::set<int32_t> range(int32_t begin, int32_t end) {
  std::set<int32_t> s;
  for (int32_t i = begin; i < end; ++i) s.insert(i);
  return s;
}

// Feeds 2 sequences (prompts of 11 and 7 tokens, then 9 steps) on either
// step; returns the cache.
KVCache feed(Transformer& model, const EvictionOptions& e, bool fast_step, std::vector<torch::Tensor>* logits = nullptr) {
  torch::NoGradGuard no_grad;
  model->eval();
  auto cache = model->make_cache(2, 0, e);
  std::vector<std::vector<int32_t>> prompts{{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}, {2, 7, 1, 8, 2, 8, 1}};
  std::optional<DecodeStep> step;
  if (fast_step) step.emplace(model);
  torch::Tensor last;
  if (fast_step) {
    last = step->prefill(prompts, cache);
  } else {
    auto tokens = torch::zeros({2, 11}, torch::kLong);
    for (size_t b = 0; b < 2; ++b)
      for (size_t t = 0; t < prompts[b].size(); ++t) tokens[b][t] = prompts[b][t];
    auto all = model->forward(tokens, cache, {11, 7});
    last = torch::stack({all[0][10], all[1][6]});
  }
  if (logits) logits->push_back(last);
  const int64_t V = model->cfg.vocab;
  for (int i = 0; i < 9; ++i) {
    std::vector<int64_t> tok{(i * 7 + 2) % V, (i * 5 + 11) % V};
    auto out = fast_step ? step->forward(tok, cache)
                         : model->forward(torch::tensor(tok).view({2, 1}), cache).select(1, 0);
    if (logits) logits->push_back(out);
  }
  return cache;
}

// Queries zeroed in every layer: every score is 0 and attention uniform over
// the keys a token sees. A held token's accumulated score then grows with
// its age, so H2O's heavy hitters are the oldest tokens: the cache must end
// holding the first budget − recent and the recent ones.
Transformer uniform_attention_model() {
  Transformer model = tiny_transformer(3, shape());
  torch::NoGradGuard no_grad;
  const int64_t C = model->cfg.dim;
  for (const auto& b : *model->blocks) b->as<Block>()->attn->qkv->weight.narrow(0, 0, C).zero_();  // q rows
  return model;
}

TEST(Eviction, EachCacheKeepsWhatItsPaperSaysOnBothSteps) {
  Transformer model = uniform_attention_model();
  for (bool fast : {false, true}) {
    SCOPED_TRACE(fast ? "fast step" : "reference step");
    // 20 and 16 tokens fed. streaming, 4 sinks + a window of 6: exactly 10 held.
    auto s = feed(model, streaming(4, 6), fast);
    EXPECT_EQ(s.capacity, 11);  // budget + the token that attends
    EXPECT_EQ(s.lengths[0].item<int64_t>(), 20);
    EXPECT_EQ(s.lengths[1].item<int64_t>(), 16);
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t h = 0; h < 4; ++h) {
        auto want0 = range(0, 4), want1 = range(0, 4);
        for (int32_t p : range(14, 20)) want0.insert(p);
        for (int32_t p : range(10, 16)) want1.insert(p);
        EXPECT_EQ(held_orders(s, l, 0, h), want0);
        EXPECT_EQ(held_orders(s, l, 1, h), want1);
      }
    // h2o, budget 7, 3 recent: the 4 oldest (heaviest under uniform attention) and the 3 newest.
    auto c = feed(model, h2o(7, 3), fast);
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t h = 0; h < 4; ++h) {
        auto want0 = range(0, 4), want1 = range(0, 4);
        for (int32_t p : range(17, 20)) want0.insert(p);
        for (int32_t p : range(13, 16)) want1.insert(p);
        EXPECT_EQ(held_orders(c, l, 0, h), want0);
        EXPECT_EQ(held_orders(c, l, 1, h), want1);
      }
    EXPECT_THROW(c.truncate(0, 19), std::out_of_range);  // evicted tokens cannot come back
  }
}

// With a budget of at least the context nothing is evicted: the same logits,
// bit for bit, on either step, and the same greedy tokens through decode().
TEST(Eviction, BudgetOfTheContextIsTheBaseline) {
  Transformer model = tiny_transformer(11, shape());
  const int64_t T = model->cfg.context;
  for (const auto& e : {streaming(4, T), streaming(0, T, /*cache_positions=*/true), h2o(T, T - T / 2)}) {
    for (bool fast : {false, true}) {
      std::vector<torch::Tensor> want, got;
      feed(model, EvictionOptions{}, fast, &want);
      auto cache = feed(model, e, fast, &got);
      ASSERT_EQ(want.size(), got.size());
      for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(torch::equal(want[i], got[i])) << (fast ? "fast " : "ref ") << i;
      EXPECT_TRUE(torch::equal(cache.held, cache.lengths));
    }
    std::vector<std::vector<int32_t>> prompts{{1, 2, 3}, {4}, {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}};
    DecodeOptions opt;
    opt.max_new_tokens = 20;
    opt.batch = 3;
    opt.sampling.temperature = 0;  // greedy
    for (bool fast : {true, false}) {
      opt.fast_step = fast;
      opt.eviction = {};
      auto g1 = make_generator(1), g2 = make_generator(1);
      auto base = decode(model, prompts, opt, g1);
      opt.eviction = e;
      auto evicting = decode(model, prompts, opt, g2);
      EXPECT_EQ(base.continuations, evicting.continuations);
      EXPECT_EQ(evicting.fast_step, fast);
    }
  }
}

// Eviction under way: the fast step and the reference agree on the logits
// and on what each head holds, for both policies and both position rules.
TEST(Eviction, FastStepEqualsTheReference) {
  Transformer model = tiny_transformer(12, shape());
  {
    torch::NoGradGuard no_grad;  // sharper attention than the init's, so that scores differ
    for (const auto& b : *model->blocks) b->as<Block>()->attn->qkv->weight.normal_(0, 0.3);
  }
  for (const auto& e : {streaming(4, 5), streaming(2, 6, /*cache_positions=*/true), h2o(8, 4), h2o(5, 3)}) {
    for (int threads : {1, 2}) {
      const int saved = at::get_num_threads();
      at::set_num_threads(threads);
      std::vector<torch::Tensor> want, got;
      auto ref = feed(model, e, false, &want);
      auto mine = feed(model, e, true, &got);
      at::set_num_threads(saved);
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-4, 1e-4)) << i << ": " << (got[i] - want[i]).abs().max().item<float>();
      EXPECT_TRUE(torch::equal(ref.held, mine.held));
      for (int64_t l = 0; l < 2; ++l)
        for (int64_t b = 0; b < 2; ++b)
          for (int64_t h = 0; h < 4; ++h) EXPECT_EQ(held_orders(ref, l, b, h), held_orders(mine, l, b, h));
    }
  }
}

// What decode() reports: a baseline cache holds every token fed (its
// bytes per token are the tensors'), an evicting one at most the budget,
// and at its peak the budget and the token attending.
TEST(Eviction, DecodeReportsTheBytesHeld) {
  Transformer model = tiny_transformer(13, shape());
  std::vector<std::vector<int32_t>> prompts{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}};
  DecodeOptions opt;
  opt.max_new_tokens = 10;
  opt.batch = 1;
  opt.eos_id = -1;
  opt.sampling.temperature = 0;
  auto g = make_generator(1);
  auto base = decode(model, prompts, opt, g);
  const int64_t per_token = model->make_cache(1).bytes_per_token();  // 2 layers × (K + V) × 32 floats
  EXPECT_EQ(per_token, 2 * 2 * 32 * 4);
  EXPECT_EQ(base.kv_bytes_per_token, per_token);
  EXPECT_EQ(base.kv_bytes_peak, 29 * per_token);  // 20 + 9 fed (the 10th token is sampled, never fed)
  opt.eviction = streaming(4, 6);
  auto s = decode(model, prompts, opt, g);
  const int64_t with_order = per_token + 2 * 4 * 4;  // + an int32 position per head and layer
  EXPECT_EQ(model->make_cache(1, 0, opt.eviction).bytes_per_token(), with_order);
  EXPECT_EQ(s.kv_bytes_peak, 11 * with_order);
  // After the prefill and each of 9 steps the cache holds 10 of 20, 21, ..., 29 tokens.
  double ratio = 0;
  for (int n = 20; n <= 29; ++n) ratio += n;
  EXPECT_NEAR(s.kv_bytes_per_token, with_order * (10.0 * 10 / ratio), 1e-9);
  opt.eviction = h2o(8, 4);
  auto c = decode(model, prompts, opt, g);
  EXPECT_EQ(c.kv_bytes_peak, 9 * (per_token + 2 * 4 * 8));  // + a position and a score per head and layer
}

// A sequence that finishes early is fed a dummy token at every later step
// and rolled back (sim/decoder.cpp), while its neighbours go on: with an
// evicting cache that must neither stop the decode (H2O's recent window,
// by text position, would soon hold every token) nor touch the neighbours.
TEST(Eviction, SequencesFinishingEarlyLeaveTheirNeighboursAlone) {
  Transformer model = tiny_transformer(14, shape());
  std::vector<std::vector<int32_t>> prompts{{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}};
  DecodeOptions opt;
  opt.max_new_tokens = 1;
  opt.batch = 2;
  opt.sampling.temperature = 0;
  auto g = make_generator(1);
  // The eos is the first token of the first sequence (and not the second's first).
  auto first = decode(model, prompts, opt, g).continuations;
  ASSERT_NE(first[0], first[1]) << "pick another seed";
  opt.eos_id = first[0][0];
  opt.max_new_tokens = 24;
  for (const auto& e : {h2o(8, 4), streaming(2, 5)})
    for (bool fast : {true, false}) {
      SCOPED_TRACE(fast ? "fast step" : "reference step");
      opt.fast_step = fast;
      opt.eviction = e;
      auto both = decode(model, prompts, opt, g);
      opt.batch = 1;
      auto alone = decode(model, {prompts[1]}, opt, g);
      opt.batch = 2;
      EXPECT_TRUE(both.continuations[0].empty());
      EXPECT_EQ(both.continuations[1], alone.continuations[0]);
    }
}

TEST(Eviction, ConfigKeysAndCheckpoint) {
  RunConfig cfg;
  cfg.variant = "h2o";
  EXPECT_EQ(trained_family("h2o"), "baseline");
  EXPECT_EQ(trained_family("streaming"), "baseline");
  RunConfig base;
  EXPECT_EQ(train_id(cfg), train_id(base));  // the baseline's checkpoint
  EXPECT_NE(run_id(cfg), run_id(base));
  auto e = eviction_options(cfg);  // 0.2 of 128: 26 tokens, 13 recent
  EXPECT_EQ(e.policy, Policy::H2O);
  EXPECT_EQ(e.budget, 26);
  EXPECT_EQ(e.recent, 13);
  set_key(cfg, "h2o.budget", "1", Origin{"x.ini", 3});
  EXPECT_EQ(eviction_options(cfg).budget, 128);
  // h2o.* is part of h2o's identity only; streaming.* of streaming's.
  EXPECT_TRUE(relevant_key("h2o.budget", "h2o"));
  EXPECT_FALSE(relevant_key("h2o.budget", "baseline"));
  EXPECT_FALSE(relevant_key("streaming.window", "h2o"));
  RunConfig s;
  s.variant = "streaming";
  auto se = eviction_options(s);
  EXPECT_EQ(se.policy, Policy::Streaming);
  EXPECT_EQ(se.sinks, 4);
  EXPECT_EQ(se.budget, 4 + 28);
  EXPECT_FALSE(se.cache_positions);
  set_key(s, "streaming.positions", "cache", Origin{});
  EXPECT_TRUE(eviction_options(s).cache_positions);
  EXPECT_EQ(eviction_options(base).policy, Policy::None);
  // Errors name the key and where it was set.
  auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message([&] { set_key(s, "streaming.window", "0", Origin{"a.ini", 7}); }).find("a.ini:7: streaming.window"),
            std::string::npos);
  EXPECT_NE(message([&] { set_key(s, "streaming.positions", "slot", Origin{}); }).find("streaming.positions"),
            std::string::npos);
  EXPECT_NE(message([&] { set_key(s, "streaming.sinks", "-1", Origin{"a.ini", 8}); }).find("a.ini:8: streaming.sinks"),
            std::string::npos);
  EXPECT_NE(message([&] { set_key(cfg, "h2o.budget", "0", Origin{}); }).find("h2o.budget"), std::string::npos);
  EXPECT_NE(message([&] { set_key(cfg, "h2o.budget", "-0.2", Origin{}); }).find("h2o.budget"), std::string::npos);
  EXPECT_NE(message([&] { set_key(cfg, "h2o.budget", "1.5", Origin{}); }).find("h2o.budget"), std::string::npos);
  set_key(cfg, "h2o.budget", "0.01", Origin{"b.ini", 2});  // 1 token of 128: no room for both halves
  std::map<std::string, Origin> origins{{"h2o.budget", Origin{"b.ini", 2}}};
  EXPECT_NE(message([&] { validate(cfg, origins); }).find("b.ini:2: h2o.budget"), std::string::npos);
  // Both decode the baseline's checkpoint (their family in sim/variants.def): no parameter of their own.
  EXPECT_EQ(trained_family("streaming"), "baseline");
  EXPECT_EQ(trained_family("h2o"), "baseline");
}

}  // namespace
}  // namespace zl
