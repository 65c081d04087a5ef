#include <gtest/gtest.h>

#include <boost/math/distributions/chi_squared.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "datasets/batch_sampler.h"
#include "models/factory.h"
#include "models/sampling.h"
#include "models/transformer.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

TEST(Model, ShapesAndParameterCount) {
  Transformer m = tiny_transformer(0);
  auto logits = m->forward(torch::randint(50, {3, 10}, torch::kLong));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 10, 50}));
  // tiny_model(), V 50, T 24, C 16, L 2: wte 50*16 + wpe 24*16 + per block (2 LN: 4*16, qkv 16*48, proj 16*16, fc 16*64, proj 64*16) + ln_f 2*16
  int64_t expected = 50 * 16 + 24 * 16 + 2 * (4 * 16 + 16 * 48 + 16 * 16 + 16 * 64 + 64 * 16) + 2 * 16;
  EXPECT_EQ(m->parameter_count(), expected);
}

TEST(Model, CausalFutureTokensDoNotChangeThePast) {
  Transformer m = tiny_transformer(0);
  m->eval();
  auto a = torch::randint(50, {1, 12}, torch::kLong);
  auto b = a.clone();
  b.index_put_({0, torch::indexing::Slice(8)}, torch::randint(50, {4}, torch::kLong));
  auto la = m->forward(a), lb = m->forward(b);
  EXPECT_TRUE(torch::allclose(la.narrow(1, 0, 8), lb.narrow(1, 0, 8), 1e-5, 1e-6));
}

TEST(Model, IncrementalDecodeEqualsFullForward) {
  Transformer m = tiny_transformer(1);
  m->eval();
  torch::NoGradGuard no_grad;
  auto tokens = torch::randint(50, {3, 20}, torch::kLong);
  auto full = m->forward(tokens);  // [3,20,50]
  auto cache = m->make_cache(3);
  // A prefill of 7 tokens, then one token at a time, then a chunk of 4.
  std::vector<torch::Tensor> parts{m->forward(tokens.narrow(1, 0, 7), cache)};
  for (int64_t t = 7; t < 16; ++t) parts.push_back(m->forward(tokens.narrow(1, t, 1), cache));
  parts.push_back(m->forward(tokens.narrow(1, 16, 4), cache));
  auto incremental = torch::cat(parts, 1);
  EXPECT_TRUE(torch::allclose(full, incremental, 1e-4, 1e-5)) << (full - incremental).abs().max().item<float>();
  EXPECT_EQ(cache.lengths.sum().item<int64_t>(), 3 * 20);
}

TEST(Model, RollbackThenSameTokensGivesSameLogits) {
  Transformer m = tiny_transformer(2);
  m->eval();
  torch::NoGradGuard no_grad;
  auto tokens = torch::randint(50, {2, 12}, torch::kLong);
  auto cache = m->make_cache(2);
  m->forward(tokens.narrow(1, 0, 10), cache);
  auto reference = m->forward(tokens.narrow(1, 10, 2), cache);  // positions 10, 11
  // Sequence 0 writes two other tokens, then rolls back and writes the same ones again.
  cache.truncate(0, 10);
  cache.truncate(1, 10);
  m->forward(torch::randint(50, {2, 2}, torch::kLong), cache);
  cache.truncate(0, 10);
  cache.truncate(1, 10);
  auto again = m->forward(tokens.narrow(1, 10, 2), cache);
  EXPECT_TRUE(torch::allclose(reference, again, 1e-5, 1e-6));
  EXPECT_THROW(cache.truncate(0, 13), std::out_of_range);
  EXPECT_THROW(cache.truncate(-1, 0), std::out_of_range);  // no such sequence
  EXPECT_THROW(cache.truncate(cache.batch(), 0), std::out_of_range);
}

TEST(Model, SequencesOfDifferentLengthsDecodeIndependently) {
  Transformer m = tiny_transformer(3);
  m->eval();
  torch::NoGradGuard no_grad;
  auto a = torch::randint(50, {1, 9}, torch::kLong), b = torch::randint(50, {1, 9}, torch::kLong);
  auto cache = m->make_cache(2);
  m->forward(torch::cat({a.narrow(1, 0, 8), b.narrow(1, 0, 8)}), cache);
  cache.truncate(1, 5);  // sequence 1 is 3 tokens shorter now
  auto next = torch::cat({a.narrow(1, 8, 1), b.narrow(1, 5, 1)});
  auto logits = m->forward(next, cache);  // [2,1,V]
  auto full_a = m->forward(a)[0][8], full_b = m->forward(b.narrow(1, 0, 6))[0][5];
  EXPECT_TRUE(torch::allclose(logits[0][0], full_a, 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(logits[1][0], full_b, 1e-4, 1e-5));
}

TEST(Model, KvBytesPerTokenCountsEveryLayer) {
  Transformer m(tiny_model());
  auto cache = m->make_cache(1);
  EXPECT_EQ(cache.bytes_per_token(), 2 /*layers*/ * 2 /*k,v*/ * 16 /*H*D*/ * 4 /*fp32*/);
}

TEST(Model, FactoryRefusesVariantsNotBuilt) {
  EXPECT_NO_THROW(make_model("baseline", tiny_model()));
  EXPECT_THROW(make_model("nonsense", tiny_model()), std::invalid_argument);
}

TEST(Sampling, TopKAndTopPKeepTheRightTokens) {
  auto logits = torch::log(torch::tensor({{0.5f, 0.3f, 0.15f, 0.05f}}));
  auto k2 = sampling_probs(logits, {1.0, 2, 1.0});
  EXPECT_NEAR(k2[0][0].item<float>(), 0.5f / 0.8f, 1e-5);
  EXPECT_EQ(k2[0][2].item<float>(), 0.0f);
  // top_p 0.7: 0.5 alone is below 0.7, so 0.3 (which crosses it) is kept too.
  auto p = sampling_probs(logits, {1.0, 0, 0.7});
  EXPECT_GT(p[0][1].item<float>(), 0.0f);
  EXPECT_EQ(p[0][2].item<float>(), 0.0f);
  EXPECT_NEAR(p.sum().item<float>(), 1.0f, 1e-5);
}

TEST(Sampling, DrawsFollowTheDistributionAndSeed) {
  auto probs = torch::tensor({{0.1f, 0.6f, 0.3f}}).expand({20000, 3}).contiguous();
  auto g1 = make_generator(7), g2 = make_generator(7);
  auto a = draw(probs, g1), b = draw(probs, g2);
  EXPECT_TRUE(torch::equal(a, b));
  auto freq = torch::bincount(a, {}, 3).to(torch::kFloat) / 20000.0;
  EXPECT_NEAR(freq[0].item<float>(), 0.1f, 0.015f);
  EXPECT_NEAR(freq[1].item<float>(), 0.6f, 0.015f);
  // Greedy at temperature 0.
  auto gen = make_generator(1);
  EXPECT_EQ(sample_next(torch::tensor({{0.1f, 3.0f, 0.2f}}), {0.0, 0, 1.0}, gen)[0].item<int64_t>(), 1);
}

TEST(Sampling, CpuFastPathDrawsWhatTheTensorFormDraws) {
  // The loops that serve CPU float rows against the tensor form: sampling_probs
  // (its operators run on double input) to 1e-6, and draw (the inverse CDF
  // written as operators, with the same uniforms) the same token in every
  // row, for every filter; sample_next is the two together.
  torch::manual_seed(3);
  auto logits = torch::randn({256, 97}) * 3;
  for (SamplingOptions opt : {SamplingOptions{1.0, 0, 1.0}, SamplingOptions{0.8, 0, 1.0}, SamplingOptions{0.7, 5, 1.0},
                              SamplingOptions{1.1, 0, 0.9}, SamplingOptions{0.6, 20, 0.7}}) {
    const std::string what = "temperature " + std::to_string(opt.temperature) + " top_k " + std::to_string(opt.top_k) +
                             " top_p " + std::to_string(opt.top_p);
    auto probs = sampling_probs(logits, opt);
    EXPECT_TRUE(torch::allclose(probs, sampling_probs(logits.to(torch::kDouble), opt), 1e-6, 1e-6)) << what;
    auto g1 = make_generator(11), g2 = make_generator(11), g3 = make_generator(11);
    auto drawn = draw(probs, g1);
    auto u = torch::rand({256, 1}, g2, torch::TensorOptions().dtype(torch::kFloat));
    EXPECT_TRUE(torch::equal(drawn, (probs.cumsum(-1) <= u).sum(-1).clamp_max(96))) << what;
    EXPECT_TRUE(torch::equal(sample_next(logits, opt, g3), drawn)) << what;
    // All consumed the generator alike: the next draws agree too.
    auto next = torch::rand({4}, g1);
    EXPECT_TRUE(torch::equal(next, torch::rand({4}, g2)));
    EXPECT_TRUE(torch::equal(next, torch::rand({4}, g3)));
  }
  auto g = make_generator(1);
  EXPECT_TRUE(torch::equal(sample_next(logits, {0.0, 0, 1.0}, g), logits.argmax(-1)));
}

// The nucleus by a full stable sort of the same probabilities: the walk the
// head-only sort replaced (models/sampling.cpp), every token visited.
torch::Tensor full_sort_nucleus(torch::Tensor probs, double top_p) {
  probs = probs.clone();
  const int64_t B = probs.size(0), V = probs.size(1);
  for (int64_t b = 0; b < B; ++b) {
    float* p = probs.data_ptr<float>() + b * V;
    std::vector<int32_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t c) { return p[a] > p[c]; });
    double cum = 0;
    float kept = 0;
    std::vector<bool> keep(V, false);
    for (int32_t j : order) {
      const float before = static_cast<float>(cum + p[j]) - p[j];
      cum += p[j];
      if (before < static_cast<float>(top_p)) {
        keep[j] = true;
        kept += p[j];
      }
    }
    for (int64_t j = 0; j < V; ++j) p[j] = keep[j] ? p[j] / kept : 0.0f;
  }
  return probs;
}

// The nucleus on the CPU rows sorts only the head of each distribution
// (models/sampling.cpp): on peaked rows (a trained model's), flat rows (the
// whole vocabulary), a row whose nucleus reaches far below its largest
// probability / 256, and rows with tied logits, it keeps what a full stable
// sort of the same probabilities keeps, with the same masses, bit for bit;
// and the tensor form's (its own softmax) to 1e-6 where the cut is not
// within a rounding of the last token's mass (top_p up to 0.95 here).
TEST(Sampling, NucleusOfTheHeadIsTheFullSortsNucleus) {
  torch::manual_seed(5);
  const int64_t V = 1024;
  auto peaked = torch::randn({64, V}) * 6, flat = torch::randn({16, V}) * 0.01;
  auto far = torch::full({1, V}, std::log(0.5 / (V - 1)));  // one token at 0.5, the rest 0.5 spread thin
  far[0][7] = std::log(0.5);
  auto tied = torch::randint(0, 4, {32, V}).to(torch::kFloat);  // four logit values: ties everywhere
  for (const auto& logits : {peaked, flat, far, tied})
    for (double temperature : {0.5, 1.0})
      for (double top_p : {0.5, 0.9, 0.95, 0.999}) {
        const SamplingOptions opt{temperature, 0, top_p};
        const std::string what = "temperature " + std::to_string(temperature) + " top_p " + std::to_string(top_p);
        auto fast = sampling_probs(logits, opt);
        auto full = full_sort_nucleus(sampling_probs(logits, {temperature, 0, 1.0}), top_p);
        EXPECT_TRUE(torch::equal(fast, full)) << what;
        if (top_p <= 0.95)
          EXPECT_TRUE(torch::allclose(fast, sampling_probs(logits.to(torch::kDouble), opt), 1e-6, 1e-6)) << what;
      }
  // The far row at temperature 1: its first threshold (0.5 / 256) holds the
  // large token alone, and the nucleus of 0.75 needs about 512 small ones.
  auto kept = (sampling_probs(far, {1.0, 0, 0.75}) > 0).sum().item<int64_t>();
  EXPECT_GT(kept, 480);
  EXPECT_LT(kept, 540);
}

// Draws through the fast rows follow the nucleus the reference computes: a
// chi-squared test of 20,000 draws from one peaked row at temperature 0.5 and
// top_p 0.95 (tokens expected fewer than 5 times pooled into one cell), at
// the 0.001 level; no draw falls outside the nucleus.
TEST(Sampling, NucleusDrawsPassAChiSquaredTestAgainstTheReference) {
  torch::manual_seed(9);
  const int64_t V = 1024, N = 20000;
  auto row = torch::randn({1, V}) * 2;  // at temperature 0.5 a nucleus of a few dozen tokens
  const SamplingOptions opt{0.5, 0, 0.95};
  auto expected = sampling_probs(row.to(torch::kDouble), opt)[0].to(torch::kDouble) * N;  // [V]
  auto gen = make_generator(21);
  auto drawn = sample_next(row.expand({N, V}).contiguous(), opt, gen);
  auto counts = torch::bincount(drawn, {}, V).to(torch::kDouble);
  double chi2 = 0, pooled_expected = 0, pooled_seen = 0;
  int cells = 0;
  for (int64_t j = 0; j < V; ++j) {
    const double e = expected[j].item<double>(), o = counts[j].item<double>();
    if (e == 0) {
      EXPECT_EQ(o, 0) << "token " << j << " lies outside the nucleus";
      continue;
    }
    if (e < 5) {
      pooled_expected += e;
      pooled_seen += o;
      continue;
    }
    chi2 += (o - e) * (o - e) / e;
    ++cells;
  }
  if (pooled_expected > 0) {
    chi2 += (pooled_seen - pooled_expected) * (pooled_seen - pooled_expected) / pooled_expected;
    ++cells;
  }
  ASSERT_GE(cells, 5) << "the row's nucleus is too small to test";
  const double critical = boost::math::quantile(boost::math::chi_squared(cells - 1), 0.999);
  EXPECT_LT(chi2, critical) << cells << " cells";
}

TEST(BatchSampler, DataOrderIsAFunctionOfSeedAndStep) {
  auto tokens = torch::arange(1000, torch::kInt);
  BatchSampler a(tokens, 4, 16, 11), b(tokens, 4, 16, 11), c(tokens, 4, 16, 12);
  auto [xa, ya] = a.train_batch(5);
  auto [xb, yb] = b.train_batch(5);
  EXPECT_TRUE(torch::equal(xa, xb));
  EXPECT_FALSE(torch::equal(xa, c.train_batch(5).first));
  EXPECT_FALSE(torch::equal(xa, a.train_batch(6).first));
  EXPECT_TRUE(torch::equal(ya.narrow(1, 0, 15), xa.narrow(1, 1, 15)));  // targets are inputs shifted by one
  // Validation windows do not depend on the seed.
  EXPECT_TRUE(torch::equal(a.eval_batch(1, 3).first, c.eval_batch(1, 3).first));
}

}  // namespace
}  // namespace zl
