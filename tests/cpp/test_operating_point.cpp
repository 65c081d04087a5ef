// Operating points (docs/design.md#operating-points, sim/operating_point.h): the knob search, sfvl's
// first-check trigger rate solved on a verifier of known scores, the
// calibration prompts kept apart from the test prompts, and the errors a
// study gets for a target it cannot reach or does not name right.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "models/transformer.h"
#include "sim/data.h"
#include "sim/operating_point.h"
#include "sim/prompts.h"
#include "sim/stages/sfvl_stage.h"
#include "sim/study_file.h"
#include "tests/cpp/message_of.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

OperatingPoint point(double target, double lo, double hi, double tolerance = 0.05) {
  OperatingPoint op;
  op.variant = "sfvl";
  op.metric = "trigger_rate_first_short";
  op.knob = "verify.threshold";
  op.target = target;
  op.lo = lo;
  op.hi = hi;
  op.tolerance = tolerance;
  return op;
}

TEST(OperatingPoint, BisectionReachesATargetOnARisingOrFallingMetric) {
  // A smooth rising curve: knob^2 = 0.18 at 0.4243.
  SolvedPoint up = solve_operating_point(point(0.18, 0.0, 1.0), [](double k) { return k * k; });
  EXPECT_NEAR(up.reached, 0.18, 0.05 * 0.18);
  EXPECT_NEAR(up.knob, std::sqrt(0.18), 0.02);
  EXPECT_GE(up.probes.size(), 3u);  // both ends, then bisection
  EXPECT_EQ(up.probes[0].first, 0.0);
  EXPECT_EQ(up.probes[1].first, 1.0);
  // Falling: 1 - knob = 0.18 at 0.82.
  SolvedPoint down = solve_operating_point(point(0.18, 0.0, 1.0), [](double k) { return 1 - k; });
  EXPECT_NEAR(down.knob, 0.82, 0.01);
}

TEST(OperatingPoint, AnUnreachableTargetNamesKnobMetricTargetAndTheRangeReached) {
  const std::string msg = message_of([] {
    solve_operating_point(point(0.18, 0.05, 0.99), [](double k) { return 0.35 + 0.25 * (k - 0.05) / 0.94; });
  });
  EXPECT_EQ(msg, "verify.threshold cannot bring trigger_rate_first_short to 0.18: 0.35-0.6 over 0.05-0.99");
}

TEST(OperatingPoint, AMetricWithNothingToMeasureIsNamed) {
  const std::string msg = message_of([] { solve_operating_point(point(0.18, 0.01, 0.99), [](double) { return NAN; }); });
  EXPECT_NE(msg.find("trigger_rate_first_short has no value at verify.threshold = 0.01"), std::string::npos) << msg;
}

TEST(OperatingPoint, AJumpAtTheCrossingIsAnErrorNotAQuietMiss) {
  // A step from 0.1 to 0.3 at 0.5: bisection closes in on the step and never lands within 5% of 0.18.
  const std::string msg = message_of([] {
    solve_operating_point(point(0.18, 0.0, 1.0), [](double k) { return k < 0.5 ? 0.1 : 0.3; }, 12);
  });
  EXPECT_NE(msg.find("cannot bring trigger_rate_first_short within"), std::string::npos) << msg;
  EXPECT_NE(msg.find("12 probes"), std::string::npos) << msg;
}

ModelConfig tiny_lm() {
  ModelConfig c = tiny_model();
  c.vocab = 64;  // the prompts below hold ids up to 60
  return c;
}

// Known scores: a fixed hash of the window spread over [0,1), so that about a
// share t of windows scores below threshold t, whatever the model samples.
WindowScorer hashed_scores() {
  return [](const torch::Tensor& w) {
    auto c = w.contiguous();
    auto out = torch::empty({c.size(0)}, torch::kFloat);
    for (int64_t i = 0; i < c.size(0); ++i) {
      uint64_t h = 1469598103934665603ull;
      for (int64_t j = 0; j < c.size(1); ++j) h = (h ^ static_cast<uint64_t>(c[i][j].item<int64_t>())) * 1099511628211ull;
      out[i] = static_cast<float>((h >> 11) * (1.0 / 9007199254740992.0));
    }
    return out;
  };
}

TEST(OperatingPoint, SfvlsThresholdIsSolvedForTheFirstCheckRateOfAVerifierOfKnownScores) {
  torch::manual_seed(5);
  Transformer lm(tiny_lm());
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t i = 0; i < 48; ++i) prompts.push_back({i % 60 + 1, (i * 7) % 60 + 1, (i * 13) % 60 + 1, 3});
  DecodeOptions opt;
  opt.sampling.temperature = 1.0;
  opt.batch = 8;
  VerifyPolicy policy{0.5, "random", 1.0, 0.3, 3};
  const int64_t short_context = 16;
  auto measure = [&](double t) {
    VerifyPolicy p = policy;
    p.threshold = t;
    return first_check_rate_at(lm, hashed_scores(), 5, p, prompts, opt, 99, short_context);
  };
  OperatingPoint op = point(0.18, 0.01, 0.99, 0.1);
  SolvedPoint s = solve_operating_point(op, measure);
  EXPECT_NEAR(s.reached, 0.18, 0.1 * 0.18);
  // Uniform known scores: the threshold that fires on 18% of first checks is near 0.18.
  EXPECT_NEAR(s.knob, 0.18, 0.06);
  // Frozen: measuring again at the solved threshold gives the same value.
  EXPECT_DOUBLE_EQ(measure(s.knob), s.reached);
  // Re-checks of re-sampled tokens are not first checks: at a high threshold
  // many positions are checked again, and the first-check rate still tracks the threshold.
  EXPECT_NEAR(measure(0.6), 0.6, 0.08);
}

TEST(OperatingPoint, AStudyNamingAnUnknownKnobOrAMetricSfvlDoesNotProduceIsAnErrorAtItsLine) {
  const std::string knob = message_of([] {
    parse_study("variant = sfvl\n[calibrate.sfvl]\ntarget = 0.18\nknob = verify.thresh\n", "ablations/op.ini", {});
  });
  EXPECT_NE(knob.find("ablations/op.ini:4: calibrate.sfvl.knob"), std::string::npos) << knob;
  EXPECT_NE(knob.find("unknown knob 'verify.thresh'"), std::string::npos) << knob;
  EXPECT_NE(knob.find("trigger_rate_first_short by verify.threshold"), std::string::npos) << knob;

  const std::string metric = message_of([] {
    parse_study("variant = sfvl\n[calibrate.sfvl]\ntarget = 0.18\n\nmetric = decode_tok_s\n", "ablations/op.ini", {});
  });
  EXPECT_NE(metric.find("ablations/op.ini:5: calibrate.sfvl.metric"), std::string::npos) << metric;
  EXPECT_NE(metric.find("does not produce 'decode_tok_s'"), std::string::npos) << metric;

  const std::string range =
      message_of([] { parse_study("[calibrate.sfvl]\nrange = 0.9, 0.1\n", "ablations/op.ini", {}); });
  EXPECT_NE(range.find("ablations/op.ini:2: calibrate.sfvl.range"), std::string::npos) << range;

  const std::string variant = message_of([] { parse_study("[calibrate.fused]\ntarget = 0.1\n", "ablations/op.ini", {}); });
  EXPECT_NE(variant.find("ablations/op.ini:1"), std::string::npos) << variant;  // no such section
}

TEST(OperatingPoint, ATargetIsPartOfTheRunsIdentityOnlyWhenSet) {
  RunConfig c;
  c.variant = "sfvl";
  const std::string plain = run_id(c);
  RunConfig other = c;
  set_key(other, "calibrate.prompts", "32", {});
  EXPECT_EQ(run_id(other), plain);  // no target: the [calibrate] keys change nothing
  set_key(other, "calibrate.sfvl.target", "0.18", {});
  EXPECT_NE(run_id(other), plain);
  EXPECT_EQ(train_id(other), train_id(c));  // a target never retrains
  RunConfig twice = other;
  set_key(twice, "calibrate.sfvl.target", "0.30", {});
  EXPECT_NE(run_id(twice), run_id(other));  // the sensitivity sweep's points are runs of their own
  ASSERT_TRUE(operating_point(other).has_value());
  EXPECT_EQ(operating_point(other)->knob, "verify.threshold");
  other.variant = "baseline";
  EXPECT_FALSE(operating_point(other).has_value());
}

TEST(OperatingPoint, CalibrationPromptsComeFromDocumentsNoTestPromptUses) {
  TempDir dir("zl_op");
  RunConfig c;
  c.data.tokenizer = "byte";
  c.data.documents = 400;  // 40 held out: 16 test prompts leave most of them
  c.model.context = 512;
  c.decode.prompts = 16;
  c.output.dir = dir / "out";
  Dataset ds = prepare_data(c);
  const Prompts test = make_prompts(c, ds);
  ASSERT_EQ(test.tokens.size(), 16u);
  std::set<int64_t> used(test.source_doc.begin(), test.source_doc.end());
  EXPECT_EQ(used.count(-1), 0u);  // every test prompt was traced to its document
  const Prompts cal = calibration_prompts(c, ds, 8, {4, 16});
  ASSERT_EQ(cal.tokens.size(), 8u);
  for (size_t i = 0; i < cal.tokens.size(); ++i) {
    EXPECT_EQ(used.count(cal.source_doc[i]), 0u) << "calibration prompt " << i << " shares a test document";
    EXPECT_EQ(cal.tokens[i].size(), i % 2 == 0 ? 4u : 16u);
    const auto doc = ds.tokenizer->encode(ds.docs.val[cal.source_doc[i]].text);
    EXPECT_TRUE(std::equal(cal.tokens[i].begin(), cal.tokens[i].end(), doc.begin()));
  }
  const std::string msg = message_of([&] { calibration_prompts(c, ds, 1000, {4}); });
  EXPECT_NE(msg.find("calibrate.prompts = 1000"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zl
