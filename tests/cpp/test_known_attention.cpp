// Issue 13's trained known methods: alibi (Press et al., ICLR 2022,
// models/alibi.h) and gated_attn (Qiu et al., 2025, models/attention.h).
// The paper's slopes, ALiBi's scores on attention set by hand, the gate's
// limits (σ → 1 is the ungated model, σ → 0 removes attention), paired
// initial weights, their config keys and FLOPs. The fast step against the
// reference path is in test_decode_step.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "models/alibi.h"
#include "models/factory.h"
#include "models/transformer.h"
#include "sim/config.h"
#include "sim/cost.h"
#include "sim/model_options.h"
#include "sim/study_file.h"
#include "tests/cpp/check_helpers.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

TEST(Alibi, SlopesAreThePapers) {
  // §3: 8 heads take 1/2, 1/4, ..., 1/256.
  auto s8 = alibi_slopes(8);
  ASSERT_EQ(s8.size(), 8u);
  for (int h = 0; h < 8; ++h) EXPECT_DOUBLE_EQ(s8[h], 1.0 / (1 << (h + 1))) << h;
  // 16 heads: the geometric mean of each consecutive pair interleaved,
  // starting at and with ratio 2^(−8/16) = 1/sqrt(2).
  auto s16 = alibi_slopes(16);
  for (int h = 0; h < 16; ++h) EXPECT_NEAR(s16[h], std::pow(2.0, -0.5 * (h + 1)), 1e-15) << h;
  // Not a power of two: the 4 slopes of 4 heads, then every other slope of
  // the 8-head sequence from its first, as many as are missing.
  auto s6 = alibi_slopes(6);
  const std::vector<double> want6{1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256, 1.0 / 2, 1.0 / 8};
  ASSERT_EQ(s6.size(), 6u);
  for (int h = 0; h < 6; ++h) EXPECT_DOUBLE_EQ(s6[h], want6[h]) << h;
  auto s12 = alibi_slopes(12);  // 8 heads' slopes, then 2^−0.5, 2^−1.5, 2^−2.5, 2^−3.5
  ASSERT_EQ(s12.size(), 12u);
  for (int h = 0; h < 8; ++h) EXPECT_DOUBLE_EQ(s12[h], s8[h]);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(s12[8 + k], std::pow(2.0, -0.5 - k), 1e-15) << k;
  EXPECT_DOUBLE_EQ(alibi_slopes(1)[0], 1.0 / 256);
  auto s3 = alibi_slopes(3);  // 2 heads: 1/16, 1/256; then 4 heads' first: 1/4
  EXPECT_EQ(s3, (std::vector<double>{1.0 / 16, 1.0 / 256, 1.0 / 4}));
  // alibi.max_bias changes the exponent's span: 4 heads at 4 give 2^−1 .. 2^−4.
  auto s4 = alibi_slopes(4, 4.0);
  for (int h = 0; h < 4; ++h) EXPECT_DOUBLE_EQ(s4[h], std::pow(2.0, -(h + 1))) << h;
}

// One layer whose attention is set by hand: q = k = v = ln1(x) (the identity
// in each projection), the output projection the identity, and no MLP (its
// first layer 0, so GELU(0) = 0). The logits are then wte·LN_f(x + y) with
// y_i = Σ_j a_ij v_j per head, and a_ij the softmax over j <= i of
// q_i·k_j/sqrt(D) − m_h (i − j), computed here from the formula alone.
ModelConfig hand_made() {
  ModelConfig c = tiny_model();  // H 2, D 8
  c.layers = 1;
  c.alibi = true;
  c.alibi_max_bias = 2;  // slopes 2^−1, 2^−2: strong enough that a slip in the distance shows
  return c;
}

void set_by_hand(Transformer& m, bool zero_queries) {
  torch::NoGradGuard no_grad;
  const int64_t C = m->cfg.dim;
  auto* b = (*m->blocks)[0]->as<Block>();
  auto eye = torch::eye(C);
  b->attn->qkv->weight.copy_(torch::cat({zero_queries ? torch::zeros({C, C}) : eye, eye, eye}));  // [3C,C]: q | k | v
  b->attn->proj->weight.copy_(eye);
  b->mlp->fc->weight.zero_();
  m->wte->weight.normal_(0, 1.0);
}

torch::Tensor expected_logits(Transformer& m, const torch::Tensor& tokens, bool zero_queries) {
  torch::NoGradGuard no_grad;
  const int64_t T = tokens.size(1), C = m->cfg.dim, H = m->cfg.heads, D = C / H;
  auto* b = (*m->blocks)[0]->as<Block>();
  auto x = m->wte->weight.index_select(0, tokens[0]);  // [T,C]
  auto xn = b->ln1(x);                                 // q = k = v (or q = 0)
  auto y = torch::zeros({T, C});
  const std::vector<double> slopes{0.5, 0.25};  // 2^(−2·h/2), the paper's rule at max_bias 2
  auto xd = xn.to(torch::kDouble);
  auto acc = xd.accessor<double, 2>();
  for (int64_t h = 0; h < H; ++h) {
    auto a = torch::zeros({T, T}, torch::kDouble);  // a_ij, row i a distribution over j <= i
    auto w = a.accessor<double, 2>();
    for (int64_t i = 0; i < T; ++i) {
      double total = 0;
      for (int64_t j = 0; j <= i; ++j) {
        double dot = 0;
        if (!zero_queries)
          for (int64_t d = 0; d < D; ++d) dot += acc[i][h * D + d] * acc[j][h * D + d];
        w[i][j] = std::exp(dot / std::sqrt(static_cast<double>(D)) - slopes[h] * static_cast<double>(i - j));
        total += w[i][j];
      }
      for (int64_t j = 0; j <= i; ++j) w[i][j] /= total;
    }
    y.narrow(1, h * D, D).copy_(a.mm(xd.narrow(1, h * D, D)));  // head h's channels: Σ_j a_ij v_j
  }
  return m->ln_f(x + y).matmul(m->wte->weight.t()).unsqueeze(0);  // [1,T,V]
}

TEST(Alibi, ScoresOnHandMadeAttention) {
  for (bool zero_queries : {true, false}) {
    SCOPED_TRACE(zero_queries ? "q = 0: the biases alone" : "q = k: scores plus biases");
    torch::manual_seed(21);
    Transformer m(hand_made());
    m->eval();
    EXPECT_TRUE(m->wpe.is_empty());  // no position embeddings (§3)
    set_by_hand(m, zero_queries);
    torch::NoGradGuard no_grad;
    auto tokens = torch::tensor({3, 7, 7, 1, 0, 11, 5, 3, 9, 2}, torch::kLong).view({1, 10});
    auto want = expected_logits(m, tokens, zero_queries);
    auto full = m->forward(tokens);
    EXPECT_LT(max_diff(full, want), 1e-4);
    // Through the KV cache, the distances are between absolute positions: a
    // prefill of 4, then one token at a time.
    auto cache = m->make_cache(1);
    std::vector<torch::Tensor> parts{m->forward(tokens.narrow(1, 0, 4), cache)};
    for (int64_t t = 4; t < 10; ++t) parts.push_back(m->forward(tokens.narrow(1, t, 1), cache));
    EXPECT_LT(max_diff(torch::cat(parts, 1), want), 1e-4);
  }
}

// The biases change attention; a baseline-shaped model at the same seed
// starts from the very shared weights (paired comparisons, docs/results_schema.md).
TEST(Alibi, StartsFromTheBaselinesWeightsWithoutPositions) {
  ModelConfig c = tiny_model_four_heads();
  torch::manual_seed(5);
  Transformer base = make_model("baseline", c);
  torch::manual_seed(5);
  Transformer alibi = make_model("alibi", c);
  EXPECT_TRUE(alibi->cfg.alibi);
  EXPECT_TRUE(alibi->wpe.is_empty());
  auto bp = base->named_parameters();
  int64_t shared = 0;
  for (const auto& p : alibi->named_parameters()) {
    ASSERT_TRUE(bp.contains(p.key())) << p.key();
    EXPECT_TRUE(torch::equal(p.value(), bp[p.key()])) << p.key();
    ++shared;
  }
  EXPECT_EQ(shared + 1, static_cast<int64_t>(bp.size()));  // all but wpe
  EXPECT_EQ(alibi->parameter_count(), base->parameter_count() - c.context * c.dim);
  base->eval();
  alibi->eval();
  auto tokens = torch::randint(c.vocab, {2, 12}, torch::kLong);
  torch::NoGradGuard no_grad;
  EXPECT_GT(max_diff(base->forward(tokens), alibi->forward(tokens)), 1e-4);
}

// Four heads of width 8 (C 32): a gate per head (G = H) and per element (G = C) differ in size.
ModelConfig gated(bool headwise) {
  ModelConfig c = tiny_model_four_heads();
  c.attn_gate_headwise = headwise;
  c.attn_gate_bias = true;
  return c;
}

void set_gate(Transformer& m, double weight_std, double bias) {
  torch::NoGradGuard no_grad;
  for (const auto& b : *m->blocks) {
    auto& a = b->as<Block>()->attn;
    a->gate_weight.normal_(0, weight_std);
    a->gate_bias.fill_(bias);
  }
}

TEST(GatedAttention, OpenGateIsTheUngatedModelAndAClosedOneRemovesAttention) {
  for (bool headwise : {false, true}) {
    SCOPED_TRACE(headwise ? "headwise" : "elementwise");
    torch::manual_seed(8);
    Transformer base = make_model("baseline", gated(headwise));
    torch::manual_seed(8);
    Transformer g = make_model("gated_attn", gated(headwise));
    ASSERT_TRUE(g->cfg.attn_gate);
    const int64_t C = g->cfg.dim, G = headwise ? g->cfg.heads : C;
    EXPECT_EQ(g->parameter_count(), base->parameter_count() + 2 * (G * C + G));  // W_θ [G,C] and b [G] per layer
    base->eval();
    g->eval();
    torch::NoGradGuard no_grad;
    auto tokens = torch::randint(g->cfg.vocab, {2, 12}, torch::kLong);
    // σ(50 + x W_θ) = 1 in float: the same logits as the ungated model from the same seed.
    set_gate(g, 0.5, 50.0);
    EXPECT_LT(max_diff(g->forward(tokens), base->forward(tokens)), 1e-5);
    // σ(−50 + x W_θ) ≈ 2e-22: no attention output, as if every output projection were 0.
    set_gate(g, 0.5, -50.0);
    for (const auto& b : *base->blocks) b->as<Block>()->attn->proj->weight.zero_();
    EXPECT_LT(max_diff(g->forward(tokens), base->forward(tokens)), 1e-5);
    // In between, the gate depends on the token (x W_θ): not a constant scale.
    set_gate(g, 0.5, 0.0);
    auto* attn = (*g->blocks)[0]->as<Block>()->attn.get();
    auto x = torch::randn({1, 5, C});
    auto z = torch::matmul(x, attn->gate_weight.t()) + attn->gate_bias;
    EXPECT_GT((torch::sigmoid(z).max() - torch::sigmoid(z).min()).item<float>(), 0.1f);
  }
}

TEST(GatedAttention, InitialSharedWeightsAreTheBaselinesAndTheGateStartsNearHalf) {
  ModelConfig c = gated(false);
  c.attn_gate_bias = false;  // the paper's σ(X W_θ)
  torch::manual_seed(3);
  Transformer base = make_model("baseline", c);
  torch::manual_seed(3);
  Transformer g = make_model("gated_attn", c);
  auto bp = base->named_parameters();
  for (const auto& p : g->named_parameters()) {
    if (p.key().find("attn.gate_") != std::string::npos) continue;
    EXPECT_TRUE(torch::equal(p.value(), bp[p.key()])) << p.key();
  }
  auto* attn = (*g->blocks)[0]->as<Block>()->attn.get();
  EXPECT_FALSE(attn->gate_bias.defined());
  const double sd = attn->gate_weight.std().item<double>();
  EXPECT_GT(sd, 0.01);
  EXPECT_LT(sd, 0.03);  // N(0, 0.02): σ(x W_θ) ≈ 1/2 at the start
}

TEST(KnownAttention, FactoryRefusesOtherVariantsParts) {
  ModelConfig c = gated(false);
  c.fused.gate = true;
  EXPECT_THROW(make_model("alibi", c), std::invalid_argument);
  EXPECT_THROW(make_model("gated_attn", c), std::invalid_argument);
  ModelConfig plain = gated(false);
  plain.alibi = plain.attn_gate = true;  // the baseline never takes them
  Transformer base = make_model("baseline", plain);
  EXPECT_FALSE(base->wpe.is_empty());
  EXPECT_FALSE((*base->blocks)[0]->as<Block>()->attn->gate_weight.defined());
  Transformer g = make_model("gated_attn", plain);  // nor gated_attn alibi's
  EXPECT_FALSE(g->wpe.is_empty());
}

TEST(KnownAttention, ConfigKeysIdentityAndModelOptions) {
  auto s = parse_study("variant = alibi\n[alibi]\nmax_bias = 4\n", "a.ini", {});
  ModelConfig mc = model_config(s.base, 100);
  EXPECT_TRUE(mc.alibi);
  EXPECT_FALSE(mc.attn_gate);
  EXPECT_DOUBLE_EQ(mc.alibi_max_bias, 4.0);
  auto g = parse_study("variant = gated_attn\n[gated_attn]\ngranularity = headwise\nbias = true\n", "g.ini", {});
  mc = model_config(g.base, 100);
  EXPECT_TRUE(mc.attn_gate && mc.attn_gate_headwise && mc.attn_gate_bias);
  EXPECT_FALSE(mc.alibi);
  EXPECT_FALSE(model_config(RunConfig{}, 100).alibi);
  EXPECT_FALSE(model_config(RunConfig{}, 100).attn_gate);

  // Errors name the key, the file and the line.
  auto bad = message_of([] { parse_study("variant = alibi\n[alibi]\nmax_bias = 0\n", "b.ini", {}); });
  EXPECT_NE(bad.find("b.ini:3: alibi.max_bias"), std::string::npos) << bad;
  auto gran = message_of([] { parse_study("[gated_attn]\ngranularity = channel\n", "c.ini", {}); });
  EXPECT_NE(gran.find("c.ini:2: gated_attn.granularity"), std::string::npos) << gran;
  EXPECT_NE(gran.find("elementwise"), std::string::npos) << gran;
  auto variant = message_of([] { parse_study("variant = alibi2\n", "v.ini", {}); });
  EXPECT_NE(variant.find("gated_attn"), std::string::npos) << variant;

  // Each trains its own checkpoint, keyed by its own section only.
  RunConfig base, alibi, gate;
  alibi.variant = "alibi";
  gate.variant = "gated_attn";
  EXPECT_EQ(trained_family("alibi"), "alibi");
  EXPECT_EQ(trained_family("gated_attn"), "gated_attn");
  EXPECT_NE(train_id(base), train_id(alibi));
  EXPECT_NE(train_id(base), train_id(gate));
  EXPECT_NE(train_id(alibi), train_id(gate));
  RunConfig alibi4 = alibi;
  alibi4.alibi.max_bias = 4;
  EXPECT_NE(train_id(alibi), train_id(alibi4));
  RunConfig other = base;
  other.alibi.max_bias = 4;
  other.gated_attn.bias = true;
  EXPECT_EQ(run_id(base), run_id(other));  // another variant's section leaves a baseline run alone
  RunConfig gate2 = gate;
  gate2.alibi.max_bias = 4;
  EXPECT_EQ(train_id(gate), train_id(gate2));
  EXPECT_TRUE(relevant_key("gated_attn.granularity", "gated_attn"));
  EXPECT_FALSE(relevant_key("gated_attn.granularity", "alibi"));
}

TEST(KnownAttention, FlopsPerModule) {
  ModelConfig c;
  c.vocab = 100;
  c.layers = 3;
  c.heads = 4;
  c.dim = 32;
  auto base = flops_per_token(c, 50);
  EXPECT_EQ(base.count("alibi"), 0u);
  EXPECT_EQ(base.count("attn_gate"), 0u);
  ModelConfig a = c;
  a.alibi = true;
  auto fa = flops_per_token(a, 50);
  EXPECT_DOUBLE_EQ(fa["alibi"], 3.0 * 4 * 50);  // one add per score
  EXPECT_DOUBLE_EQ(fa["embedding"], 0.0);        // no position embedding
  EXPECT_DOUBLE_EQ(fa["attention"], base["attention"]);
  ModelConfig g = c;
  g.attn_gate = true;
  auto fg = flops_per_token(g, 50);
  EXPECT_DOUBLE_EQ(fg["attn_gate"], 3.0 * (2 * 32 * 32 + 4 * 32 + 32));
  g.attn_gate_headwise = true;
  g.attn_gate_bias = true;
  EXPECT_DOUBLE_EQ(flops_per_token(g, 50)["attn_gate"], 3.0 * (2 * 32 * 4 + 4 + 4 * 4 + 32));
  EXPECT_DOUBLE_EQ(total_flops(fg) - total_flops(base), fg["attn_gate"]);
}

}  // namespace
}  // namespace zl
