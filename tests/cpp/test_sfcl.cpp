// Variants sfcl and oet (seed 000 §2.1-2.2): the correction module, the
// event trigger, the offline table, and the model switches between them.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

#include "models/correction.h"
#include "models/event_trigger.h"
#include "models/factory.h"
#include "models/offline_table.h"
#include "sim/config.h"
#include "sim/stages/oet_stage.h"
#include "sim/stages/offline_table_file.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {
namespace fs = std::filesystem;

ModelConfig tiny_sfcl() {
  ModelConfig c = tiny_model();
  c.correction_hidden = 4;
  return c;
}

// Scales the correction weights up so that c is far from 1 (the init keeps
// it near 1, which would let a test pass without the module doing anything).
void make_correction_matter(Transformer& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m->named_parameters())
    if (p.key().find("correction") != std::string::npos) p.value().normal_(0.0, 1.0);
}

// ---- the correction module ---------------------------------------------------

TEST(SfclCorrection, ShapesAndRange) {
  torch::manual_seed(0);
  Correction centered(16, 4, true), literal(16, 4, false);
  auto u = torch::randn({3, 5, 16}) * 5;
  auto c = centered->forward(u), l = literal->forward(u);
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{3, 5, 16}));
  EXPECT_EQ(centered->fc->weight.sizes(), (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(centered->out->weight.sizes(), (std::vector<int64_t>{16, 4}));
  EXPECT_GT(c.min().item<float>(), 0.0f);
  EXPECT_LT(c.max().item<float>(), 2.0f);
  EXPECT_LT(l.max().item<float>(), 1.0f);
}

TEST(SfclCorrection, ZeroedModuleIsTheIdentity) {
  torch::manual_seed(0);
  Correction centered(16, 4, true), literal(16, 4, false);
  torch::NoGradGuard no_grad;
  for (auto& p : centered->parameters()) p.zero_();
  for (auto& p : literal->parameters()) p.zero_();
  auto u = torch::randn({2, 7, 16});
  EXPECT_TRUE(torch::equal(centered->forward(u), torch::ones_like(u)));
  // The literal sigmoid halves the MLP input at zero: why "centered" is the default.
  EXPECT_TRUE(torch::allclose(literal->forward(u), torch::full_like(u, 0.5)));

  // In the model: an sfcl network with a zeroed module computes what the same
  // network computes with the module skipped; a non-zero module does not.
  Transformer m = make_model("sfcl", tiny_sfcl());
  m->eval();
  make_correction_matter(m);
  auto tokens = torch::randint(50, {2, 12}, torch::kLong);
  auto with = m->forward(tokens);
  m->set_correction_mode(CorrectionMode::Identity);
  auto skipped = m->forward(tokens);
  m->set_correction_mode(CorrectionMode::Module);
  EXPECT_FALSE(torch::allclose(with, skipped, 1e-4, 1e-5));
  for (auto& p : m->named_parameters())
    if (p.key().find("correction") != std::string::npos) p.value().zero_();
  EXPECT_TRUE(torch::allclose(m->forward(tokens), skipped, 1e-6, 1e-6));
}

TEST(SfclModel, FactoryAddsTheModuleOnlyToSfclAndOet) {  // oet: sfcl's family (sim/variants.def)
  auto cfg = tiny_sfcl();
  Transformer base = make_model("baseline", cfg), sfcl = make_model("sfcl", cfg), oet = make_model(trained_family("oet"), cfg);
  EXPECT_FALSE(base->has_correction());
  EXPECT_TRUE(sfcl->has_correction());
  // Per block: fc (16*4 + 4) and out (4*16 + 16).
  EXPECT_EQ(sfcl->parameter_count() - base->parameter_count(), 2 * (16 * 4 + 4 + 4 * 16 + 16));
  std::vector<std::string> a, b;
  for (const auto& p : sfcl->named_parameters()) a.push_back(p.key());
  for (const auto& p : oet->named_parameters()) b.push_back(p.key());
  EXPECT_EQ(a, b);  // oet loads the sfcl checkpoint
  cfg.correction_hidden = 0;
  EXPECT_THROW(make_model("sfcl", cfg), std::invalid_argument);
  EXPECT_THROW(base->set_correction_mode(CorrectionMode::Identity), c10::Error);
}

TEST(SfclModel, IncrementalDecodeEqualsFullForward) {
  torch::manual_seed(3);
  Transformer m = make_model("sfcl", tiny_sfcl());
  m->eval();
  make_correction_matter(m);
  torch::NoGradGuard no_grad;
  auto tokens = torch::randint(50, {3, 20}, torch::kLong);
  auto full = m->forward(tokens);
  auto cache = m->make_cache(3);
  std::vector<torch::Tensor> parts{m->forward(tokens.narrow(1, 0, 7), cache)};
  for (int64_t t = 7; t < 16; ++t) parts.push_back(m->forward(tokens.narrow(1, t, 1), cache));
  parts.push_back(m->forward(tokens.narrow(1, 16, 4), cache));
  auto incremental = torch::cat(parts, 1);
  EXPECT_TRUE(torch::allclose(full, incremental, 1e-4, 1e-5)) << (full - incremental).abs().max().item<float>();
}

TEST(SfclModel, OverrideWithTheModulesOwnCoefficientsReproducesIt) {
  torch::manual_seed(4);
  Transformer m = make_model("sfcl", tiny_sfcl());
  m->eval();
  make_correction_matter(m);
  torch::NoGradGuard no_grad;
  auto tokens = torch::randint(50, {2, 10}, torch::kLong);
  auto reference = m->forward(tokens);
  auto cs = m->corrections(tokens);
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].sizes(), (std::vector<int64_t>{2, 10, 16}));
  m->set_correction_override(cs);
  EXPECT_TRUE(torch::allclose(m->forward(tokens), reference, 1e-5, 1e-6));
  // Ones everywhere is the identity.
  m->set_correction_override({torch::ones({2, 1, 16}), torch::ones({2, 1, 16})});
  auto ones = m->forward(tokens);
  m->set_correction_mode(CorrectionMode::Identity);
  EXPECT_TRUE(torch::allclose(m->forward(tokens), ones, 1e-6, 1e-6));
  EXPECT_FALSE(torch::allclose(ones, reference, 1e-4, 1e-5));
}

// ---- the event trigger ----------------------------------------------------------

// A word-level vocabulary (as SentencePiece gives the contracts corpus) plus
// a few sub-word and byte-like pieces.
struct Vocab {
  std::vector<std::string> pieces = {"",      " the",  " Seller", " Buyer", " Acme", " Corp", " If",  " if",
                                     " then", " pay",  " shall",  ".",      ",",     "$",     "1",    "2",
                                     "4",     "00",    " 12",     " units", " Ac",   "me",    "\n",   " unless",
                                     " a",    " b",    " deliver", " ifs",  " Sellers"};
  std::map<std::string, int32_t> id;
  Vocab() {
    for (size_t i = 0; i < pieces.size(); ++i) id[pieces[i]] = static_cast<int32_t>(i);
  }
  EventTrigger trigger(int numeric_run = 3, int depth = 3) const {
    return EventTrigger(pieces, {"Seller", "Buyer", "Acme"}, {"if", "unless", "provided"},
                        TriggerOptions{numeric_run, depth});
  }
};

// The events each token of `stream` fires, as (index, mask) pairs.
std::vector<std::pair<int, uint8_t>> run(const EventTrigger& t, const Vocab& v, const std::vector<std::string>& stream) {
  TriggerState s;
  std::vector<std::pair<int, uint8_t>> fired;
  for (size_t i = 0; i < stream.size(); ++i) {
    auto it = v.id.find(stream[i]);
    if (it == v.id.end()) throw std::invalid_argument("test vocabulary lacks '" + stream[i] + "'");
    if (uint8_t e = t.step(s, it->second)) fired.emplace_back(static_cast<int>(i), e);
  }
  return fired;
}

using Fired = std::vector<std::pair<int, uint8_t>>;
const uint8_t kEnt = event_bit(kEventEntity), kNest = event_bit(kEventNesting), kNum = event_bit(kEventNumeric);

TEST(OetTrigger, QuietStreamsFireNothing) {
  Vocab v;
  auto t = v.trigger();
  EXPECT_EQ(run(t, v, {" the", " Seller", " shall", " pay", " the", " Seller", "."}), Fired{});
  // Three openers are not deeper than 3; a sentence boundary resets depth.
  EXPECT_EQ(run(t, v, {" If", " a", " then", " if", " b", " then", " if", " a", ".", " if", " b", " then", " pay", "."}),
            Fired{});
  // Two numeric tokens are not a run of 3; words that only start like a keyword are not it.
  EXPECT_EQ(run(t, v, {" 12", " units", " the", " ifs", " 12", "4", " units"}), Fired{});
  EXPECT_EQ(run(t, v, {}), Fired{});
}

TEST(OetTrigger, EntitySwitchFiresOnADifferentParty) {
  Vocab v;
  auto t = v.trigger();
  // The first party named fires nothing; another party fires; the same again does not.
  EXPECT_EQ(run(t, v, {" the", " Seller", " shall", " pay", " Acme", " Corp", " the", " Buyer", " Buyer"}),
            (Fired{{4, kEnt}, {7, kEnt}}));
  // A name split over pieces ("Ac" + "me") is recognised when it is spelled out.
  EXPECT_EQ(run(t, v, {" the", " Seller", " Ac", "me", " Corp"}), (Fired{{3, kEnt}}));
  // A longer word read whole is not the keyword.
  EXPECT_EQ(run(t, v, {" Buyer", " Sellers", "."}), Fired{});
}

TEST(OetTrigger, NestingDeeperThanThreeFires) {
  Vocab v;
  auto t = v.trigger();
  EXPECT_EQ(run(t, v, {" If", " a", " then", " if", " b", " then", " unless", " a", " then", " if", " b", " then", " if",
                       " pay", "."}),
            (Fired{{9, kNest}, {12, kNest}}));
  // The depth is a parameter (oet.nesting_depth).
  auto shallow = v.trigger(3, 1);
  EXPECT_EQ(run(shallow, v, {" If", " a", " then", " if", " b", "\n", " if"}), (Fired{{3, kNest}}));
}

TEST(OetTrigger, NumericRunFiresOncePerRun) {
  Vocab v;
  auto t = v.trigger();
  // "$12,400": $ is not numeric, "," continues a run without counting.
  EXPECT_EQ(run(t, v, {" pay", "$", "1", "2", ",", "4", "00", " units", " 12", "1", "2"}),
            (Fired{{5, kNum}, {10, kNum}}));
  auto two = v.trigger(2, 3);
  EXPECT_EQ(run(two, v, {" 12", "4", " units", " 12", " units", "1", "2", "4"}), (Fired{{1, kNum}, {6, kNum}}));
}

TEST(OetTrigger, SeveralEventsOnOneTokenAndPrimaryKind) {
  Vocab v;
  auto t = v.trigger(1, 3);  // every numeric token after a non-numeric one fires
  auto fired = run(t, v, {" Seller", " Buyer", "4"});
  EXPECT_EQ(fired, (Fired{{1, kEnt}, {2, kNum}}));
  EXPECT_EQ(primary_event(kEnt | kNum), kEventEntity);
  EXPECT_EQ(primary_event(kNest | kNum), kEventNesting);
  EXPECT_EQ(primary_event(0), -1);
  EXPECT_LE(sizeof(TriggerState), 16u);
  EXPECT_GT(t.lexicon_bytes(), 0);
  // Out-of-range ids are ignored, not read out of bounds.
  TriggerState s;
  EXPECT_EQ(t.step(s, 100000), 0);
  EXPECT_EQ(t.step(s, -1), 0);
}

// ---- the offline table ------------------------------------------------------------

OfflineTable small_table() {
  // 3 kinds x 2 buckets, 2 layers x 3 channels.
  OfflineTableBuilder b(3, 2, 2, 3);
  const float x[6] = {1.5f, 1.0f, 0.5f, 1.0005f, 2.0f, 1.0f};
  const float y[6] = {0.5f, 1.0f, 1.5f, 1.0005f, 0.0f, 1.0f};
  b.add(1, x);  // kind 0, bucket 1
  b.add(1, y);
  b.add(4, x);  // kind 2, bucket 0
  return b.finish(1e-3);
}

TEST(OetTable, BuildAveragesPerRowAndStoresOnlyDeviations) {
  auto t = small_table();
  EXPECT_EQ(t.rows(), 6);
  EXPECT_EQ(t.cols(), 6);
  EXPECT_EQ(t.counts, (std::vector<int64_t>{0, 2, 0, 0, 1, 0}));
  std::vector<float> c(6);
  t.lookup(1, c.data());  // mean of x and y: 1, 1, 1, 1.0005 (dropped: below tolerance), 1, 1
  EXPECT_EQ(c, (std::vector<float>{1, 1, 1, 1, 1, 1}));
  t.lookup(4, c.data());  // x, less the entries within tolerance of 1
  EXPECT_EQ(c, (std::vector<float>{1.5f, 1, 0.5f, 1, 2.0f, 1}));
  t.lookup(0, c.data());  // never observed: identity
  EXPECT_EQ(c, (std::vector<float>(6, 1.0f)));
  EXPECT_EQ(t.delta.nonZeros(), 3);  // row 1 averages to 1 everywhere; row 4 has 3 deviations
  EXPECT_EQ(t.bytes(), 3 * 8 + 7 * 4);
  EXPECT_EQ(t.row(2, 1), 5);
  EXPECT_EQ(OfflineTable::bucket_of(0, 128, 4), 0);
  EXPECT_EQ(OfflineTable::bucket_of(127, 128, 4), 3);
  EXPECT_EQ(OfflineTable::bucket_of(64, 128, 4), 2);
}

TEST(OetTable, SaveLoadRoundTrip) {
  TempDir dir("zl_sfcl");
  auto t = small_table();
  save_offline_table(t, dir / "table.bin");
  auto u = load_offline_table(dir / "table.bin");
  EXPECT_EQ(u.kinds, 3);
  EXPECT_EQ(u.buckets, 2);
  EXPECT_EQ(u.layers, 2);
  EXPECT_EQ(u.dim, 3);
  EXPECT_EQ(u.counts, t.counts);
  EXPECT_EQ(u.bytes(), t.bytes());
  std::vector<float> a(6), b(6);
  for (int64_t r = 0; r < t.rows(); ++r) {
    t.lookup(r, a.data());
    u.lookup(r, b.data());
    EXPECT_EQ(a, b) << "row " << r;
  }
}

TEST(OetTable, CorruptOrForeignFilesAreErrorsNamingTheFile) {
  TempDir dir("zl_sfcl");
  save_offline_table(small_table(), dir / "table.bin");
  const auto size = fs::file_size(dir / "table.bin");
  fs::copy_file(dir / "table.bin", dir / "short.bin");
  fs::resize_file(dir / "short.bin", size - 3);
  { std::ofstream(dir / "foreign.bin") << "not a table at all, just some text"; }
  for (const char* name : {"short.bin", "foreign.bin", "missing.bin"}) {
    try {
      load_offline_table(dir / name);
      ADD_FAILURE() << name << " loaded";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

TEST(OetTable, CoefficientsFollowTheTriggerOverAWindow) {
  Vocab v;
  auto t = v.trigger();
  OfflineTableBuilder b(kEventKinds, 2, 1, 2);
  const float ent[2] = {2.0f, 0.5f};
  b.add(0 * 2 + 0, ent);  // entity, first half of the context
  auto table = b.finish(0);
  auto ids = torch::tensor(std::vector<int64_t>{v.id.at(" the"), v.id.at(" Seller"), v.id.at(" Buyer"), v.id.at(".")},
                           torch::kLong).view({1, 4});
  bool fired = false;
  auto c = oet_coefficients(t, table, ids, 8, &fired);  // [1,4,1,2]
  EXPECT_TRUE(fired);
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{1, 4, 1, 2}));
  EXPECT_FLOAT_EQ(c[0][2][0][0].item<float>(), 2.0f);  // the switch to the Buyer, position 2 (bucket 0)
  EXPECT_FLOAT_EQ(c[0][2][0][1].item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(c.sum().item<float>(), 2.0f + 0.5f + 6.0f);  // every other position is 1
}

// ---- configuration -------------------------------------------------------------

TEST(SfclConfig, OetSharesTheSfclCheckpointAndItsKeysAreEvaluationOnly) {
  RunConfig sfcl, oet, base;
  sfcl.variant = "sfcl";
  oet.variant = "oet";
  EXPECT_EQ(train_id(sfcl), train_id(oet));
  EXPECT_NE(run_id(sfcl), run_id(oet));
  EXPECT_NE(train_id(sfcl), train_id(base));

  RunConfig off = sfcl;
  set_key(off, "sfcl.at_inference", "off", {});
  EXPECT_EQ(train_id(off), train_id(sfcl));
  EXPECT_NE(run_id(off), run_id(sfcl));

  RunConfig buckets = oet;
  set_key(buckets, "oet.buckets", "8", {});
  EXPECT_EQ(train_id(buckets), train_id(oet));
  EXPECT_NE(run_id(buckets), run_id(oet));
  RunConfig base8 = base;
  set_key(base8, "oet.buckets", "8", {});
  EXPECT_EQ(run_id(base8), run_id(base));  // oet.* never touches another variant

  RunConfig wide = sfcl;
  set_key(wide, "sfcl.hidden", "32", {});
  EXPECT_NE(train_id(wide), train_id(sfcl));
  EXPECT_THROW(set_key(wide, "oet.numeric_run", "0", {"x.ini", 3}), ConfigError);
  EXPECT_THROW(set_key(wide, "sfcl.form", "cubic", {"x.ini", 4}), ConfigError);
}

}  // namespace
}  // namespace zl
