// Issue 13 §3, variant latent_kv (models/latent_kv.h): keys and values from one
// cached latent. The exactness test of the "Done when" (the svd
// factorisation at full rank gives the baseline's logits, after a prefill and
// decode steps on the cache, for each granularity and with whitening), what
// whitening minimises, the cache's bytes against the analytic r per token and
// layer, the absorbed decode against the explicit full forward, the trained
// mode learning, its paired initial weights and its checkpoint, its config
// keys and identity, and its FLOPs.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>

#include "models/decode_step.h"
#include "models/factory.h"
#include "models/latent_kv.h"
#include "models/transformer.h"
#include "sim/checkpoint.h"
#include "sim/config.h"
#include "sim/cost.h"
#include "sim/decoder.h"
#include "sim/model_options.h"
#include "sim/study_file.h"
#include "tests/cpp/check_helpers.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

ModelConfig tiny() {
  ModelConfig c = tiny_model_four_heads();  // C 32, H 4, D 8
  c.context = 32;  // the trained mode learns on windows of 32 tokens
  return c;
}

// A baseline whose attention is far from uniform: at the N(0, 0.02)
// initialisation q·k is about 0 and a wrong key would hardly move the
// logits, so the K/V projections are drawn wider.
Transformer sharp_baseline(uint64_t seed) {
  torch::manual_seed(seed);
  auto m = make_model("baseline", tiny());
  torch::NoGradGuard no_grad;
  for (const auto& b : *m->blocks) {
    b->as<Block>()->attn->qkv->weight.normal_(0.0, 0.35);
    b->as<Block>()->attn->proj->weight.normal_(0.0, 0.2);  // and let attention dominate the residual stream
  }
  m->eval();
  return m;
}

// The same weights in a second model (the one to factorise).
Transformer copy_of(const Transformer& m) {
  auto c = make_model("baseline", m->cfg);
  torch::NoGradGuard no_grad;
  auto src = m->named_parameters();
  for (auto& p : c->named_parameters()) p.value().copy_(src[p.key()]);
  c->eval();
  return c;
}

// Logits of a prefill of `prompt` [B,P] and then `steps` single tokens [B,1]
// each, on the model's KV cache: one [B,·,V] per call.
std::vector<torch::Tensor> cached_logits(Transformer& m, const torch::Tensor& prompt,
                                         const std::vector<torch::Tensor>& steps) {
  torch::NoGradGuard no_grad;
  auto cache = m->make_cache(prompt.size(0));
  std::vector<torch::Tensor> out{m->forward(prompt, cache)};
  for (const auto& t : steps) out.push_back(m->forward(t, cache));
  return out;
}

LatentSvdOptions svd_options(int64_t rank, bool separate, int64_t group, bool whiten) {
  LatentSvdOptions o;
  o.rank = rank;
  o.separate = separate;
  o.group_heads = group;
  o.whiten = whiten;
  return o;
}

// Calibration windows for the whitening: 3 batches [2,16] of random tokens.
std::vector<torch::Tensor> calibration_windows() {
  torch::manual_seed(23);
  std::vector<torch::Tensor> w;
  for (int i = 0; i < 3; ++i) w.push_back(torch::randint(tiny().vocab, {2, 16}, torch::kLong));
  return w;
}

TEST(LatentKv, FullRankSvdIsTheBaselineToE4) {
  auto base = sharp_baseline(3);
  torch::manual_seed(11);
  auto prompt = torch::randint(tiny().vocab, {2, 9}, torch::kLong);
  std::vector<torch::Tensor> steps;
  for (int i = 0; i < 6; ++i) steps.push_back(torch::randint(tiny().vocab, {2, 1}, torch::kLong));
  auto want = cached_logits(base, prompt, steps);
  torch::Tensor want_full;
  {
    torch::NoGradGuard no_grad;
    want_full = base->forward(torch::cat({prompt, torch::cat(steps, 1)}, 1));
  }
  const auto grams = attention_input_grams(base, calibration_windows());
  ASSERT_EQ(grams.size(), 2u);
  EXPECT_EQ(grams[0].sizes(), (std::vector<int64_t>{32, 32}));

  // J-LRD joint (MLA's layout: full at C), Palu's separate K and V in groups
  // of 2 heads (G-LRD) and of 1 (M-LRD) (full at 2C), plain and whitened.
  for (const auto& o : {svd_options(32, false, 4, false), svd_options(64, true, 2, false),
                        svd_options(64, true, 1, true), svd_options(32, false, 4, true)}) {
    SCOPED_TRACE(std::string(o.separate ? "separate" : "joint") + ", group " + std::to_string(o.group_heads) +
                 (o.whiten ? ", whitened" : ""));
    ASSERT_EQ(o.rank, o.full_rank(32, 4));
    auto latent = copy_of(base);
    EXPECT_LT(fit_latent_svd(latent, o, o.whiten ? grams : std::vector<torch::Tensor>{}), 1e-6);
    EXPECT_EQ(latent->cfg.latent_rank, o.rank);
    auto got = cached_logits(latent, prompt, steps);  // the absorbed decode on the latent cache
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_LT(max_diff(got[i], want[i]), 1e-4) << "call " << i;
    torch::NoGradGuard no_grad;
    auto full_fwd = latent->forward(torch::cat({prompt, torch::cat(steps, 1)}, 1));  // explicit up-projection
    EXPECT_LT(max_diff(full_fwd, want_full), 1e-4);
  }

  // Below full rank the logits move: the test above can see a wrong factor.
  auto low = copy_of(base);
  const double err = fit_latent_svd(low, svd_options(8, false, 4, false));
  EXPECT_GT(err, 0.05);
  EXPECT_LT(err, 1.0);
  EXPECT_GT(max_diff(cached_logits(low, prompt, steps).back(), want.back()), 1e-3);
  // A rank the factorisation cannot take, or a model already latent.
  EXPECT_THROW(fit_latent_svd(low, svd_options(8, false, 4, false)), std::invalid_argument);
  auto wide = copy_of(base), odd = copy_of(base), unwhitened = copy_of(base);
  EXPECT_THROW(fit_latent_svd(wide, svd_options(33, false, 4, false)), std::invalid_argument);
  EXPECT_THROW(fit_latent_svd(odd, svd_options(6, true, 2, false)), std::invalid_argument);  // 4 blocks
  EXPECT_THROW(fit_latent_svd(unwhitened, svd_options(8, true, 4, true)), std::invalid_argument);  // no Grams
}

// Whitening minimises the error of the projections' outputs on the
// calibration inputs (SVD-LLM's point): measured there, the whitened fit is
// never worse than the plain one, whose weights are the closer.
TEST(LatentKv, WhiteningMinimisesTheOutputErrorOnTheCalibrationInputs) {
  auto base = sharp_baseline(4);
  {
    // Inputs far from isotropic, so that the two fits differ.
    torch::NoGradGuard no_grad;
    for (const auto& b : *base->blocks) b->as<Block>()->ln1->weight.copy_(torch::linspace(0.05, 3.0, 32));
  }
  const auto grams = attention_input_grams(base, calibration_windows());
  for (bool separate : {false, true}) {
    SCOPED_TRACE(separate ? "separate" : "joint");
    auto plain = copy_of(base), whitened = copy_of(base), plain_w = copy_of(base), whitened_w = copy_of(base);
    const double plain_out = fit_latent_svd(plain, svd_options(12, separate, 4, false), grams);
    const double white_out = fit_latent_svd(whitened, svd_options(12, separate, 4, true), grams);
    EXPECT_LT(white_out, plain_out * 0.95) << white_out << " vs " << plain_out;
    // On the weights, the plain SVD is the optimum (Eckart–Young).
    const double plain_weights = fit_latent_svd(plain_w, svd_options(12, separate, 4, false));
    fit_latent_svd(whitened_w, svd_options(12, separate, 4, true), grams);
    double whitened_weights = 0;
    for (size_t l = 0; l < 2; ++l) {
      torch::NoGradGuard no_grad;
      auto& a = whitened_w->blocks[l]->as<Block>()->attn;
      auto kv = base->blocks[l]->as<Block>()->attn->qkv->weight.narrow(0, 32, 64);  // [W_K; W_V]
      auto approx = a->kv_up.matmul(a->qkv->weight.narrow(0, 32, 12));             // B·A
      whitened_weights += ((kv - approx).norm() / kv.norm()).item<double>() / 2;
    }
    EXPECT_GT(whitened_weights, plain_weights) << whitened_weights << " vs " << plain_weights;
  }
}

TEST(LatentKv, AbsorbedDecodeEqualsTheExplicitForwardWithRollback) {
  ModelConfig c = tiny();
  c.latent_rank = 12;
  c.latent_norm = true;
  torch::manual_seed(5);
  auto m = make_model("latent_kv", c);
  {
    torch::NoGradGuard no_grad;
    for (const auto& b : *m->blocks) {
      auto& a = b->as<Block>()->attn;
      a->qkv->weight.normal_(0.0, 0.35);
      a->kv_up.normal_(0.0, 0.35);
    }
  }
  m->eval();
  torch::NoGradGuard no_grad;
  auto seq = torch::randint(tiny().vocab, {2, 14}, torch::kLong);
  auto full = m->forward(seq);  // [2,14,V]: keys and values up-projected, no cache
  auto cache = m->make_cache(2);
  auto first = m->forward(seq.narrow(1, 0, 8), cache);
  EXPECT_LT(max_diff(first, full.narrow(1, 0, 8)), 1e-4);
  // A rollback: sequence 1 drops its last 3 tokens and feeds them again
  // while sequence 0 goes on; then sequence 0 rolls back to meet it.
  cache.truncate(1, 5);
  auto next = torch::stack({seq[0].narrow(0, 8, 3), seq[1].narrow(0, 5, 3)});  // [2,3]
  auto again = m->forward(next, cache);
  EXPECT_LT(max_diff(again[0], full[0].narrow(0, 8, 3)), 1e-4);
  EXPECT_LT(max_diff(again[1], full[1].narrow(0, 5, 3)), 1e-4);
  cache.truncate(0, 8);
  for (int64_t t = 8; t < 14; ++t) {
    auto step = m->forward(seq.narrow(1, t, 1), cache);  // [2,1,V]
    EXPECT_LT(max_diff(step.squeeze(1), full.select(1, t)), 1e-4) << t;
  }
}

TEST(LatentKv, CacheHoldsTheLatentAndItsBytesAreRankBased) {
  ModelConfig c = tiny();
  auto base_bytes = make_model("baseline", c)->make_cache(1).bytes_per_token();
  EXPECT_EQ(base_bytes, 2 /*layers*/ * 2 /*K,V*/ * 32 * 4);
  c.latent_rank = 12;
  auto trained = make_model("latent_kv", c);
  auto cache = trained->make_cache(3, 20);
  ASSERT_EQ(cache.layers.size(), 2u);
  EXPECT_FALSE(cache.layers[0].k.defined());
  EXPECT_FALSE(cache.layers[0].v.defined());
  EXPECT_EQ(cache.layers[0].latent.sizes(), (std::vector<int64_t>{3, 20, 12}));
  std::map<std::string, int64_t> parts;
  EXPECT_EQ(cache.bytes_per_token(&parts), 2 /*layers*/ * 12 /*r*/ * 4 /*fp32*/);
  EXPECT_EQ(parts["latent"], 2 * 12 * 4);
  EXPECT_EQ(parts["k"] + parts["v"], 0);

  // svd: after the fit, the run's decode measures r per token and layer
  // from the cache it decoded with, on the reference step, saying why; the
  // bytes fall with the rank.
  for (int64_t r : {32, 16, 4}) {
    auto svd = sharp_baseline(2);
    fit_latent_svd(svd, svd_options(r, true, 4, false));
    DecodeOptions opt;
    opt.max_new_tokens = 4;
    opt.batch = 2;
    opt.fast_step = true;
    at::Generator gen = make_generator(1);
    auto out = decode(svd, {{1, 2, 3}, {4, 5}}, opt, gen);
    EXPECT_EQ(out.kv_bytes_per_token, 2 /*layers*/ * r * 4 /*fp32*/) << r;
    EXPECT_FALSE(out.fast_step);
    EXPECT_NE(out.step_note.find("latent"), std::string::npos) << out.step_note;
  }
  std::string why;
  trained->eval();
  EXPECT_FALSE(DecodeStep::supports(trained, &why));
  EXPECT_NE(why.find("latent"), std::string::npos) << why;
}

TEST(LatentKv, TrainedModeLearnsAndStartsFromTheBaselinesSharedWeights) {
  ModelConfig c = tiny();
  torch::manual_seed(9);
  auto base = make_model("baseline", c);
  ModelConfig lc = c;
  lc.latent_rank = 16;
  lc.latent_norm = true;
  torch::manual_seed(9);
  auto m = make_model("latent_kv", lc);
  // Paired seeds: every weight but W^DKV and the up-projection is the baseline's, W^Q included.
  auto bp = base->named_parameters();
  for (const auto& p : m->named_parameters()) {
    const auto& name = p.key();
    if (name.find("kv_up") != std::string::npos || name.find("latent_gain") != std::string::npos) continue;
    if (name.find("attn.qkv.weight") != std::string::npos) {
      EXPECT_TRUE(torch::equal(p.value().narrow(0, 0, 32), bp[name].narrow(0, 0, 32))) << name;
      EXPECT_EQ(p.value().size(0), 32 + 16) << name;
      continue;
    }
    EXPECT_TRUE(torch::equal(p.value(), bp[name])) << name;
  }
  EXPECT_EQ(m->parameter_count(), base->parameter_count() - 2 * (2 * 32 * 32) + 2 * (16 * 32 + 2 * 32 * 16 + 16));

  // A short run on a periodic sequence: the loss falls, and the latent's
  // factors and gain get gradients.
  auto period = torch::randint(tiny().vocab, {7}, torch::kLong);
  auto data = period.repeat({6}).narrow(0, 0, 33);  // [33]
  auto x = data.narrow(0, 0, 32).unsqueeze(0).repeat({4, 1}), y = data.narrow(0, 1, 32).unsqueeze(0).repeat({4, 1});
  torch::optim::AdamW opt(m->parameters(), torch::optim::AdamWOptions(1e-2));
  m->train();
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    auto loss = m->loss(x, y);
    opt.zero_grad();
    loss.backward();
    if (step == 0) {
      first = loss.item<double>();
      auto& a = m->blocks[0]->as<Block>()->attn;
      EXPECT_GT(a->kv_up.grad().abs().sum().item<double>(), 0);
      EXPECT_GT(a->latent_gain.grad().abs().sum().item<double>(), 0);
      EXPECT_GT(a->qkv->weight.grad().narrow(0, 32, 16).abs().sum().item<double>(), 0);
    }
    opt.step();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first - 1.5) << first << " -> " << last;

  // Its checkpoint round-trips: a model of another seed, loaded, gives the same logits.
  TempDir dir("zl_latent");
  CheckpointDir ckpt(dir / "ckpt");
  CheckpointState state;
  state.step = 40;
  ckpt.save(state, m, &opt, "[model]\n", "");
  torch::manual_seed(77);
  auto loaded = make_model("latent_kv", lc);
  EXPECT_EQ(ckpt.load(&loaded, nullptr).step, 40);
  m->eval();
  loaded->eval();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(loaded->forward(x), m->forward(x)));
  auto& a = loaded->blocks[1]->as<Block>()->attn;
  EXPECT_TRUE(torch::equal(a->kv_up, m->blocks[1]->as<Block>()->attn->kv_up));
  // A baseline's checkpoint is not a latent model's: refused, by file name.
  CheckpointDir base_ckpt(dir / "base");
  base_ckpt.save(state, base, nullptr, "[model]\n", "");
  auto refused = message_of([&] { base_ckpt.load(&loaded, nullptr); });
  EXPECT_NE(refused.find("model-40.pt"), std::string::npos) << refused;
}

TEST(LatentKv, ConfigKeysIdentityAndModelOptions) {
  const std::string head = "variant = latent_kv\n[model]\ndim = 32\nheads = 4\n[latent]\n";
  // Errors name the key (and the file and line).
  auto zero = message_of([&] { parse_study(head + "rank = 0\n", "z.ini", {}); });
  EXPECT_NE(zero.find("z.ini:6: latent.rank"), std::string::npos) << zero;
  auto share = message_of([&] { parse_study(head + "rank = 1.5\n", "s.ini", {}); });
  EXPECT_NE(share.find("s.ini:6: latent.rank"), std::string::npos) << share;
  auto word = message_of([&] { parse_study(head + "rank = half\n", "h.ini", {}); });
  EXPECT_NE(word.find("h.ini:6: latent.rank"), std::string::npos) << word;
  // trained: at most model.dim.
  auto wide = message_of([&] { parse_study(head + "rank = 33\n", "w.ini", {}); });
  EXPECT_NE(wide.find("w.ini:6: latent.rank"), std::string::npos) << wide;
  EXPECT_NE(wide.find("above model.dim (32)"), std::string::npos) << wide;
  auto share_wide = message_of([&] { parse_study(head + "rank = 0.75\n", "v.ini", {}); });
  EXPECT_NE(share_wide.find("v.ini:6: latent.rank"), std::string::npos) << share_wide;  // 48 > 32
  EXPECT_NO_THROW(parse_study(head + "rank = 32\n", "ok.ini", {}));
  // svd, separate (the default): up to 2C, a multiple of the blocks.
  EXPECT_NO_THROW(parse_study(head + "mode = svd\nrank = 64\n", "ok.ini", {}));
  auto svd_wide = message_of([&] { parse_study(head + "mode = svd\nrank = 66\n", "x.ini", {}); });
  EXPECT_NE(svd_wide.find("x.ini:7: latent.rank"), std::string::npos) << svd_wide;
  EXPECT_NE(svd_wide.find("above the full rank 64"), std::string::npos) << svd_wide;
  auto odd = message_of([&] { parse_study(head + "mode = svd\nrank = 9\n", "o.ini", {}); });
  EXPECT_NE(odd.find("o.ini:7: latent.rank"), std::string::npos) << odd;
  auto joint = message_of([&] { parse_study(head + "mode = svd\nsvd_factor = joint\nrank = 34\n", "j.ini", {}); });
  EXPECT_NE(joint.find("latent.rank"), std::string::npos) << joint;  // joint J-LRD: at most C
  auto group = message_of([&] { parse_study(head + "mode = svd\nsvd_group = 3\n", "g.ini", {}); });
  EXPECT_NE(group.find("g.ini:7: latent.svd_group"), std::string::npos) << group;
  auto none = message_of([&] { parse_study(head + "svd_group = 0\n", "n.ini", {}); });
  EXPECT_NE(none.find("n.ini:6: latent.svd_group"), std::string::npos) << none;
  auto calib = message_of([&] { parse_study(head + "svd_calib_windows = 0\n", "c.ini", {}); });
  EXPECT_NE(calib.find("c.ini:6: latent.svd_calib_windows"), std::string::npos) << calib;
  auto mode = message_of([&] { parse_study(head + "mode = pca\n", "m.ini", {}); });
  EXPECT_NE(mode.find("m.ini:6: latent.mode"), std::string::npos) << mode;
  auto factor = message_of([&] { parse_study(head + "svd_factor = both\n", "f.ini", {}); });
  EXPECT_NE(factor.find("f.ini:6: latent.svd_factor"), std::string::npos) << factor;
  // Another variant's section is not checked against this shape, nor trained's against svd's.
  EXPECT_NO_THROW(parse_study("[model]\ndim = 32\nheads = 4\n[latent]\nrank = 33\n", "b.ini", {}));
  EXPECT_NO_THROW(parse_study(head + "svd_group = 3\n", "t.ini", {}));

  // auto: DeepSeek-V2's d_c = 4·d_h (at most C) trained, Palu's 50% (r = C) svd.
  auto s = parse_study(head, "a.ini", {}).base;
  EXPECT_EQ(latent_rank(s), 32);  // 4 × 8 = C
  s.model.heads = 8;
  EXPECT_EQ(latent_rank(s), 16);  // 4 × 4
  s.model.heads = 2;
  EXPECT_EQ(latent_rank(s), 32);  // 4 × 16 = 64, capped at C
  s.latent.mode = "svd";
  EXPECT_EQ(latent_rank(s), 32);
  RunConfig dflt;
  EXPECT_EQ(dflt.latent.rank, "auto");
  EXPECT_EQ(latent_rank(dflt), 4 * 32);  // 128 wide, 4 heads: 4·d_h = C
  // Or a rank, or a share of the K/V width 2C.
  s.latent.rank = "0.25";
  EXPECT_EQ(latent_rank(s), 16);
  s.latent.rank = "12";
  EXPECT_EQ(latent_rank(s), 12);
  // Palu's defaults, as the factorisation reads them.
  RunConfig svd_default;
  svd_default.variant = "latent_kv";
  svd_default.latent.mode = "svd";
  svd_default.model.heads = 8;
  auto o = latent_svd_options(svd_default);
  EXPECT_EQ(o.rank, 128);  // C: half of the K/V width 2C
  EXPECT_TRUE(o.separate);
  EXPECT_EQ(o.group_heads, 4);
  EXPECT_TRUE(o.whiten);
  EXPECT_EQ(o.blocks(8), 4);  // K and V, two groups of 4 heads
  EXPECT_EQ(o.full_rank(128, 8), 256);

  // trained: its own checkpoint and model; svd: the baseline's.
  RunConfig base, trained, svd;
  trained.variant = svd.variant = "latent_kv";
  svd.latent.mode = "svd";
  EXPECT_EQ(trained_family(trained), "latent_kv");
  EXPECT_EQ(trained_family(svd), "baseline");
  EXPECT_NE(train_id(trained), train_id(base));
  EXPECT_EQ(train_id(svd), train_id(base));
  EXPECT_NE(run_id(svd), run_id(base));
  RunConfig svd8 = svd, trained8 = trained, trained_sep = trained;
  svd8.latent.rank = "8";
  trained8.latent.rank = "8";
  trained_sep.latent.svd_factor = "joint";
  trained_sep.latent.svd_group = 2;
  trained_sep.latent.svd_whiten = false;
  EXPECT_EQ(train_id(svd8), train_id(base));  // the rank is a decode-time choice in svd mode
  EXPECT_NE(run_id(svd8), run_id(svd));
  for (auto change : std::vector<std::function<void(RunConfig&)>>{
           [](RunConfig& c) { c.latent.svd_factor = "joint"; }, [](RunConfig& c) { c.latent.svd_group = 2; },
           [](RunConfig& c) { c.latent.svd_whiten = false; }, [](RunConfig& c) { c.latent.svd_calib_windows = 9; }}) {
    RunConfig changed = svd;
    change(changed);
    EXPECT_NE(run_id(changed), run_id(svd));
    EXPECT_EQ(train_id(changed), train_id(base));
  }
  EXPECT_NE(train_id(trained8), train_id(trained));
  EXPECT_EQ(run_id(trained_sep), run_id(trained));  // the svd_* keys do not shape a trained model
  RunConfig other = base;
  other.latent.rank = "8";
  EXPECT_EQ(run_id(other), run_id(base));  // nor does the section shape another variant
  EXPECT_TRUE(relevant_key("latent.rank", "latent_kv"));
  EXPECT_FALSE(relevant_key("latent.rank", "baseline"));
  EXPECT_FALSE(relevant_key("latent.norm", svd));
  EXPECT_TRUE(relevant_key("latent.norm", trained));
  EXPECT_TRUE(relevant_key("latent.svd_whiten", svd));
  EXPECT_FALSE(relevant_key("latent.svd_whiten", trained));

  auto mc = model_config(trained, 100);
  EXPECT_EQ(mc.latent_rank, 128);
  EXPECT_TRUE(mc.latent_norm);
  EXPECT_EQ(model_config(svd, 100).latent_rank, 0);  // factorised by the stage, after loading
  EXPECT_EQ(model_config(base, 100).latent_rank, 0);
  // The factory keeps latent_kv's parts out of the other variants.
  ModelConfig lc = tiny();
  lc.latent_rank = 8;
  EXPECT_EQ(make_model("baseline", lc)->cfg.latent_rank, 0);
  EXPECT_EQ(make_model("gated_attn", lc)->cfg.latent_rank, 0);
}

TEST(LatentKv, FlopsPerModuleCountTheUpProjections) {
  ModelConfig c;
  c.vocab = 100;
  c.layers = 3;
  c.heads = 4;
  c.dim = 32;
  auto base = flops_per_token(c, 50);
  EXPECT_EQ(base.count("latent_kv"), 0u);
  ModelConfig l = c;
  l.latent_rank = 16;
  auto f = flops_per_token(l, 50);
  // Per layer: q (C→C) and the output projection; score and mix over r per head.
  EXPECT_DOUBLE_EQ(f["attention"], 3.0 * (2 * 32 * 32 + 2 * 2 * 4 * 50 * 16 + 2 * 32 * 32));
  // Down-projection, and W^UK, W^UV absorbed per head: C·r multiply-adds each.
  EXPECT_DOUBLE_EQ(f["latent_kv"], 3.0 * 3 * (2 * 32 * 16));
  l.latent_norm = true;
  EXPECT_DOUBLE_EQ(flops_per_token(l, 50)["latent_kv"], 3.0 * (3 * 2 * 32 * 16 + 4 * 16));
  EXPECT_DOUBLE_EQ(f["mlp"], base["mlp"]);
  EXPECT_DOUBLE_EQ(total_flops(f) - total_flops(base), f["latent_kv"] + f["attention"] - base["attention"]);
}

}  // namespace
}  // namespace zl
