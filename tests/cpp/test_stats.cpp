// Intervals at small n (issue 17): the t interval against hand values and its
// coverage at n = 3, BCa against the percentile bootstrap on skewed values,
// each method's p-values dual to its interval, Holm on a known example, the
// seeds-needed estimate against the normal closed form and a simulation, and
// the claims table's use of all of them (method choice, Holm verdicts, the
// A/A row, the plan).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "sim/claims/claims.h"
#include "sim/claims/claims_calibration.h"
#include "sim/claims/stats.h"

namespace {

using zl::CiMethod;
using zl::MeanEstimate;

TEST(Stats, TIntervalMatchesHandValues) {
  // 1, 2, 3: mean 2, sd 1, t(0.975, 2) = 4.302653: 2 ± 2.484138.
  MeanEstimate e({1, 2, 3});
  auto ci = e.interval(CiMethod::t, 0.95);
  EXPECT_DOUBLE_EQ(ci.mean, 2);
  EXPECT_NEAR(ci.lo, 2 - 4.302653 / std::sqrt(3.0), 1e-5);
  EXPECT_NEAR(ci.hi, 2 + 4.302653 / std::sqrt(3.0), 1e-5);
  EXPECT_NEAR(zl::t_quantile(0.975, 2), 4.302653, 1e-6);
  // Non-finite values are left out; one value gives no interval.
  MeanEstimate one({5, NAN});
  EXPECT_EQ(one.n(), 1);
  EXPECT_TRUE(std::isnan(one.interval(CiMethod::t, 0.95).lo));
}

TEST(Stats, TCoversNominallyAtThreeSeedsAndThePercentileBootstrapDoesNot) {
  auto cells = zl::simulate_coverage({}, 3, 0.95, 4000, 7);
  double t = NAN, boot = NAN;
  for (const auto& c : cells) {
    if (c.method == CiMethod::t) t = c.coverage;
    if (c.method == CiMethod::percentile) boot = c.coverage;
    EXPECT_NE(c.method, CiMethod::bca);  // BCa needs 5 values
  }
  EXPECT_NEAR(t, 0.95, 0.02);
  EXPECT_LT(boot, 0.85);  // at most the range of 3 values
  auto five = zl::simulate_coverage({}, 5, 0.95, 1000, 7);
  EXPECT_EQ(five.size(), 3u);
}

TEST(Stats, BcaLeansTowardTheLongTailOfSkewedValues) {
  // Right-skewed: the mean's sampling distribution has a long right tail; BCa
  // moves both bounds up relative to the percentile interval.
  std::vector<double> v = {0.1, 0.15, 0.2, 0.22, 0.3, 0.35, 0.5, 0.8, 1.5, 4.0};
  MeanEstimate e(v);
  ASSERT_TRUE(e.has(CiMethod::bca));
  auto pct = e.interval(CiMethod::percentile, 0.95), bca = e.interval(CiMethod::bca, 0.95);
  EXPECT_GT(bca.hi, pct.hi);
  EXPECT_GT(bca.lo, pct.lo);
  // Symmetric values: BCa and percentile nearly agree.
  MeanEstimate s({-2, -1, -0.5, 0, 0.5, 1, 2});
  auto ps = s.interval(CiMethod::percentile, 0.95), bs = s.interval(CiMethod::bca, 0.95);
  EXPECT_NEAR(ps.lo, bs.lo, 0.1);
  EXPECT_NEAR(ps.hi, bs.hi, 0.1);
  EXPECT_FALSE(MeanEstimate({1, 2, 3, 4}).has(CiMethod::bca));
}

TEST(Stats, PValuesAreDualToTheIntervals) {
  std::vector<double> v = {0.1, 0.15, 0.2, 0.22, 0.3, 0.35, 0.5, 0.8, 1.5, 4.0};
  MeanEstimate e(v);
  for (CiMethod m : {CiMethod::t, CiMethod::percentile, CiMethod::bca}) {
    auto ci = e.interval(m, 0.95);
    const double tol = m == CiMethod::t ? 1e-9 : 2e-3;  // bootstrap: order statistics of 10000 means
    EXPECT_NEAR(e.p_above(m, ci.lo), 0.025, tol) << zl::method_name(m);
    EXPECT_NEAR(e.p_below(m, ci.hi), 0.025, tol) << zl::method_name(m);
    EXPECT_LT(e.p_above(m, ci.lo - 0.05), 0.025) << zl::method_name(m);
    EXPECT_GT(e.p_above(m, ci.lo + 0.05), 0.025) << zl::method_name(m);
  }
  // Without spread the t test is a step at the mean.
  MeanEstimate flat({0.1, 0.1, 0.1});
  EXPECT_EQ(flat.p_above(CiMethod::t, 0.05), 0);
  EXPECT_EQ(flat.p_above(CiMethod::t, 0.15), 1);
}

TEST(Stats, HolmOnAKnownExample) {
  // Ascending 0.005, 0.01, 0.03, 0.04 (m = 4): 4·0.005 = 0.02, 3·0.01 = 0.03,
  // 2·0.03 = 0.06, 1·0.04 = 0.04 -> running max 0.06. NaN is not in the family.
  auto a = zl::holm_adjust({0.01, 0.04, NAN, 0.03, 0.005});
  EXPECT_NEAR(a[0], 0.03, 1e-12);
  EXPECT_NEAR(a[1], 0.06, 1e-12);
  EXPECT_TRUE(std::isnan(a[2]));
  EXPECT_NEAR(a[3], 0.06, 1e-12);
  EXPECT_NEAR(a[4], 0.02, 1e-12);
  EXPECT_EQ(zl::holm_adjust({0.9, 0.8})[0], 1.0);  // capped at 1
}

TEST(Stats, SeedsNeededMatchesTheNormalClosedFormAndASimulation) {
  // Large N: the t iteration approaches ((z(.975) + z(.8))·sd/delta)².
  const double closed = std::pow((1.959964 + 0.841621) / 0.2, 2);  // 196.2
  const int64_t n = zl::seeds_needed(0.2, 1.0);
  EXPECT_GE(n, static_cast<int64_t>(std::ceil(closed)));
  EXPECT_LE(n, static_cast<int64_t>(std::ceil(closed)) + 3);
  // Small N: the t quantiles add a few seeds over the normal form (7.85).
  const int64_t small = zl::seeds_needed(1.0, 1.0);
  EXPECT_GE(small, 8);
  EXPECT_LE(small, 12);
  // At that N, normal values with mean 1 and sd 1 give a t interval that
  // excludes 0 in about 80% of studies.
  std::mt19937 rng(3);
  std::normal_distribution<double> normal(1.0, 1.0);
  int excluded = 0;
  const int studies = 4000;
  for (int s = 0; s < studies; ++s) {
    std::vector<double> v(small);
    for (double& x : v) x = normal(rng);
    excluded += MeanEstimate(v, 2).interval(CiMethod::t, 0.95).lo > 0;
  }
  EXPECT_NEAR(static_cast<double>(excluded) / studies, 0.8, 0.04);
  EXPECT_EQ(zl::seeds_needed(0, 1.0, 0.95, 0.8, 500), 500);  // no effect: never
}

// ---- the claims table on hand-made per-seed values ---------------------------

zl::ClaimRun run(const std::string& id, const std::string& variant, const std::string& decode_seed, int64_t seed,
                 double metric) {
  zl::ClaimRun r;
  r.run_id = id;
  r.seed = seed;
  r.status = "complete";
  r.config = {{"variant", variant}, {"decode.seed", decode_seed}, {"seed", std::to_string(seed)}};
  r.metrics = {{"m", metric}};
  return r;
}

std::vector<zl::ClaimSpec> aa_spec(double tolerance) {
  return zl::parse_registry("[claim AA]\nsource = A/A check\nclaim = no difference\nmetric = m\n"
                            "comparison = difference\ntreatment = variant=baseline decode.seed=1\n"
                            "control = variant=baseline decode.seed=0\nclaimed = 0\ntolerance = " +
                                std::to_string(tolerance) + "\n",
                            "aa.registry");
}

zl::ClaimsInput aa_input(const std::vector<double>& control, const std::vector<double>& treatment) {
  zl::ClaimsInput in;
  for (size_t s = 0; s < control.size(); ++s) {
    const int64_t seed = static_cast<int64_t>(s) + 1;
    in.runs.push_back(run("c" + std::to_string(seed), "baseline", "0", seed, control[s]));
    in.runs.push_back(run("t" + std::to_string(seed), "baseline", "1", seed, treatment[s]));
  }
  return in;
}

TEST(ClaimsStats, AARowIsNeverRefutedUnderNoiseAndIsRefutedUnderAShift) {
  // Identical arms with sampling noise: supported or inconclusive.
  auto specs = aa_spec(0.1);
  auto same = zl::evaluate_claims(specs, aa_input({0.80, 0.84, 0.78}, {0.83, 0.80, 0.81}));
  EXPECT_NE(same[0].verdict, "refuted");
  EXPECT_EQ(same[0].method, CiMethod::t);  // 3 seeds: the calibrated choice
  EXPECT_EQ(same[0].per_seed.size(), 3u);
  // An arm that is not identical (+0.3): refuted, so the check can fail.
  auto shifted = zl::evaluate_claims(specs, aa_input({0.50, 0.52, 0.48}, {0.80, 0.83, 0.79}));
  EXPECT_EQ(shifted[0].verdict, "refuted");
}

TEST(ClaimsStats, TheTIntervalDecidesThreeSeedsAndTheBootstrapIsKeptBeside) {
  // 0.3, 0.4, 0.5 against [0.17, 0.57]: the percentile bootstrap lies inside
  // (supported), the t interval [0.15, 0.65] does not (inconclusive), and the
  // t interval is what three seeds can honestly say.
  zl::ClaimsInput in;
  for (int s = 1; s <= 3; ++s) in.runs.push_back(run("t" + std::to_string(s), "baseline", "0", s, 0.2 + 0.1 * s));
  auto spec = zl::parse_registry("[claim X]\nsource = s\nclaim = c\nmetric = m\ncomparison = value\n"
                                 "treatment = variant=baseline\nclaimed = 0.37\ntolerance = 0.2\n",
                                 "x.registry");
  auto r = zl::evaluate_claims(spec, in)[0];
  EXPECT_EQ(r.method, CiMethod::t);
  EXPECT_EQ(r.verdict, "inconclusive");
  EXPECT_NEAR(r.lo, r.t.lo, 1e-12);
  EXPECT_GE(r.percentile.lo, 0.3 - 1e-12);
  EXPECT_LE(r.percentile.hi, 0.5 + 1e-12);
  zl::ClaimsOptions forced;
  forced.method = "percentile";
  EXPECT_EQ(zl::evaluate_claims(spec, in, forced)[0].verdict, "supported");
  // The power estimate: more seeds than we have, and a plan that runs them.
  EXPECT_GT(r.seeds_needed, 3);
  const std::string plan = zl::format_plan({r}, "ablations/x.ini", 0.8);
  EXPECT_NE(plan.find("zerolayer ablate ablations/x.ini --seed 1,2,3,4"), std::string::npos) << plan;
  EXPECT_NE(plan.find("power estimate"), std::string::npos);
  EXPECT_NE(plan.find("--shard i/N"), std::string::npos);
}

TEST(ClaimsStats, HolmKeepsClearRowsAndTurnsAMarginalOneInconclusive) {
  // Five rows of 5 seeds, all clearly inside [0, 10] with the t interval.
  std::string reg;
  for (int k = 0; k < 5; ++k)
    reg += "[claim R" + std::to_string(k) + "]\nsource = s\nclaim = c\nmetric = m" + std::to_string(k) +
           "\ncomparison = value\ntreatment = variant=baseline\nregion = 0 .. 10\n";
  auto specs = zl::parse_registry(reg, "h.registry");
  zl::ClaimsInput in;
  for (int s = 1; s <= 5; ++s) {
    zl::ClaimRun r = run("r" + std::to_string(s), "baseline", "0", s, 0);
    r.metrics.clear();
    for (int k = 0; k < 5; ++k) r.metrics["m" + std::to_string(k)] = 5 + 0.1 * s;
    in.runs.push_back(r);
  }
  zl::ClaimsOptions opt;
  opt.method = "t";
  auto res = zl::evaluate_claims(specs, in, opt);
  for (const auto& r : res) {
    EXPECT_EQ(r.verdict, "supported");
    EXPECT_EQ(r.verdict_holm, "supported");
    EXPECT_LT(r.p_support, 1e-4);
  }
  // Five rows each supported alone at p = 0.02 (< 0.025): Holm multiplies the
  // smallest by 5 (0.1 > 0.025), so none is kept.
  std::vector<zl::ClaimResult> edge = res;
  for (auto& r : edge) r.p_support = 0.02, r.p_refute = 0.9;
  zl::apply_holm(edge, 0.95);
  for (const auto& r : edge) EXPECT_EQ(r.verdict_holm, "inconclusive");
  edge[4].p_support = 0.001;  // one strong row: 5·0.001 = 0.005 < 0.025, the rest stay undecided
  zl::apply_holm(edge, 0.95);
  EXPECT_EQ(edge[4].verdict_holm, "supported");
  EXPECT_EQ(edge[0].verdict_holm, "inconclusive");
  // Rows without a verdict from data keep theirs and are not in the family.
  edge[0].verdict = "missing";
  edge[0].seeds = 0;
  zl::apply_holm(edge, 0.95);
  EXPECT_EQ(edge[0].verdict_holm, "missing");
}

TEST(ClaimsStats, CalibrationPicksTheMethodNearestNominalAndCountsFalseVerdicts) {
  zl::ClaimsInput in;
  const double values[] = {0.31, 0.45, 0.38};
  for (int s = 1; s <= 3; ++s) in.runs.push_back(run("t" + std::to_string(s), "baseline", "0", s, values[s - 1]));
  auto spec = zl::parse_registry("[claim X]\nsource = s\nclaim = c\nmetric = m\ncomparison = value\n"
                                 "treatment = variant=baseline\nregion = 0.5 .. 1\n",
                                 "x.registry");
  auto rows = zl::evaluate_claims(spec, in);
  auto cal = zl::calibrate(rows, {3, 5}, 0.95, 800, true);
  EXPECT_EQ(cal.best(3), CiMethod::t);
  EXPECT_EQ(cal.shape_rows, 1);
  EXPECT_EQ(cal.shape_values, 3u);
  for (const auto& c : cal.cells) {
    EXPECT_GT(c.coverage, 0.5);
    EXPECT_LE(c.coverage, 1.0);
    EXPECT_EQ(c.rows, 1);
    EXPECT_GE(c.false_verdicts, 0);
    if (c.n == 3 && c.method == CiMethod::percentile) EXPECT_LT(c.coverage, 0.9);
  }
  const std::string text = zl::format_calibration(cal);
  EXPECT_NE(text.find("<- verdicts at this n"), std::string::npos);
  EXPECT_NE(text.find("bca"), std::string::npos);  // calibrated at n = 5
}

}  // namespace
