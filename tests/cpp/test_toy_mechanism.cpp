// The proof of docs/adding-a-mechanism.md: a toy mechanism added through the
// attention hooks (models/attention_hook.h) alone, with no edit to
// AttentionImpl::forward or DecodeStep::through_layers, served on both the
// reference path and the fast decode step, which agree on it.
//
// The toy is attn_temp, "attention temperature": every pre-softmax score multiplied by
// a factor (> 1 sharpens each query's attention, < 1 flattens it), with a
// second part, "head gains", scaling each head's share of the attention
// output before the output projection, so that both hook points are shown.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/attention_hook.h"
#include "models/decode_step.h"
#include "models/sampling.h"
#include "models/transformer.h"
#include "sim/config.h"
#include "sim/decoder.h"
#include "sim/open_run.h"
#include "sim/run/run.h"
#include "sim/stages/variant.h"
#include "sim/variants.h"
#include "tests/cpp/check_helpers.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

// Step 2 of docs/adding-a-mechanism.md, the mechanism's model part: the
// hook. Both forms of each point it uses: tensors for the reference path,
// floats for the fast step (const, thread-safe, no ATen).
class AttentionTemperature : public AttentionHook {
 public:
  AttentionTemperature(float factor, std::vector<float> head_gains)
      : factor_(factor), gains_(std::move(head_gains)) {}
  std::string name() const override { return "attn_temp"; }

  // (a) What a key's score gets: factor · q·k/sqrt(D). Masked keys stay −inf
  // (the factor is positive).
  bool uses_scores() const override { return true; }
  torch::Tensor adjust_scores(const torch::Tensor& scores, const ScoreSite&) const override {
    return scores * factor_;  // [B,H,T,L]
  }
  void adjust_score_row(float* scores, int64_t n, const ScoreRow&) const override {
    for (int64_t j = 0; j < n; ++j) scores[j] *= factor_;
  }

  // (b) What runs after attention: head h's D channels of y times gains[h].
  bool uses_output() const override { return true; }
  torch::Tensor after_attention(const torch::Tensor& y, const torch::Tensor&, int64_t) const override {
    const int64_t B = y.size(0), T = y.size(1), C = y.size(2), H = static_cast<int64_t>(gains_.size());
    auto g = torch::tensor(gains_, y.options()).view({1, 1, H, 1});    // [1,1,H,1]
    return (y.view({B, T, H, C / H}) * g).view({B, T, C});            // [B,T,H,D] -> [B,T,C]
  }
  void after_attention_rows(float* y, const float*, int64_t M, int64_t C, int64_t) const override {
    const int64_t H = static_cast<int64_t>(gains_.size()), D = C / H;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t c = 0; c < C; ++c) y[m * C + c] *= gains_[c / D];
  }

 private:
  float factor_;              // > 0
  std::vector<float> gains_;  // one per head
};

// Step 3, what the mechanism's stage does in prepare(): install the hook on
// the model it decodes, before anything decodes (here a tiny random model,
// four heads). The tests below are step 4.
Transformer model_with_toy(bool hooked) {
  Transformer model = tiny_transformer(7, tiny_model_four_heads());
  const std::vector<float> head_gains{1.5f, 0.5f, 1.0f, 2.0f};
  if (hooked) model->add_attention_hook(std::make_shared<AttentionTemperature>(/*factor=*/4.0f, head_gains));
  model->eval();
  return model;
}

// Reference-path logits of a prefill and steps (every row, [3,T,V]).
torch::Tensor reference_logits(Transformer& model, const torch::Tensor& tokens) {
  auto cache = model->make_cache(3);
  std::vector<torch::Tensor> parts{model->forward(tokens.narrow(1, 0, 6), cache)};
  for (int64_t t = 6; t < tokens.size(1); ++t) parts.push_back(model->forward(tokens.narrow(1, t, 1), cache));
  return torch::cat(parts, 1);
}

// (i) The fast step and the reference path give the same logits with the
// hook installed (the tolerance of tests/cpp/test_decode_step.cpp), and the
// training forward (scores of all T queries at once) the same as the cache.
TEST(ToyMechanism, BothPathsAgreeWithTheHook) {
  Transformer model = model_with_toy(true);
  torch::NoGradGuard no_grad;
  ASSERT_TRUE(DecodeStep::supports(model));
  torch::manual_seed(1);
  auto tokens = torch::randint(model->cfg.vocab, {3, 12}, torch::kLong);
  auto want = reference_logits(model, tokens);  // [3,12,V]
  EXPECT_LT(max_diff(model->forward(tokens), want), 1e-4);

  for (int threads : {1, 2}) {  // the team splits one sequence's heads, or takes whole sequences
    SCOPED_TRACE("threads " + std::to_string(threads));
    const int saved = at::get_num_threads();
    at::set_num_threads(threads);
    {
      DecodeStep fast(model);  // reads the model's hooks here
      auto cache = model->make_cache(3);
      std::vector<std::vector<int32_t>> prompts(3);
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t t = 0; t < 6; ++t) prompts[b].push_back(static_cast<int32_t>(tokens[b][t].item<int64_t>()));
      auto got = fast.prefill(prompts, cache);  // [3,V], the last prompt row
      EXPECT_LT(max_diff(got, want.select(1, 5)), 1e-4);
      for (int64_t t = 6; t < 12; ++t) {
        std::vector<int64_t> step;
        for (int64_t b = 0; b < 3; ++b) step.push_back(tokens[b][t].item<int64_t>());
        EXPECT_LT(max_diff(fast.forward(step, cache), want.select(1, t)), 1e-4) << "row " << t;
      }
    }
    at::set_num_threads(saved);
  }
}

// Greedy continuations of three prompts, on the fast step or the reference path.
DecodeOutput greedy(Transformer& model, bool fast_step) {
  std::vector<std::vector<int32_t>> prompts{{1, 2, 3}, {4}, {5, 6, 7, 8, 9}};
  DecodeOptions opt;
  opt.max_new_tokens = 8;
  opt.batch = 3;
  opt.sampling.temperature = 0;  // greedy: tokens follow the logits, not a draw
  opt.fast_step = fast_step;
  auto gen = make_generator(1);
  return decode(model, prompts, opt, gen);
}

// (ii) The hook changes the logits, and the tokens: the same weights
// without it decode otherwise (without that, (i) and (iii) prove nothing).
TEST(ToyMechanism, TheHookChangesTheLogitsAndTheTokens) {
  Transformer plain = model_with_toy(false), hooked = model_with_toy(true);
  {
    torch::NoGradGuard no_grad;
    auto tokens = torch::randint(plain->cfg.vocab, {3, 12}, torch::kLong);
    EXPECT_GT(max_diff(plain->forward(tokens), hooked->forward(tokens)), 1e-3);
  }
  EXPECT_NE(greedy(plain, true).continuations, greedy(hooked, true).continuations);
}

// (iii) Greedy decoding with the hook gives the same tokens on both paths.
TEST(ToyMechanism, GreedyTokensAgreeOnBothPaths) {
  Transformer model = model_with_toy(true);
  auto fast = greedy(model, true);
  EXPECT_TRUE(fast.fast_step) << fast.step_note;  // a model with hooks is still served on the fast step
  EXPECT_EQ(fast.continuations, greedy(model, false).continuations);
}

// Where score hooks cannot run they say so, by name, on both paths: with
// fused's parts, and on an evicting cache (its slots are not positions).
TEST(ToyMechanism, ScoreHooksAreRefusedWhereTheyCannotRun) {
  {
    Transformer model = model_with_toy(true);
    torch::NoGradGuard no_grad;
    EvictionOptions streaming;
    streaming.policy = EvictionOptions::Policy::Streaming;
    streaming.budget = 4;
    streaming.sinks = 1;
    auto cache = model->make_cache(1, 0, streaming);
    auto ref = message_of([&] { model->forward(torch::zeros({1, 2}, torch::kLong), cache); });
    EXPECT_NE(ref.find("attn_temp"), std::string::npos) << ref;
    DecodeStep fast(model);
    auto mine = model->make_cache(1, 0, streaming);
    auto step = message_of([&] { fast.forward({1}, mine); });
    EXPECT_NE(step.find("attn_temp"), std::string::npos) << step;
  }
  ModelConfig c = tiny_model_four_heads();
  c.fused.key_weighting = FusedOptions::KeyWeighting::Scale;
  Transformer model(c);
  model->add_attention_hook(std::make_shared<AttentionTemperature>(2.0f, std::vector<float>(4, 1.0f)));
  model->eval();
  std::string why;
  EXPECT_FALSE(DecodeStep::supports(model, &why));
  EXPECT_NE(why.find("attn_temp"), std::string::npos) << why;
  torch::NoGradGuard no_grad;
  auto ref = message_of([&] { model->forward(torch::zeros({1, 4}, torch::kLong)); });
  EXPECT_NE(ref.find("attn_temp"), std::string::npos) << ref;
}

// Step 3: the stage. In prepare() it reads the variant's own key and installs
// the hook on the model the run decodes (the baseline's checkpoint).
class AttnTempStage : public VariantStage {
 public:
  void prepare(const StageContext& ctx, RunRecord& r) override {
    const auto factor = static_cast<float>(option_number(ctx.cfg, "attn_temp.factor"));
    std::vector<float> gains;
    for (int64_t h = 0; h < ctx.model->cfg.heads; ++h) gains.push_back(h % 2 ? 0.5f : 1.5f);
    ctx.model->add_attention_hook(std::make_shared<AttentionTemperature>(factor, gains));
    r.metrics["attn_temp_factor"] = factor;
  }
};

// Step 1: the row. In the tree it is a VARIANT and a VARIANT_KEY line of
// sim/variants.def; a test cannot add a row to the product's table, so it
// gives the same fields to add_variant, whose keys go through the same config.
void add_attn_temp() {
  if (find_variant("attn_temp")) return;
  VariantInfo row;
  row.name = "attn_temp";
  row.family = "baseline";  // trains nothing: decodes the baseline's checkpoint
  row.group = "known";
  row.colour = "#aec7e8";
  row.source = "docs/adding-a-mechanism.md";
  row.summary = "attention scores times a factor, head outputs times gains, at decode time";
  row.keys = {{"attn_temp.factor", "float", "2", /*trains=*/false, "every pre-softmax score times this"}};
  add_variant(row, [](const RunConfig&) { return std::make_unique<AttnTempStage>(); });
}

RunConfig tiny_run(const std::string& variant, const std::string& dir) {
  RunConfig c;
  const ModelConfig m = tiny_model_four_heads();
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"variant", variant}, {"data.tokenizer", "byte"}, {"data.documents", "60"},
           {"model.layers", std::to_string(m.layers)}, {"model.heads", std::to_string(m.heads)},
           {"model.dim", std::to_string(m.dim)}, {"model.context", "48"}, {"train.steps", "8"},
           {"train.warmup", "1"}, {"train.batch", "4"}, {"train.eval_every", "8"}, {"train.checkpoint_every", "8"},
           {"train.eval_batches", "1"}, {"train.threads", "1"}, {"decode.prompts", "4"}, {"decode.batch", "4"},
           {"decode.max_new_tokens", "8"}, {"decode.temperature", "0"}, {"output.dir", dir},
           {"output.verbosity", "0"}})
    set_key(c, key, value, {"test", 0});
  return c;
}

// The whole path: the variant's row, its key and its stage, end to end in a
// run beside the baseline's, on the baseline's checkpoint and the fast step.
TEST(ToyMechanism, RunsEndToEndThroughTheTableItsKeyAndItsStage) {
  add_attn_temp();
  TempDir dir("zl_toy");
  RunConfig base = tiny_run("baseline", dir / "out"), toy = tiny_run("attn_temp", dir / "out");
  set_key(toy, "attn_temp.factor", "4", {"toy.ini", 3});
  EXPECT_EQ(train_id(toy), train_id(base));  // one checkpoint: the toy trains nothing
  EXPECT_NE(run_id(toy), run_id(base));
  RunConfig other = toy;
  set_key(other, "attn_temp.factor", "3", {"toy.ini", 3});
  EXPECT_NE(run_id(other), run_id(toy));  // its key is part of its identity

  const RunRecord b = execute_run(base), t = execute_run(toy);
  ASSERT_EQ(b.status, "complete") << b.error;
  ASSERT_EQ(t.status, "complete") << t.error;
  EXPECT_EQ(t.metrics.at("attn_temp_factor"), 4);
  EXPECT_EQ(t.metrics.at("decode_fast_step"), 1);  // served on the fast step, hook and all
  EXPECT_EQ(t.train_id, b.train_id);
  // The same weights (one checkpoint), opened to decode as each run does:
  // the toy's stage has installed its hook, which alone moves the logits.
  RunRecord scratch;
  auto opened_base = open_run(base, scratch, /*with_judge=*/false), opened_toy = open_run(toy, scratch, false);
  torch::NoGradGuard no_grad;
  const auto& prompt = opened_toy->prompts.tokens[0];
  auto tokens = torch::tensor(std::vector<int64_t>(prompt.begin(), prompt.end())).unsqueeze(0);  // [1,T]
  EXPECT_GT(max_diff(opened_toy->model->forward(tokens), opened_base->model->forward(tokens)), 1e-3);
}

}  // namespace
}  // namespace zl
