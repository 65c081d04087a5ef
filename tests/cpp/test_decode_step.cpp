// The hand-written decode step against the reference path (the LibTorch
// modules): same logits and same cache contents, with sequences of different
// lengths and after a rollback.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <functional>
#include <numeric>
#include <thread>

#include "models/blas.h"
#include "models/decode_step.h"
#include "models/sampling.h"
#include "models/spin_team.h"
#include "models/transformer.h"
#include "sim/decoder.h"
#include "sim/step_replay.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

TEST(DecodeStep, KernelsMatchTorch) {
  auto x = torch::randn({37});
  // Panels: 13 rows (a group of 8 and a tail of 5), 700 columns (21 full
  // panels and one of 28), all panels and a range of them.
  auto w = torch::randn({700, 300}), a13 = torch::randn({13, 300});
  std::vector<float> panels(panel_count(700) * 300 * kPanel);
  pack_panels(w.data_ptr<float>(), 700, 300, panels.data());
  auto c13 = torch::full({13, 700}, 7.0f);
  panels_product(13, 700, 300, a13.data_ptr<float>(), panels.data(), c13.data_ptr<float>(), 0, panel_count(700));
  EXPECT_TRUE(torch::allclose(c13, a13.mm(w.t()), 1e-4, 1e-4));
  auto part = torch::full({13, 700}, 7.0f);
  panels_product(13, 700, 300, a13.data_ptr<float>(), panels.data(), part.data_ptr<float>(), 2, 4);
  EXPECT_TRUE(torch::allclose(part.narrow(1, 64, 64), c13.narrow(1, 64, 64)));
  EXPECT_TRUE(torch::all(part.narrow(1, 0, 64) == 7.0f).item<bool>());  // other panels untouched
  EXPECT_TRUE(torch::all(part.narrow(1, 128, 572) == 7.0f).item<bool>());
  // Attention over one head: D = 40 (vectors of 16 and a tail; one key at a
  // time) and D = 32, 80 (sixteen keys at a time, then the tail keys);
  // softmax and GELU with their own exp, on 37 values (two vectors and a tail).
  for (int64_t D : {40, 32, 80}) {
    auto q = torch::randn({D}), K = torch::randn({37, D}), V = torch::randn({37, D});
    auto s = torch::empty({37}), out = torch::empty({D});
    scaled_scores(q.data_ptr<float>(), K.data_ptr<float>(), 37, D, 0.25f, s.data_ptr<float>());
    EXPECT_TRUE(torch::allclose(s, K.mv(q) * 0.25, 1e-4, 1e-4)) << "D = " << D;
    auto p = torch::softmax(torch::randn({37}), 0);
    weighted_rows(p.data_ptr<float>(), V.data_ptr<float>(), 37, D, out.data_ptr<float>());
    EXPECT_TRUE(torch::allclose(out, V.t().mv(p), 1e-5, 1e-5)) << "D = " << D;
  }
  auto sm = (x * 30).contiguous();  // logits from -90 to 90: the exp's clamped range
  softmax_inplace(sm.data_ptr<float>(), 37);
  EXPECT_TRUE(torch::allclose(sm, torch::softmax(x * 30, 0), 1e-6, 1e-5));
  auto g = torch::linspace(-12, 12, 37).contiguous();
  gelu_inplace(g.data_ptr<float>(), 37);
  EXPECT_TRUE(torch::allclose(g, torch::gelu(torch::linspace(-12, 12, 37)), 1e-6, 1e-6));
}

// top_k against a stable sort: blocks of sixteen passed over, ties (the
// lower index first), fewer values than k, and k past a block's end.
TEST(DecodeStep, TopKIsTheStableSortsHead) {
  torch::manual_seed(3);
  auto check = [](const std::vector<float>& x, int64_t k) {
    std::vector<int64_t> want(x.size());
    std::iota(want.begin(), want.end(), 0);
    std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) { return x[a] > x[b]; });
    want.resize(std::min<size_t>(k, x.size()));
    std::vector<int64_t> got(k, -1);
    EXPECT_EQ(top_k(x.data(), static_cast<int64_t>(x.size()), k, got.data()), static_cast<int64_t>(want.size()));
    got.resize(want.size());
    EXPECT_EQ(got, want) << "n = " << x.size() << ", k = " << k;
  };
  for (int64_t n : {3, 16, 37, 1024}) {
    auto r = torch::randn({n});
    std::vector<float> x(r.data_ptr<float>(), r.data_ptr<float>() + n);
    for (int64_t k : {1, 5, 20}) check(x, k);
    std::vector<float> steps(n);  // many ties
    for (int64_t i = 0; i < n; ++i) steps[i] = static_cast<float>((i * 7) % 5);
    for (int64_t k : {1, 5, 20}) check(steps, k);
  }
  std::vector<float> rising(100);  // every block has a new largest
  std::iota(rising.begin(), rising.end(), 0.0f);
  check(rising, 5);
}

TEST(SpinTeam, RunsEveryPartOnceAndWakesAfterSleeping) {
  SpinTeam team(3);
  ASSERT_EQ(team.size(), 3);
  std::vector<std::atomic<int>> hits(7);
  for (int round = 0; round < 500; ++round) team.run(7, [&](int i) { hits[i].fetch_add(1); });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 500);
  // Idle long past the spin: the members sleep, and the next run wakes them.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::vector<int> seen(5, 0);
  team.run(5, [&](int i) { seen[i] += 1; });
  EXPECT_EQ(seen, std::vector<int>(5, 1));
  SpinTeam alone(1);  // everything on the caller
  int calls = 0;
  alone.run(4, [&](int) { ++calls; });
  EXPECT_EQ(calls, 4);
}

// A prefill of 3 prompts, a rollback and 10 steps on both paths, on
// `threads` threads: the same logits, lengths and cache contents. `before`
// sets the model's per-call state (a variant's) for a call of T rows per
// sequence, before each call on either path.
void expect_paths_agree(Transformer& model, int threads, const std::function<void(int64_t T)>& before = nullptr) {
  const int saved = at::get_num_threads();
  at::set_num_threads(threads);
  model->eval();
  torch::NoGradGuard no_grad;
  ASSERT_TRUE(DecodeStep::supports(model));
  {
    DecodeStep fast(model);
    const int64_t V = model->cfg.vocab;
    auto ref = model->make_cache(3), mine = model->make_cache(3);
    auto prompt = torch::randint(V, {3, 6}, torch::kLong);
    if (before) before(6);
    auto want_last = model->forward(prompt, ref).select(1, 5);  // [3,V]
    std::vector<std::vector<int32_t>> prompts(3);
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t t = 0; t < 6; ++t) prompts[b].push_back(static_cast<int32_t>(prompt[b][t].item<int64_t>()));
    if (before) before(6);
    auto got_last = fast.prefill(prompts, mine);  // all 18 rows at once, the head for the last ones
    ASSERT_TRUE(torch::allclose(got_last, want_last, 1e-4, 1e-4)) << (got_last - want_last).abs().max().item<float>();
    ASSERT_TRUE(torch::equal(ref.lengths, mine.lengths));
    ref.truncate(1, 2);  // sequences of different lengths, one rolled back
    mine.truncate(1, 2);
    for (int step = 0; step < 10; ++step) {
      std::vector<int64_t> tok{(step * 7) % V, (step * 5 + 3) % V, (step * 11 + 1) % V};
      if (before) before(1);
      auto want = model->forward(torch::tensor(tok).view({3, 1}), ref).select(1, 0);
      if (before) before(1);
      auto got = fast.forward(tok, mine);
      ASSERT_TRUE(torch::allclose(got, want, 1e-4, 1e-4)) << "step " << step << " max diff "
                                                          << (got - want).abs().max().item<float>();
    }
    // Several rows per sequence after the cache's rows (a speculative target
    // checking 3 proposals), another sequence rolled back first.
    ref.truncate(2, 5);
    mine.truncate(2, 5);
    std::vector<std::vector<int64_t>> rows{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    if (before) before(3);
    auto want_rows = model->forward(torch::tensor({1, 2, 3, 4, 5, 6, 7, 8, 9}, torch::kLong).view({3, 3}), ref);
    if (before) before(3);
    auto got_rows = fast.extend(rows, mine);  // [3,3,V]
    ASSERT_TRUE(torch::allclose(got_rows, want_rows, 1e-4, 1e-4)) << (got_rows - want_rows).abs().max().item<float>();
    EXPECT_TRUE(torch::equal(ref.lengths, mine.lengths));
    for (size_t l = 0; l < ref.layers.size(); ++l)
      for (int64_t b = 0; b < 3; ++b) {
        const int64_t n = ref.lengths[b].item<int64_t>();
        const auto &r = ref.layers[l], &o = mine.layers[l];
        EXPECT_TRUE(torch::allclose(r.k[b].narrow(1, 0, n), o.k[b].narrow(1, 0, n), 1e-5, 1e-5));
        EXPECT_TRUE(torch::allclose(r.v[b].narrow(1, 0, n), o.v[b].narrow(1, 0, n), 1e-5, 1e-5));  // z = P v if distilled
        if (r.mass.defined()) {  // fused attn_mass: each head's column sums over the keys held, and the queries
          EXPECT_EQ(r.mass_rows[b].item<int64_t>(), n);
          EXPECT_EQ(o.mass_rows[b].item<int64_t>(), n);
          EXPECT_TRUE(torch::allclose(r.mass[b].narrow(1, 0, n), o.mass[b].narrow(1, 0, n), 1e-5, 1e-5))
              << "layer " << l << " sequence " << b;
          EXPECT_TRUE(torch::allclose(r.queries[b].narrow(1, 0, n), o.queries[b].narrow(1, 0, n), 1e-5, 1e-5));
        }
        if (r.importance.defined())
          EXPECT_TRUE(torch::allclose(r.importance[b].narrow(0, 0, n), o.importance[b].narrow(0, 0, n), 1e-5, 1e-5));
      }
  }
  at::set_num_threads(saved);
}

TEST(DecodeStep, SameLogitsAndCacheAsTheReferencePath) {
  Transformer model = tiny_transformer(4, tiny_model_four_heads());
  for (int threads : {1, 2}) expect_paths_agree(model, threads);
}

// sfcl's and oet's correction between attention and the MLP (issue 12): the
// module in both forms, switched off, and coefficients set per sequence and
// row as oet's stage sets them, for a prefill and for steps.
Transformer corrected_model(bool centered) {
  ModelConfig c = tiny_model_four_heads();
  c.correction_hidden = 8;
  c.correction_centered = centered;
  Transformer model(c);
  torch::NoGradGuard no_grad;
  for (auto& p : model->named_parameters())  // far from the identity it starts at, so that a slip shows
    if (p.key().find("correction") != std::string::npos) p.value().normal_(0, 0.5);
  return model;
}

TEST(DecodeStep, CorrectionModuleInBothFormsAndOff) {
  for (bool centered : {true, false}) {
    torch::manual_seed(7);
    Transformer model = corrected_model(centered);
    for (int threads : {1, 2}) expect_paths_agree(model, threads);
    model->set_correction_mode(CorrectionMode::Identity);  // sfcl.at_inference = off
    expect_paths_agree(model, 2);
    model->set_correction_mode(CorrectionMode::Module);
  }
}

TEST(DecodeStep, CorrectionCoefficientsPerSequenceAndRow) {
  torch::manual_seed(8);
  Transformer model = corrected_model(true);
  const int64_t L = model->cfg.layers, C = model->cfg.dim;
  for (int threads : {1, 2}) {
    int64_t call = 0;
    expect_paths_agree(model, threads, [&](int64_t T) {
      // Two calls each (reference, then fast) see the same coefficients; a
      // call in three leaves one layer without an event (Identity) as oet does.
      const int64_t pair = call++ / 2;
      torch::manual_seed(100 + pair);
      std::vector<torch::Tensor> per_layer;
      for (int64_t l = 0; l < L; ++l) per_layer.push_back(torch::rand({3, T, C}) * 2);
      model->set_correction_override(per_layer);
      if (pair % 3 == 2) (*model->blocks)[1]->as<Block>()->correction_mode = CorrectionMode::Identity;
    });
  }
  model->set_correction_mode(CorrectionMode::Module);
}

TEST(DecodeStep, CoefficientsOfAnotherShapeAreRefused) {
  Transformer model = corrected_model(true);
  model->eval();
  torch::NoGradGuard no_grad;
  DecodeStep fast(model);
  auto cache = model->make_cache(2);
  model->set_correction_override({torch::ones({2, 2, model->cfg.dim}), torch::ones({2, 2, model->cfg.dim})});
  EXPECT_THROW(fast.prefill({{1, 2, 3}, {4}}, cache), c10::Error);  // 2 rows for a 3-token prompt
  model->set_correction_override({torch::ones({3, 1, model->cfg.dim}), torch::ones({3, 1, model->cfg.dim})});
  EXPECT_THROW(fast.prefill({{1, 2, 3}, {4}}, cache), c10::Error);  // another batch
}

// A before-MLP hook of no variant (models/attention_hook.h, point c): each
// layer's MLP input scaled per channel and by the layer, the fast form
// reading part of its factor from the plan it made for the call. Both paths
// run it alike, and it changes the logits.
class ChannelGainHook : public AttentionHook {
 public:
  explicit ChannelGainHook(int64_t C) : gains_(C) {
    for (int64_t i = 0; i < C; ++i) gains_[i] = 1.0f + 0.5f * std::sin(static_cast<float>(i));
  }
  std::string name() const override { return "channel gain"; }
  bool uses_mlp_input() const override { return true; }
  torch::Tensor before_mlp(const torch::Tensor& u, int64_t layer) const override {
    return u * torch::tensor(gains_).view({1, 1, -1}) * static_cast<float>(layer + 1);
  }
  struct Plan : CallPlan {
    float factor = 0;
  };
  std::unique_ptr<const CallPlan> plan_call(const StepRow*, int64_t, int64_t) const override {
    auto p = std::make_unique<Plan>();
    p->factor = 1;
    return p;
  }
  void before_mlp_rows(float* u, int64_t M, int64_t C, const MlpRows& site) const override {
    const float factor = static_cast<const Plan*>(site.plan)->factor * static_cast<float>(site.layer + 1);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < C; ++i) u[m * C + i] *= gains_[i] * factor;
  }

 private:
  std::vector<float> gains_;
};

TEST(DecodeStep, BeforeMlpHookInBothForms) {
  Transformer model = tiny_transformer(4, tiny_model_four_heads());
  model->eval();
  torch::NoGradGuard no_grad;
  auto tokens = torch::randint(model->cfg.vocab, {2, 5}, torch::kLong);
  auto plain = model->forward(tokens);
  model->add_attention_hook(std::make_shared<ChannelGainHook>(model->cfg.dim));
  EXPECT_FALSE(torch::allclose(model->forward(tokens), plain, 1e-3, 1e-3));
  for (int threads : {1, 2}) expect_paths_agree(model, threads);
}

// Two members: a batch is cut into whole sequences, one group each (the
// test above at 3 sequences); a single sequence has its products and heads
// split across the team instead (here). Both against the reference path.
TEST(DecodeStep, OneSequenceOnATeamOfTwo) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  torch::manual_seed(6);
  ModelConfig wide = tiny_model_four_heads();
  wide.dim = 64;  // products of 6 and more panels: split in parts
  wide.context = 48;
  Transformer model(wide);
  model->eval();
  torch::NoGradGuard no_grad;
  {
    DecodeStep fast(model);
    auto ref = model->make_cache(1), mine = model->make_cache(1);
    auto prompt = torch::randint(wide.vocab, {1, 40}, torch::kLong);  // 40 rows: a prefill split by rows
    auto want = model->forward(prompt, ref).select(1, 39);
    std::vector<std::vector<int32_t>> prompts(1);
    for (int64_t t = 0; t < 40; ++t) prompts[0].push_back(static_cast<int32_t>(prompt[0][t].item<int64_t>()));
    auto got = fast.prefill(prompts, mine);
    ASSERT_TRUE(torch::allclose(got, want, 1e-4, 1e-4)) << (got - want).abs().max().item<float>();
    for (int64_t step = 0; step < 3; ++step) {
      want = model->forward(torch::full({1, 1}, step + 2, torch::kLong), ref).select(1, 0);
      got = fast.forward({step + 2}, mine);
      ASSERT_TRUE(torch::allclose(got, want, 1e-4, 1e-4)) << "step " << step;
    }
  }
  at::set_num_threads(threads);
}

TEST(DecodeStep, RefusesWhatItCannotRun) {
  Transformer model(tiny_model_four_heads());
  model->train();
  EXPECT_FALSE(DecodeStep::supports(model));  // training mode (dropout)
  model->eval();
  EXPECT_TRUE(DecodeStep::supports(model));
  model->register_parameter("extra", torch::zeros({3}));  // a variant's own part
  EXPECT_FALSE(DecodeStep::supports(model));
}

// Variant fused (issue 12): every option of its three parts, alone and
// together, with their state (column sums, importance, the distilled cache)
// through a prefill, a rollback and steps.
Transformer fused_model(const FusedOptions& f) {
  ModelConfig c = tiny_model_four_heads();
  c.fused = f;
  Transformer model(c);
  torch::NoGradGuard no_grad;
  for (auto& p : model->named_parameters())  // away from the identity-like starts, so that a slip shows
    if (p.key().find("value_proj") != std::string::npos || p.key().rfind("gate.", 0) == 0) p.value().normal_(0, 0.7);
  return model;
}

TEST(DecodeStep, FusedKeyWeightingInBothFormsWithEachImportance) {
  using KW = FusedOptions::KeyWeighting;
  using Imp = FusedOptions::Importance;
  for (KW form : {KW::Scale, KW::Bias})
    for (Imp imp : {Imp::AttnMass, Imp::HiddenNorm, Imp::GradNorm}) {
      FusedOptions f;
      f.key_weighting = form;
      f.importance = imp;
      f.alpha = 0.3;  // strong enough that distance matters over 16 positions
      torch::manual_seed(9);
      Transformer model = fused_model(f);
      for (int threads : {1, 2}) {
        SCOPED_TRACE("form " + std::to_string(static_cast<int>(form)) + " importance " +
                     std::to_string(static_cast<int>(imp)) + " threads " + std::to_string(threads));
        expect_paths_agree(model, threads);
      }
    }
}

// attn_mass's column sums through rollbacks of every kind (models/kv_cache.h:
// a short one subtracts the dropped rows, a deep one rebuilds, a `lengths`
// set directly is taken out at the next call), each followed by steps and a
// multi-row extend: the fast step and the reference path give the same
// logits and the same sums, on one thread and two.
TEST(DecodeStep, FusedAttnMassRollbackAndContinue) {
  FusedOptions f;
  f.key_weighting = FusedOptions::KeyWeighting::Scale;
  f.alpha = 0.3;
  f.gate = true;
  torch::manual_seed(31);
  Transformer model = fused_model(f);
  model->eval();
  torch::NoGradGuard no_grad;
  const int saved = at::get_num_threads();
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    at::set_num_threads(threads);
    DecodeStep fast(model);
    const int64_t V = model->cfg.vocab;
    auto ref = model->make_cache(3), mine = model->make_cache(3);
    auto prompt = torch::randint(V, {3, 12}, torch::kLong);
    model->forward(prompt, ref);
    std::vector<std::vector<int64_t>> rows(3);
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t t = 0; t < 12; ++t) rows[b].push_back(prompt[b][t].item<int64_t>());
    fast.extend(rows, mine, /*logits=*/false);
    auto step = [&](int round) {
      std::vector<int64_t> tok{(round * 7) % V, (round * 5 + 3) % V, (round * 11 + 1) % V};
      auto want = model->forward(torch::tensor(tok).view({3, 1}), ref).select(1, 0);
      auto got = fast.forward(tok, mine);
      EXPECT_TRUE(torch::allclose(got, want, 1e-4, 1e-4)) << "round " << round << " max diff "
                                                           << (got - want).abs().max().item<float>();
    };
    auto rollback = [&](int64_t b, int64_t length) {
      ref.truncate(b, length);
      mine.truncate(b, length);
    };
    rollback(0, 10);  // short: two rows subtracted
    rollback(2, 2);   // deep: rebuilt from two rows
    for (int round = 0; round < 3; ++round) step(round);
    ref.lengths -= 1;  // every sequence drops its newest token, lengths set directly
    mine.lengths -= 1;
    for (int round = 3; round < 5; ++round) step(round);
    rollback(1, 13);
    std::vector<std::vector<int64_t>> more{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    auto want = model->forward(torch::tensor({1, 2, 3, 4, 5, 6, 7, 8, 9}, torch::kLong).view({3, 3}), ref);
    auto got = fast.extend(more, mine);
    EXPECT_TRUE(torch::allclose(got, want, 1e-4, 1e-4)) << (got - want).abs().max().item<float>();
    for (int round = 5; round < 7; ++round) step(round);
    ASSERT_TRUE(torch::equal(ref.lengths, mine.lengths));
    for (size_t l = 0; l < ref.layers.size(); ++l)
      for (int64_t b = 0; b < 3; ++b) {
        const int64_t n = ref.lengths[b].item<int64_t>();
        EXPECT_TRUE(torch::allclose(ref.layers[l].mass[b], mine.layers[l].mass[b], 1e-5, 1e-5)) << l << " " << b;
        EXPECT_EQ(mine.layers[l].mass_rows[b].item<int64_t>(), n);
        EXPECT_EQ(mine.layers[l].mass[b].narrow(1, n, mine.capacity - n).abs().max().item<float>(), 0.0f);
      }
  }
  at::set_num_threads(saved);
}

TEST(DecodeStep, FusedValueDistillationAndGate) {
  for (int which = 0; which < 4; ++which) {
    FusedOptions f;
    if (which == 0 || which == 3) f.value_rank = 3;  // penalty form
    if (which == 1) f.value_rank = 5, f.hard_orthogonal = true;
    if (which >= 2) f.gate = true;
    if (which == 3) f.key_weighting = FusedOptions::KeyWeighting::Bias;  // all three parts at once
    torch::manual_seed(10 + which);
    Transformer model = fused_model(f);
    for (int threads : {1, 2}) {
      SCOPED_TRACE("case " + std::to_string(which) + " threads " + std::to_string(threads));
      expect_paths_agree(model, threads);
    }
  }
}

// The replay behind time_share_<part> (sim/step_replay.h): every setting is
// put in force before each of its calls, on the step asked for, and timed.
TEST(StepReplay, TimesEverySettingOnTheStepAsked) {
  FusedOptions all;
  all.key_weighting = FusedOptions::KeyWeighting::Bias;
  all.value_rank = 4;
  all.gate = true;
  Transformer model = fused_model(all);
  model->eval();
  const std::vector<std::vector<int32_t>> prompts{{1, 2, 3}, {4, 5}, {6}}, continuations{{7, 8, 9}, {1, 2}, {3, 4, 5, 6}};
  for (bool fast : {true, false}) {
    std::vector<int> calls(3, 0);
    auto ms = replay_step_ms(model, prompts, continuations, 2, 4, fast, 3, [&](int k, DecodeStep* step) {
      EXPECT_EQ(step != nullptr, fast);
      if (step) step->skip_for_timing(k == 1 ? DecodeStep::Part::Gate : DecodeStep::Part::None);
      ++calls.at(k);
    });
    ASSERT_EQ(ms.size(), 3u);
    for (int k = 0; k < 3; ++k) {
      EXPECT_TRUE(std::isfinite(ms[k]) && ms[k] > 0) << k << ": " << ms[k];
      EXPECT_GE(calls[k], 1 + 4) << "a prefill and the steps of the longest continuation, per batch";
    }
  }
}

void expect_same_tokens(Transformer& model) {
  std::vector<std::vector<int32_t>> prompts{{1, 2, 3}, {4}, {5, 6, 7, 8, 9}};
  DecodeOptions opt;
  opt.max_new_tokens = 8;
  opt.batch = 3;
  opt.sampling.temperature = 0;  // greedy: tokens follow the logits, not a draw near a boundary
  auto g1 = make_generator(1), g2 = make_generator(1);
  auto fast = decode(model, prompts, opt, g1);
  opt.fast_step = false;
  auto ref = decode(model, prompts, opt, g2);
  EXPECT_EQ(fast.continuations, ref.continuations);
}

TEST(DecodeStep, DecodeGivesTheSameTokensOnBothPaths) {
  Transformer model = tiny_transformer(5, tiny_model_four_heads());
  expect_same_tokens(model);
  Transformer corrected = corrected_model(true);
  expect_same_tokens(corrected);
  FusedOptions all;
  all.key_weighting = FusedOptions::KeyWeighting::Scale;
  all.value_rank = 4;
  all.gate = true;
  Transformer fused = fused_model(all);
  expect_same_tokens(fused);
}

// Issue 13's trained known methods on the fast step: alibi's biases (4
// heads, and 3, not a power of two; no position embedding) and gated_attn's
// output gate per element and per head, with and without its bias, and both
// at once; gates far from their near-1/2 start, so that a slip shows.
Transformer known_model(int which) {
  ModelConfig c = tiny_model_four_heads();
  c.alibi = which == 0 || which == 1 || which == 4;
  if (which == 1) c.heads = 3, c.dim = 24;  // D = 8
  c.attn_gate = which >= 2;
  c.attn_gate_headwise = which == 3;
  c.attn_gate_bias = which == 3 || which == 4;
  Transformer model(c);
  torch::NoGradGuard no_grad;
  for (auto& p : model->named_parameters())
    if (p.key().find("attn.gate_") != std::string::npos) p.value().normal_(0, 0.7);
  return model;
}

TEST(DecodeStep, AlibiAndGatedAttention) {
  for (int which = 0; which < 5; ++which) {
    torch::manual_seed(30 + which);
    Transformer model = known_model(which);
    for (int threads : {1, 2}) {
      SCOPED_TRACE("case " + std::to_string(which) + " threads " + std::to_string(threads));
      expect_paths_agree(model, threads);
    }
    expect_same_tokens(model);
  }
}

TEST(DecodeStep, RefusesAlibiWithFusedParts) {
  ModelConfig c = tiny_model_four_heads();
  c.alibi = true;
  c.fused.gate = true;
  Transformer model(c);
  model->eval();
  std::string why;
  EXPECT_FALSE(DecodeStep::supports(model, &why));
  EXPECT_NE(why.find("ALiBi"), std::string::npos) << why;
}

}  // namespace
}  // namespace zl
