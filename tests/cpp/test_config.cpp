#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "sim/config.h"
#include "sim/study_file.h"
#include "tests/cpp/temp_dir.h"

namespace zl {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, DefaultsValidateAndEveryKeyRoundTrips) {
  RunConfig c;
  EXPECT_NO_THROW(validate(c, {}));
  // Setting each key to its own canonical text leaves the config unchanged.
  for (const auto& k : config_keys()) {
    RunConfig d;
    set_key(d, k.name, k.get(c), {"x.ini", 1});
    EXPECT_EQ(k.get(d), k.get(c)) << k.name;
  }
  EXPECT_EQ(to_ini(c).find("[model]") != std::string::npos, true);
}

TEST(Config, FileThenCommandLineOverrides) {
  auto s = parse_study("variant = baseline\n[train]\nsteps = 50\nlr = 1e-3\n", "a.ini", {{"train.steps", "70"}});
  EXPECT_EQ(s.base.train.steps, 70);
  EXPECT_DOUBLE_EQ(s.base.train.lr, 1e-3);
}

TEST(Config, UnknownKeyNamesKeyFileAndLine) {
  auto msg = message_of([] { parse_study("[train]\nsteps = 5\nstepz = 5\n", "ablations/x.ini", {}); });
  EXPECT_NE(msg.find("ablations/x.ini:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("train.stepz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key"), std::string::npos) << msg;
}

TEST(Config, WrongTypeAndImpossibleValues) {
  auto type = message_of([] { parse_study("[model]\nlayers = four\n", "m.ini", {}); });
  EXPECT_NE(type.find("m.ini:2: model.layers"), std::string::npos) << type;
  EXPECT_NE(type.find("integer"), std::string::npos) << type;

  auto negative = message_of([] { parse_study("\n[train]\nsteps = -5\n", "n.ini", {}); });
  EXPECT_NE(negative.find("n.ini:3: train.steps"), std::string::npos) << negative;

  auto heads = message_of([] { parse_study("[model]\ndim = 130\nheads = 4\n", "h.ini", {}); });
  EXPECT_NE(heads.find("h.ini:3: model.heads"), std::string::npos) << heads;
  EXPECT_NE(heads.find("divide"), std::string::npos) << heads;

  auto threshold = message_of([] { parse_study("[verify]\nthreshold = 1.5\n", "t.ini", {}); });
  EXPECT_NE(threshold.find("t.ini:2: verify.threshold"), std::string::npos) << threshold;

  auto cli = message_of([] { parse_study("", "c.ini", {{"decode.top_p", "0"}}); });
  EXPECT_NE(cli.find("command line: decode.top_p"), std::string::npos) << cli;

  auto bad_grid = message_of([] { parse_study("[grid]\nseed = 1, x\n", "g.ini", {}); });
  EXPECT_NE(bad_grid.find("g.ini:2: seed"), std::string::npos) << bad_grid;
}

TEST(Config, GridExpandsCartesianAndZipped) {
  auto s = parse_study(
      "[grid]\nseed = 1,2,3\ntrain.lr = 1e-3, 2e-3\n"
      "[zip.sampling]\ndecode.temperature = 0.5, 1.0\ndecode.top_p = 0.9, 0.95\n",
      "g.ini", {});
  auto runs = s.expand();
  ASSERT_EQ(runs.size(), 3u * 2u * 2u);
  for (const auto& r : runs) {
    // Zipped keys move together.
    if (r.decode.temperature == 0.5) EXPECT_DOUBLE_EQ(r.decode.top_p, 0.9);
    else EXPECT_DOUBLE_EQ(r.decode.top_p, 0.95);
  }
  auto bad = message_of([] { parse_study("[zip.a]\ndecode.temperature = 0.5, 1.0\ndecode.top_p = 0.9\n", "z.ini", {}); });
  EXPECT_NE(bad.find("z.ini:3"), std::string::npos) << bad;
}

TEST(Config, OverrideFixesASweptKey) {
  auto s = parse_study("[grid]\nseed = 1,2,3\n", "g.ini", {{"seed", "7"}});
  auto runs = s.expand();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].seed, 7);
}

TEST(Config, AKeyGivenTwiceIsAnErrorNamingBothLines) {
  auto msg = message_of([] { parse_study("[model]\nlayers = 2\ndim = 64\nlayers = 3\n", "d.ini", {}); });
  EXPECT_NE(msg.find("d.ini:4: model.layers: given twice (first at d.ini:2)"), std::string::npos) << msg;
  // The same key in two spellings of one section counts too; overrides are not duplicates.
  auto top = message_of([] { parse_study("variant = sfvl\n[model]\nlayers = 2\n[model]\nlayers = 2\n", "t.ini", {}); });
  EXPECT_NE(top.find("t.ini:5: model.layers: given twice"), std::string::npos) << top;
  EXPECT_EQ(parse_study("[model]\nlayers = 2\n", "o.ini", {{"model.layers", "3"}}).single().model.layers, 3);
}

TEST(Config, AnUnknownSectionIsAnErrorEvenWhenEmpty) {
  auto msg = message_of([] { parse_study("[model]\nlayers = 2\n[modle]\n", "s.ini", {}); });
  EXPECT_NE(msg.find("s.ini:3: unknown section [modle]"), std::string::npos) << msg;
  EXPECT_NO_THROW(parse_study("[study]\nname = x\n[judge]\n[zip.arms]\n", "s.ini", {}));
}

TEST(Config, ACommaListOverrideSweepsTheKey) {
  // More seeds for a study from the command line (what `claims --plan` prints).
  auto s = parse_study("[grid]\nseed = 1,2,3\ndecode.temperature = 0.5, 1.0\n", "g.ini", {{"seed", "1,2,3,4,5"}});
  auto runs = s.expand();
  ASSERT_EQ(runs.size(), 5u * 2u);
  std::set<int64_t> seeds;
  for (const auto& r : runs) seeds.insert(r.seed);
  EXPECT_EQ(seeds, (std::set<int64_t>{1, 2, 3, 4, 5}));
  auto unswept = parse_study("train.steps = 100\n", "g.ini", {{"decode.temperature", "0.3,0.6"}});
  EXPECT_EQ(unswept.expand().size(), 2u);
  EXPECT_DOUBLE_EQ(unswept.single().decode.temperature, 0.3);
  auto bad = message_of([] { parse_study("", "g.ini", {{"seed", "1,x"}}); });
  EXPECT_NE(bad.find("command line: seed"), std::string::npos) << bad;
  // Found by fuzz_study_file: an empty override read past an empty list.
  auto empty = message_of([] { parse_study("", "g.ini", {{"seed", ""}}); });
  EXPECT_NE(empty.find("command line: seed"), std::string::npos) << empty;
  auto unknown = message_of([] { parse_study("", "g.ini", {{"\xb2eayesr2", ""}}); });
  EXPECT_NE(unknown.find("unknown key"), std::string::npos) << unknown;
}

TEST(Config, AListValuedKeyIsSetWholeFromTheCommandLine) {
  // `serve-bench --serve.rates 100,200,inf` serves one run at three rates, not three runs.
  auto s = parse_study("", "g.ini", {{"serve.rates", "100,200,inf"}, {"serve.hardware", "H100-SXM, L4"}});
  ASSERT_EQ(s.expand().size(), 1u);
  EXPECT_EQ(s.single().serve.rates, "100,200,inf");
  EXPECT_EQ(s.single().serve.hardware, "H100-SXM, L4");
  auto bad = message_of([] { parse_study("", "g.ini", {{"serve.loads", "0.3,0"}}); });
  EXPECT_NE(bad.find("serve.loads"), std::string::npos) << bad;
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(Config, AStudyOnABaseReplacesKeysZipsAndGridKeys) {
  TempDir dir("zl_base");
  write_file(dir / "base.ini",
             "variant = baseline\n[study]\nname = base\n[model]\nlayers = 4\ndim = 128\n[train]\nsteps = 400\n"
             "precision = fp32\n[zip.arm]\nvariant = baseline, sfvl\ndecode.seed = 0, 1\n"
             "[zip.other]\ndecode.top_p = 0.9, 1\n[grid]\nseed = 1, 2, 3\n");
  auto s = parse_study("[study]\nbase = base.ini\nname = child\n[train]\nprecision = bf16\n"
                       "[zip.other]\ndecode.temperature = 0.5, 0.7, 0.9\n[zip.size]\nmodel.dim = 64, 96\n"
                       "train.steps = 200, 300\n",
                       (dir / "child.ini"), {});
  EXPECT_EQ(s.name, "child");
  const auto runs = s.expand();
  ASSERT_EQ(runs.size(), 3u * 2u * 3u * 2u);  // seeds x arms x the child's [zip.other] (not the base's) x sizes
  std::set<int64_t> dims;
  for (const auto& r : runs) {
    EXPECT_EQ(r.train.precision, "bf16");
    EXPECT_EQ(r.model.layers, 4);  // from the base
    EXPECT_DOUBLE_EQ(r.decode.top_p, 1);  // the base's [zip.other] is gone whole
    EXPECT_EQ(r.train.steps, r.model.dim == 64 ? 200 : 300);
    dims.insert(r.model.dim);
  }
  EXPECT_EQ(dims, (std::set<int64_t>{64, 96}));
  // An error on a line of the base names the base's file and line.
  write_file(dir / "bad.ini", "[model]\nlayers = 0\n");
  auto bad = message_of([&] { parse_study("[study]\nbase = bad.ini\n", dir / "c.ini", {}); });
  EXPECT_NE(bad.find("bad.ini:2: model.layers"), std::string::npos) << bad;
  auto missing = message_of([&] { parse_study("[study]\nbase = none.ini\n", dir / "c.ini", {}); });
  EXPECT_NE(missing.find("c.ini:2: study.base: "), std::string::npos) << missing;
  EXPECT_NE(missing.find("none.ini: cannot open study file"), std::string::npos) << missing;
  write_file(dir / "loop.ini", "[study]\nbase = loop.ini\n");
  auto loop = message_of([&] { parse_study("[study]\nbase = loop.ini\n", dir / "c.ini", {}); });
  EXPECT_NE(loop.find("more than 8 deep"), std::string::npos) << loop;
  // A plain key that the base sweeps would be lost under the sweep: an error.
  auto swept = message_of([&] { parse_study("[study]\nbase = base.ini\n[decode]\nseed = 3\n", dir / "c.ini", {}); });
  EXPECT_NE(swept.find("sets decode.seed, which the base sweeps at"), std::string::npos) << swept;
  auto device = message_of([&] { parse_study("[study]\nbase = /dev/zero\n", dir / "c.ini", {}); });
  EXPECT_NE(device.find("/dev/zero: not a regular file"), std::string::npos) << device;
}

// ablations/scale.ini is claims.ini on a base: the ladder's runs are the
// claims study's arms at each size.
TEST(Config, TheScaleLadderIsTheClaimsStudyAtEachSize) {
  const std::string dir = std::string(ZL_SOURCE_DIR) + "/ablations/";
  const auto claims = load_study(dir + "claims.ini", {}).expand();
  const auto scale = load_study(dir + "scale.ini", {}).expand();
  std::set<int64_t> dims;
  for (const auto& r : scale) dims.insert(r.model.dim);
  EXPECT_EQ(scale.size(), claims.size() * dims.size());
}

TEST(Config, IdentityIgnoresOutputAndSharesTrainingAcrossDecodeSettings) {
  RunConfig a, b;
  b.output.dir = "elsewhere";
  EXPECT_EQ(run_id(a), run_id(b));
  b.decode.temperature = 0.3;
  EXPECT_NE(run_id(a), run_id(b));
  EXPECT_EQ(train_id(a), train_id(b));  // a temperature sweep trains once
  b.train.steps = 7;
  EXPECT_NE(train_id(a), train_id(b));
  // Another variant's settings do not change a baseline run.
  RunConfig c;
  c.fused.alpha = 0.5;
  EXPECT_EQ(run_id(a), run_id(c));
  // sfvl re-uses the baseline's language model.
  RunConfig v;
  v.variant = "sfvl";
  v.verify.threshold = 0.5;
  EXPECT_EQ(train_id(a), train_id(v));
  EXPECT_NE(run_id(a), run_id(v));
}

}  // namespace
}  // namespace zl
