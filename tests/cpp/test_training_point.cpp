// Operating points whose knob shapes training (sim/operating_point.h,
// sim/training_point.h): sfcl's width solved for a time share on a
// grid before the model trains, kept beside the checkpoint that sfcl and oet
// share, and in the train_id in the width's place.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "sim/data.h"
#include "sim/operating_point.h"
#include "sim/trainer.h"
#include "sim/training_point.h"
#include "tests/cpp/message_of.h"
#include "tests/cpp/temp_dir.h"

namespace zl {
namespace {

OperatingPoint width_for_share(double target, double lo = 4, double hi = 512) {
  OperatingPoint op;
  op.variant = "sfcl";
  op.metric = "time_share_correction";
  op.knob = "sfcl.hidden";
  op.target = target;
  op.lo = lo;
  op.hi = hi;
  op.before_training = true;
  return op;
}

RunConfig sfcl_at_share(const std::string& variant = "sfcl") {
  RunConfig c;
  c.variant = variant;
  set_key(c, "calibrate.sfcl.target", "0.117", {});
  set_key(c, "calibrate.sfcl.metric", "time_share_correction", {});
  set_key(c, "calibrate.sfcl.knob", "sfcl.hidden", {});
  set_key(c, "calibrate.sfcl.range", "4, 512", {});
  return c;
}

// A model small enough that a timed grid over its widths takes seconds.
RunConfig small_sfcl(const std::string& dir, const std::string& metric) {
  RunConfig c = sfcl_at_share("sfcl");
  set_key(c, "calibrate.sfcl.metric", metric, {});
  c.data.tokenizer = "byte";
  c.data.documents = 200;
  c.model.layers = 2;
  c.model.dim = 32;
  c.model.heads = 2;
  c.model.context = 64;
  c.decode.max_new_tokens = 8;
  c.output.dir = dir;
  c.output.verbosity = 0;
  return c;
}

TEST(TrainingPoint, TheGridSolvesAnIntegerKnobForASmoothShare) {
  // A module of width h beside a step of 1000 units: share h / (h + 1000) = 0.117 at h = 132.5.
  int calls = 0;
  SolvedPoint s = solve_on_grid(width_for_share(0.117), [&](double h) {
    ++calls;
    return h / (h + 1000);
  });
  EXPECT_EQ(s.knob, std::round(s.knob));
  EXPECT_NEAR(s.knob, 132.5, 1.0);
  EXPECT_NEAR(s.reached, 0.117, 0.002);
  // 4, 8, ..., 512, then the solution once more.
  ASSERT_EQ(s.probes.size(), 9u);
  EXPECT_EQ(calls, 9);
  EXPECT_EQ(s.probes.front().first, 4);
  EXPECT_EQ(s.probes[7].first, 512);
  EXPECT_EQ(s.probes.back().first, s.knob);
}

TEST(TrainingPoint, NoiseAtSmallWidthsDoesNotMoveTheCrossing) {
  // As measured here: a floor of fixed overhead that scatters (9% at width 4
  // from a cold start), then the share rising with the width.
  const std::map<double, double> measured{{4, 0.092}, {8, 0.026}, {16, 0.045}, {32, 0.067},
                                          {64, 0.059}, {128, 0.096}, {256, 0.172}, {512, 0.286}};
  SolvedPoint s = solve_on_grid(width_for_share(0.117), [&](double h) {
    auto it = measured.find(h);
    return it != measured.end() ? it->second : 0.096 + (0.172 - 0.096) * std::log2(h / 128);
  });
  // Between 128 (0.096) and 256 (0.172), in log width: 128 * 2^(0.021 / 0.076).
  EXPECT_NEAR(s.knob, 128 * std::pow(2.0, 0.021 / 0.076), 1.0);
}

TEST(TrainingPoint, AnUnreachableShareNamesTheKnobTheTargetAndWhatTheGridReached) {
  const std::string msg =
      message_of([] { solve_on_grid(width_for_share(0.117), [](double h) { return 0.01 + 0.08 * std::log2(h / 4) / 7; }); });
  EXPECT_EQ(msg, "sfcl.hidden cannot bring time_share_correction to 0.117: 0.01-0.09 over 4-512");
}

TEST(TrainingPoint, TheTargetTakesTheWidthsPlaceInTheTrainIdThatSfclAndOetShare) {
  RunConfig plain;
  plain.variant = "sfcl";
  RunConfig solved = sfcl_at_share("sfcl"), oet = sfcl_at_share("oet");
  EXPECT_FALSE(operating_point(solved).has_value());  // not a decode-time knob: nothing to solve after training
  ASSERT_TRUE(training_operating_point(solved).has_value());
  ASSERT_TRUE(training_operating_point(oet).has_value());
  EXPECT_EQ(training_operating_point(oet)->knob, "sfcl.hidden");
  EXPECT_NE(train_id(solved), train_id(plain));  // a new model
  EXPECT_EQ(train_id(solved), train_id(oet));    // oet decodes sfcl's checkpoint
  RunConfig wider = solved;
  set_key(wider, "sfcl.hidden", "64", {});
  EXPECT_EQ(train_id(wider), train_id(solved));  // the width is an outcome of the target
  EXPECT_EQ(run_id(wider), run_id(solved));
  RunConfig looser = solved;
  set_key(looser, "calibrate.tolerance", "0.3", {});
  EXPECT_EQ(train_id(looser), train_id(solved));  // a grid does not read the tolerance
  RunConfig fewer = solved;
  set_key(fewer, "calibrate.prompts", "32", {});
  EXPECT_NE(train_id(fewer), train_id(solved));  // the prompts it is timed on do
  RunConfig other_share = solved;
  set_key(other_share, "calibrate.sfcl.target", "0.2", {});
  EXPECT_NE(train_id(other_share), train_id(solved));
  // The variants that do not decode sfcl's checkpoint keep their identities.
  for (const char* v : {"baseline", "sfvl", "fused"}) {
    RunConfig a, b = sfcl_at_share(v);
    a.variant = v;
    EXPECT_EQ(run_id(a), run_id(b)) << v;
    EXPECT_EQ(train_id(a), train_id(b)) << v;
    EXPECT_FALSE(training_operating_point(b).has_value()) << v;
  }
}

TEST(TrainingPoint, ARunReadsTheWidthWrittenBesideItsCheckpointAndNamesAFileForAnotherTarget) {
  TempDir dir("zl_tp");
  RunConfig c = sfcl_at_share("oet");
  c.output.dir = dir / "out";
  const std::string ckpt = checkpoint_path(c);
  std::filesystem::create_directories(ckpt);
  {
    std::ofstream f(ckpt + "/operating_point.ini");
    f << "metric = time_share_correction\ntarget = 0.117\nknob = sfcl.hidden\nvalue = 96\nreached = 0.12\n"
         "probes = 4 0.01 512 0.3 96 0.12\n";
  }
  RunRecord r;
  ASSERT_TRUE(settle_training_point(c, Dataset{}, r));  // no data needed: nothing is solved
  EXPECT_EQ(c.sfcl.hidden, 96);
  EXPECT_EQ(r.metrics["calibrated_knob_value"], 96);
  EXPECT_EQ(r.metrics["calibrated_reached"], 0.12);
  EXPECT_EQ(r.metrics["calibrated_probes"], 3);
  EXPECT_NE(r.config_ini.find("hidden = 96"), std::string::npos);

  RunConfig other = c;
  set_key(other, "calibrate.sfcl.target", "0.2", {});
  std::filesystem::create_directories(checkpoint_path(other));
  std::filesystem::copy_file(ckpt + "/operating_point.ini", checkpoint_path(other) + "/operating_point.ini");
  const std::string msg = message_of([&] { settle_training_point(other, Dataset{}, r); });
  EXPECT_NE(msg.find(checkpoint_path(other) + "/operating_point.ini: solved for time_share_correction = 0.117"),
            std::string::npos)
      << msg;

  RunConfig none;
  EXPECT_FALSE(settle_training_point(none, Dataset{}, r));
}

TEST(TrainingPoint, AWidthIsSolvedOnUntrainedModelsOnceAndReadBackByTheNextRun) {
  TempDir dir("zl_tp");
  RunConfig c = small_sfcl(dir / "out", "time_share_correction");
  set_key(c, "calibrate.sfcl.target", "0.2", {});
  set_key(c, "calibrate.sfcl.range", "2, 2048", {});
  set_key(c, "calibrate.prompts", "8", {});
  c.decode.prompts = 8;
  c.decode.batch = 4;
  Dataset ds = prepare_data(c);
  RunRecord first;
  ASSERT_TRUE(settle_training_point(c, ds, first));
  const double width = c.sfcl.hidden;
  EXPECT_GE(width, 2);
  EXPECT_LE(width, 2048);
  EXPECT_EQ(width, first.metrics["calibrated_knob_value"]);
  EXPECT_TRUE(std::isfinite(first.metrics["calibrated_reached"]));
  EXPECT_GE(first.tables["calibration/probes"].rows(), 9u);
  // The next run of the checkpoint (oet's) reads it: the same width, the same probes.
  RunConfig next = c;
  next.variant = "oet";
  next.sfcl.hidden = 16;
  RunRecord second;
  ASSERT_TRUE(settle_training_point(next, ds, second));
  EXPECT_EQ(next.sfcl.hidden, width);
  EXPECT_NEAR(second.metrics["calibrated_reached"], first.metrics["calibrated_reached"], 1e-9);
}

}  // namespace
}  // namespace zl

namespace zl {
namespace {

// Issue 37 item 4: a timed knob measured in rounds gets an interval that
// holds the crossing the noise hides.
TEST(TrainingPoint, RoundsOfTimingGiveTheWidthAnIntervalThatHoldsTheTrueCrossing) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.004);
  std::vector<double> order;
  const OperatingPoint op = width_for_share(0.117);
  const SolvedPoint s = solve_on_grid(
      op,
      [&](double h) {
        order.push_back(h);
        return h / (h + 1000) + noise(rng);
      },
      8, 5);
  EXPECT_EQ(s.rounds, 5);
  ASSERT_EQ(s.probes.size(), 8u * 5 + 5);  // every knob 5 times, then the solution 5 times
  EXPECT_NE(order[0], order[8]);           // each round starts at another knob
  ASSERT_TRUE(std::isfinite(s.knob_lo));
  EXPECT_LE(s.knob_lo, 132.5);
  EXPECT_GE(s.knob_hi, 132.5);
  EXPECT_LE(s.knob_lo, s.knob);
  EXPECT_GE(s.knob_hi, s.knob);
  EXPECT_LT(s.knob_hi - s.knob_lo, 80);
  // One round: no interval.
  EXPECT_TRUE(std::isnan(solve_on_grid(op, [](double h) { return h / (h + 1000); }).knob_lo));
}

TEST(TrainingPoint, AnAnalyticShareIsSolvedToTheNearestIntegerTheSameEveryTime) {
  OperatingPoint op = width_for_share(0.117);
  op.metric = "flops_share_correction";
  op.analytic = true;
  auto share = [](double h) { return h / (h + 1000); };  // 0.11660 at 132, 0.11739 at 133
  const SolvedPoint s = solve_integer(op, share);
  EXPECT_EQ(s.knob, 133);
  EXPECT_NEAR(s.reached, 133.0 / 1133.0, 1e-12);
  EXPECT_LE(s.probes.size(), 12u);  // bisection over 4..512
  EXPECT_EQ(solve_integer(op, share).knob, s.knob);
  op.target = 0.9;
  EXPECT_NE(message_of([&] { solve_integer(op, share); }).find("sfcl.hidden cannot bring flops_share_correction to 0.9"),
            std::string::npos);
}


void set_value(const std::string& path, int value) {
  std::ifstream in(path);
  std::string text, line;
  while (std::getline(in, line)) text += (line.rfind("value = ", 0) == 0 ? "value = " + std::to_string(value) : line) + "\n";
  in.close();
  std::ofstream(path) << text;
}

// Solved once per study: a second seed (in this process or a second shard's)
// and a resumed study read the study's solution instead of solving again.
TEST(TrainingPoint, TheWidthIsSolvedOncePerStudyAndReadBackByOtherSeedsShardsAndResumes) {
  TempDir dir("zl_tp");
  RunConfig first = small_sfcl(dir / "out", "flops_share_correction");
  first.seed = 1;
  Dataset ds = prepare_data(first);
  RunRecord r1;
  ASSERT_TRUE(settle_training_point(first, ds, r1));
  const std::string shared = study_operating_point_path(first);
  ASSERT_TRUE(std::filesystem::exists(shared)) << shared;
  const int solved = static_cast<int>(first.sfcl.hidden);
  // The analytic share of that width is the run's flops_share_correction.
  EXPECT_NEAR(r1.metrics["calibrated_reached"], 0.117, 0.005);

  // Marked, so that reading it back shows: another seed (and training
  // schedule) gets the study's file, not a solution of its own.
  set_value(shared, solved + 7);
  RunConfig second = small_sfcl(dir / "out", "flops_share_correction");
  second.seed = 2;
  second.train.steps = 999;
  EXPECT_EQ(study_operating_point_path(second), shared);
  RunRecord r2;
  ASSERT_TRUE(settle_training_point(second, ds, r2));
  EXPECT_EQ(second.sfcl.hidden, solved + 7);
  // A resumed run of seed 1 keeps what its checkpoint was trained at.
  RunConfig again = small_sfcl(dir / "out", "flops_share_correction");
  again.seed = 1;
  ASSERT_TRUE(settle_training_point(again, ds, r1));
  EXPECT_EQ(again.sfcl.hidden, solved);

  // A timed target is read back the same way: with no data there is nothing
  // it could time, so a width here can only have come from the study's file.
  RunConfig timed = small_sfcl(dir / "timed", "time_share_correction");
  timed.seed = 3;
  std::filesystem::create_directories(std::filesystem::path(study_operating_point_path(timed)).parent_path());
  std::ofstream(study_operating_point_path(timed))
      << "metric = time_share_correction\ntarget = 0.117\nknob = sfcl.hidden\nvalue = 141\nreached = 0.118\nrounds = 3\n"
         "interval = 120 150\nprobes = 4 0.01 512 0.3 141 0.118\n";
  RunRecord r3;
  ASSERT_TRUE(settle_training_point(timed, Dataset{}, r3));
  EXPECT_EQ(timed.sfcl.hidden, 141);
  EXPECT_EQ(r3.metrics["calibrated_knob_lo"], 120);
  EXPECT_EQ(r3.metrics["calibrated_knob_hi"], 150);
  // A different model shape is another study point.
  RunConfig wider = timed;
  wider.model.dim = 64;
  EXPECT_NE(study_operating_point_path(wider), study_operating_point_path(timed));
}

}  // namespace
}  // namespace zl
