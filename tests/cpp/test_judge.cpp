// The independent judge (issue 17 §7): one per corpus and tokenizer whatever
// the run's seed, variant or decode settings; at least the model's size; its NLL
// equal to a direct log-softmax; and building it leaves the run's random
// stream alone. That a study trains it once and every run reuses it is
// tested end to end in tests/python/test_verify.py.
#include <gtest/gtest.h>

#include <cmath>

#include "models/factory.h"
#include "sim/config.h"
#include "sim/judge.h"
#include "sim/model_options.h"

namespace {

zl::RunConfig small() {
  zl::RunConfig c;
  c.model.layers = 1;
  c.model.heads = 2;
  c.model.dim = 32;
  c.model.context = 16;
  c.judge.enabled = true;
  c.judge.layers = 2;
  c.judge.heads = 2;
  c.judge.dim = 64;
  return c;
}

TEST(Judge, OneJudgePerCorpusAndTokenizerWhateverTheRun) {
  zl::RunConfig a = small(), b = small();
  b.seed = 3;
  b.variant = "fused";
  b.fused.gate = true;
  b.decode.temperature = 0.3;
  b.decode.seed = 1;
  b.model.layers = 2;  // another study model on the same data: the same judge
  EXPECT_EQ(zl::train_id(zl::judge_config(a)), zl::train_id(zl::judge_config(b)));
  EXPECT_NE(zl::train_id(a), zl::train_id(b));
  zl::RunConfig other_corpus = small();
  other_corpus.data.corpus = "brown";
  EXPECT_NE(zl::train_id(zl::judge_config(a)), zl::train_id(zl::judge_config(other_corpus)));
  zl::RunConfig other_tokenizer = small();
  other_tokenizer.data.tokenizer = "byte";
  EXPECT_NE(zl::train_id(zl::judge_config(a)), zl::train_id(zl::judge_config(other_tokenizer)));
  zl::RunConfig wider = small();
  wider.judge.dim = 128;
  EXPECT_NE(zl::train_id(zl::judge_config(a)), zl::train_id(zl::judge_config(wider)));
  // The judge's keys are not the run's training keys: its model is shared with judge-less runs.
  zl::RunConfig off = small();
  off.judge.enabled = false;
  EXPECT_EQ(zl::train_id(a), zl::train_id(off));
}

TEST(Judge, MustBeAtLeastTheModelsSizeAndLeavesTheRunsRandomStreamAlone) {
  zl::RunConfig c = small();
  auto model = zl::make_model(c.variant, zl::model_config(c, 100));
  const int64_t params = model->parameter_count();
  torch::manual_seed(5);
  auto expected = torch::rand({4});
  torch::manual_seed(5);
  EXPECT_NO_THROW(zl::check_judge_size(c, 100));
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));  // the check built a model without drawing
  c.judge.layers = 1;
  c.judge.dim = 32;  // the model's own shape: allowed, a judge is better for its training
  EXPECT_NO_THROW(zl::check_judge_size(c, 100));
  c.variant = "sfcl";  // its correction module is not the language model judged
  EXPECT_NO_THROW(zl::check_judge_size(c, 100));
  c.variant = "baseline";
  c.judge.dim = 24;
  try {
    zl::check_judge_size(c, 100);
    FAIL() << "a judge smaller than the model was accepted";
  } catch (const zl::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("judge.dim"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fewer than the model's " + std::to_string(params)), std::string::npos)
        << e.what();
  }
}

TEST(Judge, MeanNllIsTheSpansLogSoftmaxUnderTheModel) {
  torch::manual_seed(2);
  zl::RunConfig c = small();
  auto model = zl::make_model(c.variant, zl::model_config(c, 50));
  model->eval();
  std::vector<std::vector<int32_t>> prefixes{{1, 2, 3}, {4}, {5, 6}, std::vector<int32_t>(30, 7)};
  std::vector<std::vector<int32_t>> spans{{9, 10}, {11, 12, 13}, {}, {8, 9}};
  auto nll = zl::mean_nll(model, prefixes, spans);
  ASSERT_EQ(nll.size(), 4u);
  torch::NoGradGuard no_grad;
  auto direct = [&](std::vector<int32_t> seq, size_t d) {
    if (seq.size() > 16) seq.erase(seq.begin(), seq.end() - 16);  // the model's context keeps the last tokens
    auto t = torch::tensor(std::vector<int64_t>(seq.begin(), seq.end())).unsqueeze(0);
    auto logp = torch::log_softmax(model->forward(t), -1)[0];
    double sum = 0;
    for (size_t j = seq.size() - d; j < seq.size(); ++j) sum -= logp[j - 1][seq[j]].item<double>();
    return sum / d;
  };
  EXPECT_NEAR(nll[0], direct({1, 2, 3, 9, 10}, 2), 1e-5);
  EXPECT_NEAR(nll[1], direct({4, 11, 12, 13}, 3), 1e-5);
  EXPECT_TRUE(std::isnan(nll[2]));  // nothing to score
  std::vector<int32_t> long_seq(30, 7);
  long_seq.push_back(8);
  long_seq.push_back(9);
  EXPECT_NEAR(nll[3], direct(long_seq, 2), 1e-5);
}

}  // namespace
