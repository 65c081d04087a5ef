// Sensitivity (sim/claims/sensitivity.h): a claim that compares a calibrated
// variant is evaluated at each setting of its target in the file, and the
// text says whether its verdict holds along the curve or where it moves.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/claims/sensitivity.h"
#include "tests/cpp/claim_runs.h"

namespace zl {
namespace {

// sfvl at three trigger-rate targets, fused beside it; fused's gain over sfvl
// grows with sfvl's rate: +10%, +30%, +60% (per seed ±1%).
ClaimsInput curve_input() {
  ClaimsInput in;
  const double gain[] = {0.10, 0.30, 0.60};
  const double target[] = {0.10, 0.18, 0.30};
  for (int s = 1; s <= 3; ++s) {
    const std::string n = std::to_string(s);
    in.runs.push_back(claim_run("f" + n, "variant=fused calibrate.sfvl.target=0.18", s, {{"tok_s", 100}}));
    for (int k = 0; k < 3; ++k) {
      char t[16];
      std::snprintf(t, sizeof t, "%g", target[k]);
      in.runs.push_back(claim_run("v" + n + "_" + std::to_string(k),
                                  std::string("variant=sfvl calibrate.sfvl.metric=rate calibrate.sfvl.target=") + t, s,
                                  {{"tok_s", 100 / (1 + gain[k] + 0.01 * (s - 2))}, {"rate", target[k] + 0.01}}));
    }
    // A baseline at no target is not a point of any curve.
    in.runs.push_back(claim_run("b" + n, "variant=baseline calibrate.sfvl.target=0", s, {{"tok_s", 200}}));
  }
  return in;
}

std::vector<ClaimSpec> registry() {
  return parse_registry(
      "[claim G]\nsource = s\nclaim = fused serves 25-44% more\nmetric = tok_s\ncomparison = relative\n"
      "treatment = variant=fused\ncontrol = variant=sfvl\nregion = 0.25 .. 0.44\nknown.plain = variant=baseline\n"
      "[claim B]\nsource = s\nclaim = the baseline is fast\nmetric = tok_s\ncomparison = value\n"
      "treatment = variant=baseline\nclaimed = 200\ntolerance = 1\n",
      "t.registry");
}

TEST(Sensitivity, AClaimComparingACalibratedVariantIsMeasuredAtEachSetting) {
  const auto specs = registry();
  const ClaimsInput in = curve_input();
  const Sensitivity s = claim_sensitivity(specs, in);
  // G at 0.10, 0.18, 0.30; B names no calibrated variant; G@plain is a known row.
  ASSERT_EQ(s.rows.size(), 3u);
  const double want[] = {0.10, 0.30, 0.60};
  const char* verdict[] = {"refuted", "supported", "refuted"};
  for (size_t k = 0; k < 3; ++k) {
    const SensitivityRow& r = s.rows[k];
    EXPECT_EQ(r.claim_id, "G");
    EXPECT_EQ(r.key, "calibrate.sfvl.target");
    EXPECT_EQ(r.result.seeds, 3) << r.result.note;
    EXPECT_NEAR(r.result.value, want[k], 0.002) << k;
    EXPECT_EQ(r.result.verdict, verdict[k]) << k;
    EXPECT_NEAR(r.reached, r.setting + 0.01, 1e-12);  // the metric calibrate.sfvl.metric names
    EXPECT_EQ(r.result.spec->control, "variant=sfvl calibrate.sfvl.target=" + std::string(k == 0 ? "0.1" : k == 1 ? "0.18" : "0.3"));
    EXPECT_EQ(r.result.spec->treatment, "variant=fused");  // fused has no target of its own
  }
  EXPECT_DOUBLE_EQ(s.rows[0].setting, 0.10);
  EXPECT_DOUBLE_EQ(s.rows[2].setting, 0.30);
  const std::string text = format_sensitivity(s);
  EXPECT_NE(text.find("moves: refuted at 0.1 -> supported at 0.18 -> refuted at 0.3"), std::string::npos) << text;
  Table t = sensitivity_table(s);
  EXPECT_EQ(t.rows(), 3u);
  EXPECT_EQ(std::get<std::vector<std::string>>(*t.find("verdict")),
            (std::vector<std::string>{"refuted", "supported", "refuted"}));
  // Evaluated plainly, the claim is ambiguous: three sfvl runs per seed.
  auto plain = evaluate_claims(specs, in);
  EXPECT_NE(plain[0].note.find("ambiguous"), std::string::npos) << plain[0].note;
}

TEST(Sensitivity, AVerdictThatHoldsAlongTheCurveSaysSo) {
  auto specs = parse_registry(
      "[claim H]\nsource = s\nclaim = fused is faster\nmetric = tok_s\ncomparison = relative\n"
      "treatment = variant=fused\ncontrol = variant=sfvl\nregion = 0 .. inf\n",
      "t.registry");
  const Sensitivity s = claim_sensitivity(specs, curve_input());
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_NE(format_sensitivity(s).find("holds: supported at every setting"), std::string::npos);
  // A file with one setting has no curve.
  ClaimsInput one;
  for (const auto& r : curve_input().runs)
    if (r.config.at("calibrate.sfvl.target") != "0.1" && r.config.at("calibrate.sfvl.target") != "0.3")
      one.runs.push_back(r);
  EXPECT_TRUE(claim_sensitivity(specs, one).rows.empty());
  EXPECT_NE(format_sensitivity(claim_sensitivity(specs, one)).find("no claim depends"), std::string::npos);
}

}  // namespace
}  // namespace zl
