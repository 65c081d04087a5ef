// The proof of docs/adding-a-mechanism.md: a toy mechanism added through the
// attention hooks (models/attention_hook.h) alone, with no edit to
// AttentionImpl::forward or DecodeStep::through_layers, served on both the
// reference path and the fast decode step, which agree on it.
//
// The toy is attn_temp, "attention temperature": every pre-softmax score multiplied by
// a factor (> 1 sharpens each query's attention, < 1 flattens it), with a
// second part, "head gains", scaling each head's share of the attention
// output before the output projection, so that both hook points are shown.
//
// Its trained sibling, attn_temp_learned (the guide's "A mechanism with
// trained parameters"), learns one temperature per head with the model: a
// network registered with add_network (models/factory.h), its own key reaching
// the builder through model_config() (ModelConfig::network_options), its
// parameter saved in its own checkpoint, with no edit to models/factory.cpp,
// sim/model_options.cpp or models/model_config.h.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/attention_hook.h"
#include "models/decode_step.h"
#include "models/factory.h"
#include "models/sampling.h"
#include "models/transformer.h"
#include "sim/checkpoint.h"
#include "sim/config.h"
#include "sim/decoder.h"
#include "sim/memory_estimate.h"
#include "sim/model_options.h"
#include "sim/open_run.h"
#include "sim/run/run.h"
#include "sim/run_identity.h"
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

// The fast step and the reference path give `model` (its hooks installed)
// the same logits, within the tolerance of tests/cpp/test_decode_step.cpp,
// and the training forward (scores of all T queries at once) the same as
// the cache. For the toy here and the trained toy below.
void expect_both_paths_agree(Transformer& model) {
  torch::NoGradGuard no_grad;
  std::string why;
  ASSERT_TRUE(DecodeStep::supports(model, &why)) << why;
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

// (i) Both paths agree with the hook installed.
TEST(ToyMechanism, BothPathsAgreeWithTheHook) {
  Transformer model = model_with_toy(true);
  expect_both_paths_agree(model);
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

// ---- A mechanism with trained parameters: attn_temp_learned --------------
// (docs/adding-a-mechanism.md#a-mechanism-with-trained-parameters)

// Step 2, its model part. The parameters live in a module the network's
// builder registers on the model, so that the optimizer, the checkpoints and
// the parameter count see them: w [H], head h's score times exp(w_h), so that
// the temperature stays positive and masked keys stay at −inf. One vector,
// not a matrix: the trainer decays matrices only (sim/trainer.cpp), and a
// temperature should move by its gradient alone.
struct LearnedTemperatureImpl : torch::nn::Module {
  LearnedTemperatureImpl(int64_t heads, double init)
      : log_temperature(register_parameter("log_temperature", torch::full({heads}, std::log(init)))) {}
  torch::Tensor log_temperature;  // [H]
};
TORCH_MODULE(LearnedTemperature);

// The hook that reads them, in both forms. The reference form reads the
// parameter at every call (training's gradient reaches it through the
// scores); the fast form reads the floats for_fast_step() packed when the
// decode step packed the model (models/attention_hook.h).
class LearnedTemperatureHook : public AttentionHook {
 public:
  explicit LearnedTemperatureHook(LearnedTemperature temperature) : temperature_(std::move(temperature)) {}
  std::string name() const override { return "attn_temp_learned"; }
  bool uses_scores() const override { return true; }
  // Masked keys (−inf) stay out of the product: −inf · t would give t the
  // gradient 0 · (−inf) = NaN.
  torch::Tensor adjust_scores(const torch::Tensor& scores, const ScoreSite&) const override {
    const auto masked = torch::isinf(scores);
    const auto t = torch::exp(temperature_->log_temperature).view({1, -1, 1, 1});  // [1,H,1,1]
    return (scores.masked_fill(masked, 0) * t).masked_fill(masked, -kInf);         // [B,H,T,L]
  }
  // Only on for_fast_step()'s copy (the model's own hook has nothing packed: .at throws).
  void adjust_score_row(float* scores, int64_t n, const ScoreRow& row) const override {
    const float t = packed_.at(row.head);
    for (int64_t j = 0; j < n; ++j) scores[j] *= t;
  }
  std::shared_ptr<const AttentionHook> for_fast_step() const override {
    auto copy = std::make_shared<LearnedTemperatureHook>(temperature_);
    torch::NoGradGuard no_grad;
    auto t = torch::exp(temperature_->log_temperature.detach()).to(torch::kCPU, torch::kFloat).contiguous();
    copy->packed_.assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
    return copy;
  }
  // The parameter is the network's, not the fast step's: named here, so the
  // step takes the model (DecodeStep::supports).
  std::vector<torch::Tensor> trained_parameters() const override { return {temperature_->log_temperature}; }

 private:
  static constexpr float kInf = std::numeric_limits<float>::infinity();
  LearnedTemperature temperature_;
  std::vector<float> packed_;  // exp(w) per head, on the fast step's copy
};

// The network's builder (models/factory.h): the baseline's network, its
// shared weights drawn first as the baseline's at the same seed; then its own
// module, initialised from its own key, and the hook that reads it.
Transformer build_attn_temp_learned(const ModelConfig& cfg) {
  const double init = cfg.network_options.number("attn_temp_learned.init");
  if (!(init > 0)) throw std::invalid_argument("attn_temp_learned.init must be > 0 (a temperature)");
  Transformer model = make_model("baseline", cfg);
  LearnedTemperature temperature(cfg.heads, init);
  model->register_module("attn_temp_learned", temperature);  // state dict: attn_temp_learned.log_temperature
  model->add_attention_hook(std::make_shared<LearnedTemperatureHook>(temperature));
  return model;
}

// Step 3, its stage. The hook came with the network, so prepare() only
// reports what training made of the temperatures; add_flops counts the
// hook's one product per score.
class AttnTempLearnedStage : public VariantStage {
 public:
  void prepare(const StageContext& ctx, RunRecord& r) override {
    torch::NoGradGuard no_grad;
    auto w = ctx.model->named_parameters()["attn_temp_learned.log_temperature"];
    r.metrics["attn_temp_learned_mean"] = torch::exp(w).mean().item<double>();
  }
  void add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) override {
    per_module["attn_temp_learned"] = static_cast<double>(ctx.model->cfg.layers * ctx.model->cfg.heads * context);
  }
};

// Step 1, its row: its own family (it trains a model of its own, in its own
// checkpoint), its key with trains = yes (in its train_id, and in the
// ModelConfig its builder gets), the parameters it adds for the memory
// estimate; and its network, registered under its family's name.
void add_attn_temp_learned() {
  if (find_variant("attn_temp_learned")) return;
  VariantInfo row;
  row.name = "attn_temp_learned";
  row.family = "attn_temp_learned";  // its own family
  row.group = "known";
  row.colour = "#ffbb78";
  row.source = "docs/adding-a-mechanism.md";
  row.summary = "a temperature per head on the attention scores, learned with the model";
  row.keys = {{"attn_temp_learned.init", "float", "1", /*trains=*/true, "each head's temperature before training (> 0)"}};
  row.own_parameters = [](const RunConfig& c) { return static_cast<double>(c.model.heads); };  // w [H]
  add_network("attn_temp_learned", build_attn_temp_learned);
  add_variant(row, [](const RunConfig&) { return std::make_unique<AttnTempLearnedStage>(); });
}

// The tensor a checkpoint's model file saves as "<module>.<parameter>"
// (LibTorch nests a module's archive in its parent's); undefined if absent.
torch::Tensor saved_tensor(const std::string& file, const std::string& module, const std::string& parameter) {
  torch::serialize::InputArchive archive, child;
  archive.load_from(file);
  torch::Tensor t;
  if (!archive.try_read(module, child) || !child.try_read(parameter, t)) return {};
  return t;
}

// The model file of a complete checkpoint (the one model-<step>.pt it keeps).
std::string model_file(const std::string& checkpoint_dir) {
  for (const auto& e : std::filesystem::directory_iterator(checkpoint_dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("model-", 0) == 0 && e.path().extension() == ".pt") return e.path().string();
  }
  return "";
}

// The row and its key reach the builder through the config's one boundary
// (model_config), and the network is the baseline's plus its own parameter,
// which every count sees: LibTorch's, and the memory estimate's.
TEST(ToyMechanism, ATrainedNetworkIsBuiltFromItsOwnKey) {
  add_attn_temp_learned();
  const RunConfig base = tiny_run("baseline", "unused");
  RunConfig toy = tiny_run("attn_temp_learned", "unused");
  set_key(toy, "attn_temp_learned.init", "2", {"toy.ini", 3});
  EXPECT_EQ(trained_family(toy), "attn_temp_learned");
  const ModelConfig mc = model_config(toy, 257);
  EXPECT_EQ(mc.network_options.number("attn_temp_learned.init"), 2);
  EXPECT_TRUE(model_config(base, 257).network_options.empty());  // a built-in family carries none
  EXPECT_NE(message_of([&] { mc.network_options.number("attn_temp_learned.other"); }).find("attn_temp_learned.init"),
            std::string::npos);

  torch::manual_seed(3);
  Transformer plain = make_model("baseline", model_config(base, 257));
  torch::manual_seed(3);
  Transformer learned = make_model("attn_temp_learned", mc);
  const auto mine = learned->named_parameters();
  const auto* w = mine.find("attn_temp_learned.log_temperature");  // its module's name, in the state dict
  ASSERT_NE(w, nullptr);
  EXPECT_LT(max_diff(*w, torch::full({mc.heads}, std::log(2.0))), 1e-6);  // from its key
  for (const auto& p : plain->named_parameters()) {  // the shared weights: the baseline's at the same seed
    ASSERT_NE(mine.find(p.key()), nullptr) << p.key();
    EXPECT_EQ(max_diff(p.value(), mine[p.key()]), 0) << p.key();
  }
  EXPECT_EQ(learned->parameter_count(), plain->parameter_count() + mc.heads);
  EXPECT_DOUBLE_EQ(model_parameters(toy), static_cast<double>(learned->parameter_count()));

  // The built-in networks first, as before the registry; an unknown network
  // is refused, naming every registered one.
  const std::vector<std::string> names = network_names(),
                                 built_in{"baseline", "fused", "sfcl", "alibi", "gated_attn", "latent_kv"};
  ASSERT_GT(names.size(), built_in.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + built_in.size()), built_in);
  const std::string msg = message_of([&] { make_model("nonsense", mc); });
  for (const char* name : {"'nonsense'", "baseline", "gated_attn", "latent_kv", "attn_temp_learned"})
    EXPECT_NE(msg.find(name), std::string::npos) << name << " in: " << msg;
  EXPECT_THROW(add_network("attn_temp_learned", build_attn_temp_learned), std::invalid_argument);
}

// The trained hook in both paths, and a gradient for its parameter through
// the reference form (what training runs): without it nothing would learn.
TEST(ToyMechanism, TheTrainedHookAgreesOnBothPathsAndHasAGradient) {
  add_attn_temp_learned();
  ModelConfig mc = tiny_model_four_heads();
  mc.network_options.numbers["attn_temp_learned.init"] = 4;
  torch::manual_seed(7);
  Transformer learned = make_model("attn_temp_learned", mc);
  Transformer plain = tiny_transformer(7, tiny_model_four_heads());  // the same shared weights
  learned->eval();
  plain->eval();
  expect_both_paths_agree(learned);
  {
    // The same module with no hook naming it: a parameter the fast step
    // would leave out, so it refuses the model, naming the parameter.
    Transformer unnamed = tiny_transformer(7, tiny_model_four_heads());
    unnamed->register_module("attn_temp_learned", LearnedTemperature(mc.heads, 4.0));
    unnamed->eval();
    std::string why;
    EXPECT_FALSE(DecodeStep::supports(unnamed, &why));
    EXPECT_NE(why.find("attn_temp_learned.log_temperature"), std::string::npos) << why;
  }
  torch::manual_seed(2);
  auto tokens = torch::randint(mc.vocab, {2, 10}, torch::kLong);
  {
    torch::NoGradGuard no_grad;
    EXPECT_GT(max_diff(learned->forward(tokens), plain->forward(tokens)), 1e-3);  // the temperature matters
  }
  learned->train();
  learned->loss(tokens.narrow(1, 0, 9), tokens.narrow(1, 1, 9)).backward();
  const auto grad = learned->named_parameters()["attn_temp_learned.log_temperature"].grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_GT(grad.abs().min().item<float>(), 0) << grad;  // every head's
}

// The whole path of a trained mechanism: its row, key, network and stage, in
// a run of its own family beside the baseline's. It trains its own
// checkpoint, whose state dict holds its parameter, moved from its init by
// training; reopened from it, both decode paths agree on the trained
// temperatures; and the baseline's checkpoint is refused as another family's.
TEST(ToyMechanism, ATrainedMechanismRunsEndToEndAsItsOwnFamily) {
  add_attn_temp_learned();
  TempDir dir("zl_toy_trained");
  const RunConfig base = tiny_run("baseline", dir / "out");
  RunConfig toy = tiny_run("attn_temp_learned", dir / "out");
  set_key(toy, "attn_temp_learned.init", "4", {"toy.ini", 3});
  EXPECT_NE(train_id(toy), train_id(base));  // its own checkpoint
  RunConfig other = toy;
  set_key(other, "attn_temp_learned.init", "3", {"toy.ini", 3});
  EXPECT_NE(train_id(other), train_id(toy));  // its key shapes the trained model

  const RunRecord b = execute_run(base), t = execute_run(toy);
  ASSERT_EQ(b.status, "complete") << b.error;
  ASSERT_EQ(t.status, "complete") << t.error;
  EXPECT_NE(t.train_id, b.train_id);
  const int64_t H = tiny_model_four_heads().heads;
  EXPECT_EQ(t.metrics.at("params"), b.metrics.at("params") + H);
  EXPECT_EQ(t.metrics.at("decode_fast_step"), 1);  // served on the fast step, trained hook and all
  EXPECT_GT(t.metrics.at("flops_attn_temp_learned"), 0);
  const double mean = t.metrics.at("attn_temp_learned_mean");
  EXPECT_GT(mean, 3);  // near its init, 4: a few steps move it a little
  EXPECT_LT(mean, 5);

  // In its checkpoint's state dict, moved from its init by training.
  const std::string file = model_file(identify(toy).checkpoint_dir);
  ASSERT_FALSE(file.empty()) << identify(toy).checkpoint_dir;
  const torch::Tensor saved = saved_tensor(file, "attn_temp_learned", "log_temperature");
  ASSERT_TRUE(saved.defined()) << file << " has no attn_temp_learned.log_temperature";
  EXPECT_EQ(saved.sizes().vec(), std::vector<int64_t>{H});
  EXPECT_GT(max_diff(saved, torch::full({H}, std::log(4.0))), 1e-5);

  // Reopened from that checkpoint: the trained values, and both paths agree on them.
  RunRecord scratch;
  auto opened = open_run(toy, scratch, /*with_judge=*/false);
  {
    torch::NoGradGuard no_grad;
    EXPECT_EQ(max_diff(opened->model->named_parameters()["attn_temp_learned.log_temperature"], saved), 0);
  }
  opened->model->eval();
  expect_both_paths_agree(opened->model);
  {
    // The trained temperatures matter to those logits (or the agreement
    // above proves nothing about the hook): at temperature 1 they move by
    // several times the agreement's tolerance (1e-4).
    torch::NoGradGuard no_grad;
    const auto& prompt = opened->prompts.tokens[0];
    auto tokens = torch::tensor(std::vector<int64_t>(prompt.begin(), prompt.end())).unsqueeze(0);  // [1,T]
    auto trained = opened->model->forward(tokens);
    opened->model->named_parameters()["attn_temp_learned.log_temperature"].zero_();
    EXPECT_GT(max_diff(opened->model->forward(tokens), trained), 5e-4);
  }

  // The baseline's checkpoint is another family's network: refused by name
  // before anything loads.
  Transformer fresh = make_model("attn_temp_learned", model_config(toy, 257));
  const std::string msg =
      message_of([&] { CheckpointDir(identify(base).checkpoint_dir).load(&fresh, nullptr, "attn_temp_learned"); });
  for (const char* part : {"family baseline", "of family attn_temp_learned"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in: " << msg;
}

}  // namespace
}  // namespace zl
