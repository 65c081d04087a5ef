#include <gtest/gtest.h>

#include <cmath>

#include "sim/claims/stats.h"
#include "sim/config.h"
#include "sim/cost.h"
#include "sim/metrics.h"
#include "sim/trainer.h"

namespace zl {
namespace {

TEST(Metrics, RepetitionRateOnKnownSequences) {
  // 1 2 3 4 1 2 3 4: 5 four-grams, of which "1 2 3 4" repeats once.
  EXPECT_DOUBLE_EQ(repetition_rate({{1, 2, 3, 4, 1, 2, 3, 4}}), 1.0 / 5.0);
  EXPECT_DOUBLE_EQ(repetition_rate({{1, 2, 3, 4, 5, 6}}), 0.0);
  // Pooled over generations; a repeat across two generations does not count.
  EXPECT_DOUBLE_EQ(repetition_rate({{1, 2, 3, 4}, {1, 2, 3, 4}}), 0.0);
  EXPECT_DOUBLE_EQ(repetition_rate({{7, 7, 7, 7, 7, 7}}), 2.0 / 3.0);
  EXPECT_TRUE(std::isnan(repetition_rate({{1, 2}})));
}

TEST(Metrics, DistinctNIsDistinctNGramsPerGeneratedToken) {
  // Bigrams {1 2, 2 1} and {1 2, 2 3}: 3 distinct over 6 tokens.
  EXPECT_DOUBLE_EQ(distinct_n({{1, 2, 1}, {1, 2, 3}}, 2), 3.0 / 6);
  EXPECT_DOUBLE_EQ(distinct_n({{4, 4, 4, 4}}, 1), 1.0 / 4);
  EXPECT_TRUE(std::isnan(distinct_n({{}, {}}, 2)));
}

TEST(Metrics, PercentilesAndMeans) {
  std::vector<double> v{4, 1, 3, 2, 5};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 3);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 5);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 4.6);
  EXPECT_DOUBLE_EQ(mean(v), 3);
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
}

TEST(Metrics, UnigramLossAndBitsPerByte) {
  // Train counts: a=3, b=1 plus add-one over vocab 2 -> p(a)=4/6, p(b)=2/6.
  double loss = unigram_loss({0, 0, 0, 1}, {0, 1}, 2);
  EXPECT_NEAR(loss, -(std::log(4.0 / 6) + std::log(2.0 / 6)) / 2, 1e-12);
  // ln 2 nats per token, one token per byte -> 1 bit per byte.
  EXPECT_NEAR(bits_per_byte(std::log(2.0), 100, 100), 1.0, 1e-12);
  EXPECT_NEAR(bits_per_byte(std::log(2.0), 100, 400), 0.25, 1e-12);
}

TEST(Stats, BootstrapIntervalContainsTheMeanAndNarrowsWithAgreement) {
  auto wide = bootstrap_mean({1, 5, 9});
  EXPECT_DOUBLE_EQ(wide.mean, 5);
  EXPECT_LT(wide.lo, 5);
  EXPECT_GT(wide.hi, 5);
  auto narrow = bootstrap_mean({4.9, 5.0, 5.1});
  EXPECT_LT(narrow.hi - narrow.lo, wide.hi - wide.lo);
  EXPECT_EQ(bootstrap_mean({1, std::nan("")}).n, 1);  // NaNs (unmeasured) are left out
  auto again = bootstrap_mean({1, 5, 9});
  EXPECT_DOUBLE_EQ(again.lo, wide.lo);  // reproducible
}

TEST(Cost, FlopsPerTokenByModule) {
  ModelConfig c;
  c.vocab = 100;
  c.layers = 2;
  c.dim = 8;
  c.mlp_ratio = 4;
  auto f = flops_per_token(c, 10);
  EXPECT_DOUBLE_EQ(f["mlp"], 2 * (2 * 8 * 32 * 2));
  EXPECT_DOUBLE_EQ(f["attention"], 2 * (2 * 8 * 24 + 2 * 10 * 8 * 2 + 2 * 8 * 8));
  EXPECT_DOUBLE_EQ(f["lm_head"], 2 * 8 * 100);
  EXPECT_DOUBLE_EQ(total_flops(f), f["mlp"] + f["attention"] + f["lm_head"] + f["embedding"]);
}

TEST(Trainer, LearningRateWarmsUpThenDecaysByCosine) {
  TrainConfig t;
  t.lr = 1.0;
  t.warmup = 10;
  t.steps = 110;
  t.min_lr_ratio = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate(t, 0), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(t, 9), 1.0);
  EXPECT_NEAR(learning_rate(t, 60), 0.55, 1e-12);  // halfway down the cosine
  EXPECT_NEAR(learning_rate(t, 110), 0.1, 1e-12);
  for (int64_t s = 10; s < 110; ++s) EXPECT_LE(learning_rate(t, s + 1), learning_rate(t, s) + 1e-15);
}

}  // namespace
}  // namespace zl
