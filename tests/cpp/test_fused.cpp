// Variant fused (seed 002 §2.1): key weighting, value distillation, logits
// gate, and the stage's monitoring figures.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "models/factory.h"
#include "models/key_weighting.h"
#include "models/logits_gate.h"
#include "models/transformer.h"
#include "sim/config.h"
#include "sim/stages/fused_stage.h"
#include "tests/cpp/check_helpers.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

using KW = FusedOptions::KeyWeighting;
using Imp = FusedOptions::Importance;

ModelConfig all_on(KW kw = KW::Scale, Imp imp = Imp::AttnMass) {
  ModelConfig c = tiny_model();
  c.fused.key_weighting = kw;
  c.fused.importance = imp;
  c.fused.alpha = 0.3;  // large enough that the weights matter over 24 tokens
  c.fused.value_rank = 4;
  c.fused.gate = true;
  return c;
}

// At GPT-2 initialisation the attention scores are near 0, where scaling a key
// changes nothing (the score is already 0): sharpen them so the weights matter.
void sharpen(Transformer& m) {
  torch::NoGradGuard no_grad;
  for (const auto& b : *m->blocks) b->as<Block>()->attn->qkv->weight.mul_(15.0);
}

TEST(FusedKeyWeights, FormulaMatchesHandComputedValues) {
  auto d = torch::tensor({0.f, 1.f, 2.f, 10.f, -3.f});
  auto imp = torch::tensor({0.f, 0.5f, 1.f, 0.2f, 0.f});
  auto w = key_weights(d, imp, 0.05);
  // exp(-0.05 * d * (1 - I)): 1, e^-0.025, 1 (fully important), e^-0.4, 1 (future key, clamped).
  std::vector<float> expected{1.f, 0.975310f, 1.f, 0.670320f, 1.f};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(w[i].item<float>(), expected[i], 1e-5) << i;
  EXPECT_NEAR(log_key_weights(d, imp, 0.05)[3].item<float>(), -0.4f, 1e-6);
  // attn_mass: the mass received from the d queries before, as a mean.
  auto m = attn_mass_importance(torch::tensor({0.6f, 0.3f}), torch::tensor({3.f, 0.f}));
  EXPECT_NEAR(m[0].item<float>(), 0.2f, 1e-6);
  EXPECT_NEAR(m[1].item<float>(), 0.3f, 1e-6);
  EXPECT_NEAR(squash(torch::tensor({3.f}))[0].item<float>(), 0.75f, 1e-6);
}

// grad_norm's importance in closed form (models/transformer.cpp) is the
// norm autograd gives for ∂ LSE(head(x)) / ∂x, squashed.
TEST(FusedKeyWeights, GradNormImportanceIsTheAutogradNormOfTheLogSumExp) {
  torch::manual_seed(5);
  Transformer m(all_on(KW::Scale, Imp::GradNorm));
  {
    torch::NoGradGuard no_grad;
    m->ln_f->weight.uniform_(0.5, 1.5);  // a norm that is not the identity
    m->ln_f->bias.uniform_(-0.2, 0.2);
  }
  auto x = 3 * torch::randn({2, 5, 16});
  auto h = x.clone().requires_grad_(true);
  auto lse = torch::logsumexp(torch::nn::functional::linear(m->ln_f(h), m->wte->weight), -1).sum();
  auto g = torch::autograd::grad({lse}, {h})[0];
  auto want = g.norm(2, -1) / (1 + g.norm(2, -1));
  auto got = m->token_importance(x);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6)) << got << want;
  EXPECT_FALSE(got.requires_grad());
}

TEST(FusedKeyWeights, AlphaZeroIsTheBaseline) {
  // With alpha = 0 every weight is 1: the same parameters give the baseline's logits.
  for (KW kw : {KW::Scale, KW::Bias}) {
    ModelConfig c = tiny_model();
    c.fused.key_weighting = kw;
    c.fused.alpha = 0.0;
    torch::manual_seed(4);
    Transformer fused = make_model("fused", c);
    torch::manual_seed(4);
    Transformer base = make_model("baseline", tiny_model());
    sharpen(fused);
    sharpen(base);
    fused->eval();
    base->eval();
    auto x = torch::randint(50, {2, 16}, torch::kLong);
    EXPECT_LT(max_diff(fused->forward(x), base->forward(x)), 1e-5);
    c.fused.alpha = 0.5;
    torch::manual_seed(4);
    Transformer decayed = make_model("fused", c);
    sharpen(decayed);
    decayed->eval();
    EXPECT_GT(max_diff(decayed->forward(x), base->forward(x)), 1e-3);  // the weighting does something
  }
}

TEST(FusedKeyWeights, AttnMassWeightsMatchAManualComputation) {
  // One layer, one head: recompute w_ij = exp(-alpha (i-j) (1 - mean_{m=j..i-1} A_mj))
  // by hand from q and k, and compare with the weights the attention records.
  ModelConfig c = tiny_model();
  c.layers = 1;
  c.heads = 1;
  c.fused.key_weighting = KW::Bias;
  c.fused.alpha = 0.2;
  torch::manual_seed(5);
  Transformer m = make_model("fused", c);
  m->eval();
  torch::NoGradGuard no_grad;
  const int64_t T = 6;
  auto tokens = torch::randint(50, {1, T}, torch::kLong);
  FusedTrace trace;
  m->forward_traced(tokens, trace);
  auto x = m->wte(tokens) + m->wpe(torch::arange(T, torch::kLong));
  auto blk = m->blocks[0]->as<Block>();
  auto qkv = blk->attn->qkv(blk->ln1(x))[0];  // [T,3C]
  auto q = qkv.narrow(1, 0, 16), k = qkv.narrow(1, 16, 16);
  auto a = torch::softmax((torch::matmul(q, k.t()) / std::sqrt(16.0)).masked_fill(torch::ones({T, T}).triu(1).to(torch::kBool), -INFINITY), -1);
  std::vector<float> expected;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double mass = 0;
      for (int64_t mq = j; mq < i; ++mq) mass += a[mq][j].item<double>();
      double imp = i > j ? mass / (i - j) : 0.0;
      expected.push_back(static_cast<float>(std::exp(-0.2 * (i - j) * (1 - imp))));
    }
  ASSERT_EQ(trace.key_weights.size(), 1u);
  ASSERT_EQ(trace.key_weights[0].numel(), static_cast<int64_t>(expected.size()));
  EXPECT_LT(max_diff(trace.key_weights[0], torch::tensor(expected)), 1e-5);
}

struct Case {
  const char* name;
  ModelConfig cfg;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"all_scale_attn_mass", all_on(KW::Scale, Imp::AttnMass)});
  out.push_back({"all_bias_attn_mass", all_on(KW::Bias, Imp::AttnMass)});
  out.push_back({"all_scale_hidden_norm", all_on(KW::Scale, Imp::HiddenNorm)});
  out.push_back({"all_bias_grad_norm", all_on(KW::Bias, Imp::GradNorm)});
  ModelConfig hard = all_on();
  hard.fused.hard_orthogonal = true;
  out.push_back({"all_hard_orthogonal", hard});
  ModelConfig kw = tiny_model();
  kw.fused.key_weighting = KW::Scale;
  kw.fused.alpha = 0.3;
  out.push_back({"key_weighting_alone", kw});
  ModelConfig vd = tiny_model();
  vd.fused.value_rank = 3;
  out.push_back({"value_distill_alone", vd});
  ModelConfig g = tiny_model();
  g.fused.gate = true;
  out.push_back({"gate_alone", g});
  return out;
}

class FusedParts : public ::testing::TestWithParam<Case> {
 protected:
  Transformer model() {
    torch::manual_seed(11);
    Transformer m = make_model("fused", GetParam().cfg);
    sharpen(m);
    if (m->gate) {  // a gate that does something (its init is near identity)
      torch::NoGradGuard no_grad;
      m->gate->fc2->weight.normal_(0.0, 2.0);
      m->gate->fc2->bias.zero_();
    }
    m->eval();
    return m;
  }
};

TEST_P(FusedParts, IncrementalDecodeEqualsFullForward) {
  Transformer m = model();
  torch::NoGradGuard no_grad;
  auto tokens = torch::randint(50, {3, 20}, torch::kLong);
  auto full = m->forward(tokens);
  auto cache = m->make_cache(3);
  std::vector<torch::Tensor> parts{m->forward(tokens.narrow(1, 0, 7), cache)};
  for (int64_t t = 7; t < 16; ++t) parts.push_back(m->forward(tokens.narrow(1, t, 1), cache));
  parts.push_back(m->forward(tokens.narrow(1, 16, 4), cache));
  auto incremental = torch::cat(parts, 1);
  EXPECT_LT(max_diff(full, incremental), 1e-4);
}

TEST_P(FusedParts, RollbackRollsTheFusedStateBack) {
  Transformer m = model();
  torch::NoGradGuard no_grad;
  auto a = torch::randint(50, {2, 18}, torch::kLong);
  auto cache = m->make_cache(2);
  m->forward(a.narrow(1, 0, 14), cache);
  // Sequence 0 drops 4 tokens, sequence 1 drops 2; both then continue with new tokens.
  cache.truncate(0, 10);
  cache.truncate(1, 12);
  auto b = a.clone();
  b.narrow(1, 10, 8).copy_(torch::randint(50, {2, 8}, torch::kLong));
  auto seq0 = b[0].clone(), seq1 = a[1].clone();
  seq1.narrow(0, 12, 6).copy_(b[1].narrow(0, 10, 6));
  std::vector<torch::Tensor> got0, got1;
  for (int64_t t = 0; t < 6; ++t) {
    auto feed = torch::stack({seq0.narrow(0, 10 + t, 1), seq1.narrow(0, 12 + t, 1)});  // [2,1]
    auto out = m->forward(feed, cache);
    got0.push_back(out[0][0]);
    got1.push_back(out[1][0]);
  }
  auto full0 = m->forward(seq0.narrow(0, 0, 16).unsqueeze(0))[0].narrow(0, 10, 6);
  auto full1 = m->forward(seq1.unsqueeze(0))[0].narrow(0, 12, 6);
  EXPECT_LT(max_diff(torch::stack(got0), full0), 1e-4);
  EXPECT_LT(max_diff(torch::stack(got1), full1), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Fused, FusedParts, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(FusedParts, SharedWeightsStartAsTheBaselines) {
  // Same seed, every part on: the weights a fused model shares with the
  // baseline start identical (paired comparisons).
  ModelConfig c = all_on();
  torch::manual_seed(9);
  Transformer fused = make_model("fused", c);
  torch::manual_seed(9);
  Transformer base = make_model("baseline", tiny_model());
  auto fp = fused->named_parameters();
  for (const auto& p : base->named_parameters()) {
    ASSERT_TRUE(fp.contains(p.key())) << p.key();
    EXPECT_TRUE(torch::equal(fp[p.key()], p.value())) << p.key();
  }
  EXPECT_GT(fused->parameter_count(), base->parameter_count());
}

TEST(FusedValueDistill, OrthoPenaltyAndGradientOnAKnownMatrix) {
  ModelConfig c = tiny_model();  // D = 8
  c.fused.value_rank = 2;
  Attention attn(c);
  {
    torch::NoGradGuard no_grad;
    attn->value_proj.zero_();
    attn->value_proj[0][0] = 1.0;  // both rows e_0: PPᵀ = [[1,1],[1,1]]
    attn->value_proj[1][0] = 1.0;
  }
  auto pen = attn->ortho_penalty();
  EXPECT_NEAR(pen.item<float>(), 2.0f, 1e-6);  // ‖[[0,1],[1,0]]‖² = 2
  pen.backward();
  // d‖PPᵀ − I‖²/dP = 4 (PPᵀ − I) P = 4 [[0,1],[1,0]] P: both rows 4 e_0.
  auto expected = torch::zeros({2, 8});
  expected[0][0] = 4.0;
  expected[1][0] = 4.0;
  EXPECT_LT(max_diff(attn->value_proj.grad(), expected), 1e-6);

  // P = 2 [I 0]: PPᵀ − I = 3 I, penalty 9 r, gradient 4 * 3 * 2 = 24 on the diagonal.
  attn->value_proj.mutable_grad() = torch::Tensor();
  {
    torch::NoGradGuard no_grad;
    attn->value_proj.zero_();
    attn->value_proj[0][0] = 2.0;
    attn->value_proj[1][1] = 2.0;
  }
  pen = attn->ortho_penalty();
  EXPECT_NEAR(pen.item<float>(), 18.0f, 1e-5);
  pen.backward();
  EXPECT_NEAR(attn->value_proj.grad()[1][1].item<float>(), 24.0f, 1e-5);
  EXPECT_NEAR(attn->value_proj.grad()[0][1].item<float>(), 0.0f, 1e-6);
}

TEST(FusedValueDistill, HardParametrisationIsOrthonormalAndPenaltyEntersTheLoss) {
  ModelConfig c = tiny_model();
  c.fused.value_rank = 3;
  c.fused.hard_orthogonal = true;
  Transformer hard = make_model("fused", c);
  auto p = hard->blocks[0]->as<Block>()->attn->value_projection();
  EXPECT_LT(max_diff(torch::matmul(p, p.t()), torch::eye(3)), 1e-5);
  EXPECT_FALSE(hard->regularizer().defined());  // nothing to penalise

  c.fused.hard_orthogonal = false;
  c.fused.ortho_weight = 0.5;
  Transformer soft = make_model("fused", c);
  {
    torch::NoGradGuard no_grad;
    soft->blocks[0]->as<Block>()->attn->value_proj.mul_(2.0);  // PPᵀ = 4 I: penalty 9 * 3 in layer 0
  }
  EXPECT_NEAR(soft->regularizer().item<float>(), 0.5f * 27.0f, 1e-3);
  EXPECT_FALSE(make_model("baseline", tiny_model())->regularizer().defined());
}

TEST(FusedValueDistill, CacheHoldsRValuesAndBytesAreMeasured) {
  ModelConfig c = tiny_model();  // L = 2, H = 2, D = 8, fp32
  c.fused.value_rank = 3;
  Transformer m = make_model("fused", c);
  auto cache = m->make_cache(2, 20);
  EXPECT_EQ(cache.layers[0].v.sizes(), (std::vector<int64_t>{2, 2, 20, 3}));
  std::map<std::string, int64_t> parts;
  int64_t total = cache.bytes_per_token(&parts);
  EXPECT_EQ(parts["k"], 2 * 2 * 8 * 4);
  EXPECT_EQ(parts["v"], 2 * 2 * 3 * 4);
  EXPECT_EQ(parts["fused_state"], 0);
  EXPECT_EQ(total, parts["k"] + parts["v"]);
  EXPECT_LT(total, make_model("baseline", tiny_model())->make_cache(1).bytes_per_token());

  // Key weighting's per-token state is counted too: a scalar per token (hidden_norm)
  // or, for attn_mass, a column sum and a query per head (models/kv_cache.h).
  c.fused.key_weighting = KW::Bias;
  c.fused.importance = Imp::HiddenNorm;
  make_model("fused", c)->make_cache(1, 20).bytes_per_token(&parts);
  EXPECT_EQ(parts["fused_state"], 2 * 4);
  c.fused.importance = Imp::AttnMass;
  make_model("fused", c)->make_cache(1, 20).bytes_per_token(&parts);
  EXPECT_EQ(parts["fused_state"], 2 * 2 * (1 + 8) * 4);  // layers x heads x (sum + D query values) x fp32
}

// attn_mass's state grows linearly with the cache's capacity (issue 29 item
// 6: it was [B,H,cap,cap]): the bytes of every tensor of it, at four capacities.
TEST(FusedKeyWeights, AttnMassStateIsLinearInCapacity) {
  ModelConfig c = tiny_model();  // L = 2, H = 2, D = 8
  c.context = 512;
  c.fused.key_weighting = KW::Scale;
  c.fused.importance = Imp::AttnMass;
  Transformer m = make_model("fused", c);
  auto state_bytes = [&](int64_t capacity) {
    int64_t bytes = 0;
    for (const auto& l : m->make_cache(2, capacity).layers)
      for (const auto& t : {l.mass, l.queries, l.mass_rows})
        if (t.defined()) bytes += t.numel() * t.element_size();
    return bytes;
  };
  const int64_t fixed = 2 * 2 * 8;  // mass_rows: one count per layer and sequence, whatever the capacity
  for (int64_t cap : {32, 64, 128, 256})
    EXPECT_EQ(state_bytes(cap) - fixed, cap * 2 * 2 * 2 * (1 + 8) * 4) << cap;  // per slot: L x B x H x (1 + D) fp32
  EXPECT_EQ(state_bytes(256) - fixed, 8 * (state_bytes(32) - fixed));
}

// Rollback, then more tokens, on both paths: the column sums taken back
// (by subtraction for a short rollback, rebuilt for a deep one; by a direct
// `lengths` edit too, as a right-padded prefill does) still match the full
// forward and each other.
TEST(FusedKeyWeights, AttnMassRollbackAndContinueMatchesTheReference) {
  ModelConfig c = tiny_model();
  c.fused.key_weighting = KW::Scale;
  c.fused.importance = Imp::AttnMass;
  c.fused.alpha = 0.3;
  c.fused.gate = true;
  torch::manual_seed(21);
  Transformer m = make_model("fused", c);
  sharpen(m);
  m->eval();
  torch::NoGradGuard no_grad;
  auto a = torch::randint(50, {2, 24}, torch::kLong);
  auto b = torch::randint(50, {2, 24}, torch::kLong);
  auto cache = m->make_cache(2);
  m->forward(a.narrow(1, 0, 16), cache);
  cache.truncate(0, 13);  // a short rollback: three rows subtracted
  cache.truncate(1, 3);   // a deep one: the sums rebuilt from three rows
  cache.sync_mass();
  // The sums as a fresh cache holding the kept tokens has them.
  auto fresh0 = m->make_cache(1), fresh1 = m->make_cache(1);
  m->forward(a.narrow(0, 0, 1).narrow(1, 0, 13), fresh0);
  m->forward(a.narrow(0, 1, 1).narrow(1, 0, 3), fresh1);
  for (size_t l = 0; l < cache.layers.size(); ++l) {
    EXPECT_EQ(cache.layers[l].mass_rows[0].item<int64_t>(), 13);
    EXPECT_LT(max_diff(cache.layers[l].mass[0], fresh0.layers[l].mass[0]), 1e-5) << l;
    EXPECT_LT(max_diff(cache.layers[l].mass[1], fresh1.layers[l].mass[0]), 1e-5) << l;
  }
  // Continue with other tokens, one and three at a time, then roll back by
  // setting `lengths` directly and continue again.
  auto seq0 = torch::cat({a[0].narrow(0, 0, 13), b[0].narrow(0, 0, 8)}),
       seq1 = torch::cat({a[1].narrow(0, 0, 3), b[1].narrow(0, 0, 8)});
  std::vector<torch::Tensor> got;
  for (int64_t t = 0; t < 4; ++t)
    got.push_back(m->forward(torch::stack({seq0.narrow(0, 13 + t, 1), seq1.narrow(0, 3 + t, 1)}), cache));
  cache.lengths -= 2;  // both drop their last two tokens, without truncate
  for (int64_t t = 2; t < 8; t += 3)
    got.push_back(m->forward(torch::stack({seq0.narrow(0, 13 + t, 3), seq1.narrow(0, 3 + t, 3)}), cache));
  auto incremental = torch::cat(got, 1);  // [2,4+6,V]: positions 13.. (3..) with 15, 16 (5, 6) fed twice
  auto full0 = m->forward(seq0.unsqueeze(0))[0], full1 = m->forward(seq1.unsqueeze(0))[0];
  auto want0 = torch::cat({full0.narrow(0, 13, 4), full0.narrow(0, 15, 6)}),
       want1 = torch::cat({full1.narrow(0, 3, 4), full1.narrow(0, 5, 6)});
  EXPECT_LT(max_diff(incremental[0], want0), 1e-4);
  EXPECT_LT(max_diff(incremental[1], want1), 1e-4);
}

TEST(FusedGate, FloorAndTopKHandling) {
  torch::manual_seed(6);
  LogitsGate g(4, 5, 3);
  {
    torch::NoGradGuard no_grad;
    g->fc2->weight.zero_();
    g->fc2->bias.copy_(torch::tensor({0.f, -100.f, 100.f}));  // factors 1/2, floor, ~1
  }
  auto logits = torch::tensor({{{0.5f, 3.f, -1.f, 2.f, 1.f, 0.f}}});  // [1,1,6]: order 1, 3, 4, ...
  auto features = torch::randn({1, 1, 4});
  auto out = g->forward(logits, features);
  EXPECT_NEAR((out - logits)[0][0][1].item<float>(), std::log(0.5f), 1e-5);    // 1st candidate
  EXPECT_NEAR((out - logits)[0][0][3].item<float>(), std::log(1e-6f), 1e-4);   // 2nd: floored, not lower
  EXPECT_NEAR((out - logits)[0][0][4].item<float>(), 0.0f, 1e-5);              // 3rd: factor ~1
  for (int v : {0, 2, 5}) EXPECT_EQ(out[0][0][v].item<float>(), logits[0][0][v].item<float>()) << v;  // not candidates
  auto lf = g->log_factors(features);
  EXPECT_TRUE((lf <= 0).all().item<bool>());
  EXPECT_GE(lf.min().item<float>(), std::log(LogitsGateImpl::kFloor) - 1e-6);

  // More candidates than the vocabulary: every token is a candidate, ranks in order.
  auto small = torch::tensor({{{1.f, 2.f}}});
  auto out2 = g->forward(small, features);
  EXPECT_NEAR((out2 - small)[0][0][1].item<float>(), std::log(0.5f), 1e-5);
  EXPECT_NEAR((out2 - small)[0][0][0].item<float>(), std::log(1e-6f), 1e-4);
}

TEST(FusedGate, TrainedJointlyWithTheLmLoss) {
  ModelConfig c = tiny_model();
  c.fused.gate = true;
  torch::manual_seed(7);
  Transformer m = make_model("fused", c);
  auto x = torch::randint(50, {2, 12}, torch::kLong), y = torch::randint(50, {2, 12}, torch::kLong);
  m->loss(x, y).backward();
  EXPECT_GT(m->gate->fc2->bias.grad().abs().sum().item<float>(), 0.0f);
  EXPECT_GT(m->gate->fc2->weight.grad().abs().sum().item<float>(), 0.0f);
  // The gate's cosines reach back into attention.
  EXPECT_GT(m->blocks[1]->as<Block>()->attn->qkv->weight.grad().abs().sum().item<float>(), 0.0f);
}

TEST(FusedStage, OptionsAreFilledAtTheBoundary) {
  RunConfig cfg;
  cfg.model.dim = 64;
  cfg.model.heads = 2;  // D = 32
  cfg.fused.key_weighting = "bias";
  cfg.fused.importance = "grad_norm";
  cfg.fused.value_rank = "0.5";
  cfg.fused.gate = true;
  cfg.fused.orthogonal = "hard";
  EXPECT_FALSE(fused_options(cfg).any());  // variant baseline: all off
  cfg.variant = "fused";
  auto o = fused_options(cfg);
  EXPECT_EQ(o.key_weighting, KW::Bias);
  EXPECT_EQ(o.importance, Imp::GradNorm);
  EXPECT_EQ(o.value_rank, 16);
  EXPECT_TRUE(o.hard_orthogonal && o.gate);
  cfg.fused.value_rank = "8";
  EXPECT_EQ(fused_options(cfg).value_rank, 8);
  cfg.fused.value_rank = "1";  // at most 1: a ratio, the whole head
  EXPECT_EQ(fused_options(cfg).value_rank, 32);
  EXPECT_THROW(set_key(cfg, "fused.orthogonal", "soft", {"x.ini", 3}), ConfigError);
  EXPECT_THROW(make_model("baseline", [] {
                 ModelConfig c = tiny_model();
                 c.fused.gate = true;
                 return c;
               }()),
               std::invalid_argument);
}

TEST(FusedStage, MonitorFigures) {
  // KL of a known pair: p = (1/4, 3/4) against uniform.
  auto p = torch::log(torch::tensor({{0.25f, 0.75f}})), u = torch::zeros({1, 2});
  EXPECT_NEAR(mean_kl(p, u), 0.25 * std::log(0.5) + 0.75 * std::log(1.5), 1e-6);
  EXPECT_NEAR(mean_kl(p, p), 0.0, 1e-7);

  ModelConfig c = all_on();
  torch::manual_seed(8);
  Transformer m = make_model("fused", c);
  m->eval();
  MonitorAccumulator acc;
  auto x = torch::randint(50, {2, 20}, torch::kLong), y = torch::randint(50, {2, 20}, torch::kLong);
  accumulate_monitor(m, x, y, acc);
  FusedMonitor mon = finish_monitor(m, acc);
  EXPECT_NEAR(mon.value_distill_orthogonality, 1.0, 1e-5);  // P starts with orthonormal rows
  EXPECT_GT(mon.key_weight_stability, 0.0);
  EXPECT_GT(mon.semantic_drift_score, 0.0);
  EXPECT_GT(mon.semantic_drift_score_normalized, 0.0);
  // The raw score scales with the states (as it grows with the width); the normalised one does not.
  auto z = torch::randn({2, 30, 8});
  MonitorAccumulator small, large;
  add_drift(z, small);
  add_drift(10 * z, large);
  EXPECT_NEAR(large.drift_sum, 10 * small.drift_sum, 1e-3 * large.drift_sum);
  EXPECT_NEAR(large.drift_cv_sum, small.drift_cv_sum, 1e-5);
  EXPECT_EQ(small.drift_n, 2);
  EXPECT_GE(mon.logits_gate_effectiveness, 0.0);
  EXPECT_LE(mon.logits_gate_effectiveness, 1.0);
  EXPECT_NEAR(mon.gate_mean_factor, 1.0 / (1.0 + std::exp(-4.0)), 1e-4);  // the gate's initial factor
  {
    torch::NoGradGuard no_grad;
    for (const auto& b : *m->blocks) b->as<Block>()->attn->value_proj.fill_(1.0);  // identical rows
  }
  EXPECT_NEAR(finish_monitor(m, acc).value_distill_orthogonality, 0.0, 1e-5);

  // A part that is off gives NaN.
  Transformer plain = make_model("fused", tiny_model());
  MonitorAccumulator none;
  accumulate_monitor(plain, x, y, none);
  FusedMonitor off = finish_monitor(plain, none);
  EXPECT_TRUE(std::isnan(off.key_weight_stability) && std::isnan(off.semantic_drift_score) &&
              std::isnan(off.value_distill_orthogonality) && std::isnan(off.logits_gate_effectiveness));
}

}  // namespace
}  // namespace zl
