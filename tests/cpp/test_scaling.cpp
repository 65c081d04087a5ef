// Claims across model sizes (issue 15, sim/claims/scaling.h): the sizes of a
// file are found and ordered by parameters, each size is judged on its own
// runs, and a claim's trend recovers a known slope, resamples seeds whole,
// and says toward, away or flat against the claimed region.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "sim/claims/scaling.h"
#include "tests/cpp/claim_runs.h"

namespace {

using zl::ClaimsInput;
using zl::ClaimSpec;

std::vector<ClaimSpec> claim_with_region(const std::string& region) {
  return zl::parse_registry("[claim T]\nsource = test\nclaim = a claim\nmetric = q\ncomparison = value\n"
                            "treatment = variant=f\nregion = " + region + "\n",
                            "test.registry");
}

struct Shape {
  int layers, dim;
  double params;
};
const Shape kShapes[] = {{2, 64, 1e5}, {4, 128, 1e6}, {8, 256, 1e7}};

std::string shape_config(const Shape& s) {
  return "model.layers=" + std::to_string(s.layers) + " model.dim=" + std::to_string(s.dim);
}

// Runs of variant f at every shape and seed with q = value(shape index, seed),
// and a baseline beside each (params 10% below f's: the size's count is the baseline's).
ClaimsInput ladder(const std::function<double(int, int)>& value) {
  ClaimsInput in;
  for (int i = 0; i < 3; ++i)
    for (int seed = 1; seed <= 3; ++seed) {
      const std::string id = std::to_string(i) + "_" + std::to_string(seed);
      in.runs.push_back(zl::claim_run("f" + id, "variant=f " + shape_config(kShapes[i]), seed,
                                      {{"q", value(i, seed)}, {"params", 1.1 * kShapes[i].params}}));
      in.runs.push_back(zl::claim_run("b" + id, "variant=baseline " + shape_config(kShapes[i]), seed,
                                      {{"q", 0}, {"params", kShapes[i].params}}));
    }
  return in;
}

TEST(Scaling, SizesAreFoundAndOrderedByTheBaselinesParameters) {
  ClaimsInput in = ladder([](int, int) { return 0.5; });
  std::reverse(in.runs.begin(), in.runs.end());  // the order of the file does not matter
  const auto sizes = zl::model_sizes(in.runs);
  ASSERT_EQ(sizes.size(), 3u);
  EXPECT_EQ(sizes[0].label, "2x64");
  EXPECT_EQ(sizes[1].label, "4x128");
  EXPECT_EQ(sizes[2].label, "8x256");
  EXPECT_DOUBLE_EQ(sizes[0].params, 1e5);  // the baseline's, not f's 1.1e5
  EXPECT_DOUBLE_EQ(sizes[2].params, 1e7);
  EXPECT_EQ(sizes[1].runs, 6u);
  EXPECT_EQ(zl::runs_of_size(in, sizes[1]).runs.size(), 6u);
}

TEST(Scaling, EachSizeIsJudgedOnItsOwnRuns) {
  const auto specs = claim_with_region("0.4 .. 0.6");
  // q = 0.1, 0.5, 0.9 by size, with a small spread over seeds.
  const ClaimsInput in = ladder([](int i, int seed) { return 0.1 + 0.4 * i + 0.001 * seed; });
  // Unsplit, the selector finds three runs a seed: ambiguous, never averaged.
  const auto whole = zl::evaluate_claims(specs, in);
  EXPECT_NE(whole.at(0).note.find("ambiguous"), std::string::npos) << whole.at(0).note;
  const auto sized = zl::evaluate_claims_by_size(specs, in);
  ASSERT_EQ(sized.size(), 3u);
  const char* verdicts[] = {"refuted", "supported", "refuted"};
  for (int i = 0; i < 3; ++i) {
    const auto& r = sized[i].results.at(0);
    EXPECT_NEAR(r.value, 0.102 + 0.4 * i, 1e-12);
    EXPECT_EQ(r.seeds, 3);
    EXPECT_EQ(r.verdict, verdicts[i]) << sized[i].size.label;
  }
  // A file of one size is the plain table.
  const auto one = zl::evaluate_claims_by_size(specs, zl::runs_of_size(in, sized[1].size));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_NEAR(one[0].results.at(0).value, 0.502, 1e-12);
}

TEST(Scaling, TheTrendIsTheSlopePerDecadeAndResamplesSeedsWhole) {
  // q = 0.2 + 0.1 log10(params / 1e5) + a large offset per seed: every seed
  // has slope 0.1 exactly, so resampling seeds whole gives a zero-width
  // interval; resampling each size's values on their own would not.
  const double offset[] = {0, 0, 5, 10};
  const auto specs = claim_with_region("0.9 .. 1");
  const auto sized = zl::evaluate_claims_by_size(
      specs, ladder([&](int i, int seed) { return 0.2 + 0.1 * i + offset[seed]; }));
  const auto trends = zl::claim_trends(sized);
  ASSERT_EQ(trends.size(), 1u);
  const auto& t = trends[0];
  EXPECT_EQ(t.seeds, 3);
  EXPECT_EQ(t.sizes, (std::vector<std::string>{"2x64", "4x128", "8x256"}));
  EXPECT_NEAR(t.slope, 0.1, 1e-9);
  EXPECT_NEAR(t.lo, 0.1, 1e-9);
  EXPECT_NEAR(t.hi, 0.1, 1e-9);
  EXPECT_NEAR(t.t_lo, 0.1, 1e-9);
  EXPECT_NEAR(t.t_hi, 0.1, 1e-9);
  EXPECT_NEAR(t.values.front(), 0.2 + 5, 1e-9);  // mean over the seeds
  // The fitted value at 1e7 is 5.4, above the region: a rising value moves away.
  EXPECT_EQ(t.direction, "away");
  const auto above = claim_with_region("50 .. 60");  // results point into their specs: kept alive
  const auto below = zl::claim_trends(zl::evaluate_claims_by_size(
      above, ladder([&](int i, int seed) { return 0.2 + 0.1 * i + offset[seed]; })));
  EXPECT_EQ(below.at(0).direction, "toward");
}

TEST(Scaling, ASlopeWhoseIntervalHoldsZeroIsFlat) {
  // Per-seed slopes +0.2, -0.2, +0.01: the mean slope is near zero and the
  // seeds disagree on its sign.
  const double per_seed_slope[] = {0, 0.2, -0.2, 0.01};
  const auto specs = claim_with_region("0.9 .. 1");
  const auto sized = zl::evaluate_claims_by_size(
      specs, ladder([&](int i, int seed) { return 0.5 + per_seed_slope[seed] * i; }));
  const auto t = zl::claim_trends(sized).at(0);
  EXPECT_NEAR(t.slope, 0.01 / 3, 1e-9);
  EXPECT_LT(t.lo, 0);
  EXPECT_GT(t.hi, 0);
  EXPECT_LT(t.t_lo, t.lo);  // the t interval is the wider at 3 seeds
  EXPECT_EQ(t.direction, "flat");
}

TEST(Scaling, ATrendNeedsTwoSizesWithAValue) {
  ClaimsInput in = ladder([](int, int) { return 0.5; });
  std::vector<zl::ClaimRun> kept;
  for (const auto& r : in.runs)  // f only at the smallest size
    if (r.config.at("variant") != "f" || r.config.at("model.dim") == "64") kept.push_back(r);
  in.runs = kept;
  const auto specs = claim_with_region("0 .. 1");
  const auto sized = zl::evaluate_claims_by_size(specs, in);
  ASSERT_EQ(sized.size(), 3u);
  const auto t = zl::claim_trends(sized).at(0);
  EXPECT_TRUE(std::isnan(t.slope));
  EXPECT_EQ(t.direction, "");
  EXPECT_NE(t.note.find("two sizes"), std::string::npos) << t.note;
  const std::string text = zl::format_trends(zl::claim_trends(sized), 0.95);
  EXPECT_NE(text.find("No trend (a value at fewer than two sizes): T\n"), std::string::npos) << text;
}

TEST(Scaling, TowardTheRegionFromBelowAboveAndInside) {
  EXPECT_EQ(zl::toward_region(0.1, 0.5, 0.6), +1);
  EXPECT_EQ(zl::toward_region(0.9, 0.5, 0.6), -1);
  EXPECT_EQ(zl::toward_region(0.52, 0.5, 0.6), +1);  // inside: toward the middle
  EXPECT_EQ(zl::toward_region(0.58, 0.5, 0.6), -1);
  EXPECT_EQ(zl::toward_region(0.95, 0.92, INFINITY), +1);  // "> 0.92": deeper in is higher
  EXPECT_EQ(zl::toward_region(0.3, -INFINITY, 0.45), -1);
  EXPECT_EQ(zl::toward_region(0.3, -INFINITY, INFINITY), 0);
}

TEST(Scaling, TablesCarryTheSizeOfEachRow) {
  const auto specs = claim_with_region("0 .. 1");
  const auto sized = zl::evaluate_claims_by_size(specs, ladder([](int i, int seed) { return 0.1 * i + 0.01 * seed; }));
  const zl::Table claims = zl::sized_claims_table(sized);
  ASSERT_EQ(claims.rows(), 3u);
  const auto& size = std::get<std::vector<std::string>>(*claims.find("size"));
  const auto& params = std::get<std::vector<double>>(*claims.find("params"));
  const auto& value = std::get<std::vector<double>>(*claims.find("value"));
  EXPECT_EQ(size, (std::vector<std::string>{"2x64", "4x128", "8x256"}));
  EXPECT_DOUBLE_EQ(params[1], 1e6);
  EXPECT_NEAR(value[2], 0.22, 1e-12);
  const zl::Table seeds = zl::sized_claim_seeds_table(sized);
  EXPECT_EQ(seeds.rows(), 9u);
  EXPECT_EQ(std::get<std::vector<std::string>>(*seeds.find("size"))[8], "8x256");
  const zl::Table trend = zl::claim_trends_table(zl::claim_trends(sized));
  ASSERT_EQ(trend.rows(), 1u);
  EXPECT_NEAR(std::get<std::vector<double>>(*trend.find("slope"))[0], 0.1, 1e-9);
  EXPECT_EQ(std::get<std::vector<std::string>>(*trend.find("sizes"))[0], "2x64,4x128,8x256");
  const std::string text = zl::format_trends(zl::claim_trends(sized), 0.95);
  EXPECT_NE(text.find("2x64: 0.02"), std::string::npos) << text;
}

}  // namespace
