// sim/claims/replication.h: two results of one study, row by row.
#include <gtest/gtest.h>

#include <string>

#include "sim/claims/claims.h"
#include "sim/claims/replication.h"
#include "sim/claims/scaling.h"
#include "tests/cpp/claim_runs.h"
#include "tests/cpp/temp_dir.h"

namespace zl {
namespace {

// Three relative claims of oet's speed against sfcl's, claimed 0.4 +- 0.1.
std::vector<ClaimSpec> three_claims() {
  std::string text;
  for (const char* id : {"same", "edge", "apart"})
    text += std::string("[claim ") + id + "]\nsource = test\nclaim = a claim\nmetric = m_" + id +
            "\ncomparison = relative\ntreatment = variant=oet\ncontrol = variant=sfcl\nclaimed = 0.4\n"
            "tolerance = 0.1\n\n";
  return parse_registry(text, "test.registry");
}

// Per-seed relative changes: value + spread * (seed - 2) for seeds 1-3
// (edge_spread for the second claim).
ClaimsInput input(double same, double edge, double apart, double edge_spread = 0.01) {
  ClaimsInput in;
  for (int s = 1; s <= 3; ++s) {
    const double d = 0.01 * (s - 2), e = edge_spread * (s - 2);
    in.runs.push_back(claim_run("c" + std::to_string(s), "variant=sfcl", s, {{"m_same", 1}, {"m_edge", 1}, {"m_apart", 1}}));
    in.runs.push_back(claim_run("t" + std::to_string(s), "variant=oet", s,
                                {{"m_same", 1 + same + d}, {"m_edge", 1 + edge + e}, {"m_apart", 1 + apart + d}}));
  }
  return in;
}

TEST(Replication, EachRowSaysWhetherTheTwoRunsAgree) {
  const auto specs = three_claims();
  ClaimsOptions co;
  co.method = "t";
  // same: inside the region in both. edge: supported in A; in B its wide
  // interval holds the region's edge 0.5 (inconclusive). apart: supported in
  // A, refuted in B with both intervals clear of the region's edges.
  const auto a = evaluate_claims_by_size(specs, input(0.4, 0.4, 0.4), co);
  const auto b = evaluate_claims_by_size(specs, input(0.42, 0.5, 0.9, 0.05), co);
  const auto rows = replicate(a, b);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].id, "same");
  EXPECT_EQ(rows[0].reading, "agree");
  EXPECT_TRUE(rows[0].overlap);
  EXPECT_EQ(rows[1].reading, "near the boundary") << decision(*rows[1].a) << " / " << decision(*rows[1].b);
  EXPECT_FALSE(rows[1].agree);
  EXPECT_EQ(rows[2].reading, "differ");
  EXPECT_FALSE(rows[2].overlap);
  EXPECT_EQ(decision(*rows[2].b), "refuted");
  const std::string text = format_replication(rows, "a.h5", "b.h5");
  EXPECT_NE(text.find("3 rows: 1 agree, 1 near the boundary, 1 differ"), std::string::npos) << text;
}

TEST(Replication, ARowInOneFileOnlyIsNamed) {
  const auto specs = three_claims();
  auto one_claim = specs;
  one_claim.resize(1);
  const auto a = evaluate_claims_by_size(specs, input(0.4, 0.4, 0.4));
  const auto b = evaluate_claims_by_size(one_claim, input(0.4, 0.4, 0.4));
  const auto rows = replicate(a, b);  // rows point into a and b
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].reading, "one file only");
  EXPECT_EQ(rows[1].b, nullptr);
  EXPECT_NE(format_replication(rows, "a", "b").find("2 in one file only"), std::string::npos);
}

// Two small results files of the claims study that differ in one verdict,
// read as `zerolayer claims A --replicate B` reads them.
TEST(Replication, TwoResultsFilesThatDifferInOneVerdict) {
  TempDir dir("zl_replicate");
  // S000-throughput claims +37%: oet at 137 + seed tokens/s against sfcl's 100 + seed, then at sfcl's speed.
  const std::string a = write_oet_and_sfcl_study(dir / "a", 137.0), b = write_oet_and_sfcl_study(dir / "b", 100.0);
  const auto specs = load_registry(std::string(ZL_SOURCE_DIR) + "/ablations/claims.registry");
  const auto judged_a = evaluate_claims_by_size(specs, load_claims_input(a));
  const auto judged_b = evaluate_claims_by_size(specs, load_claims_input(b));
  const auto rows = replicate(judged_a, judged_b);
  int moved = 0;
  for (const auto& r : rows) {
    ASSERT_TRUE(r.a && r.b) << r.id;
    if (r.agree) continue;
    ++moved;
    EXPECT_EQ(r.id, "S000-throughput");
    EXPECT_EQ(r.reading, "differ");
    EXPECT_EQ(r.a->verdict, "supported");
    EXPECT_EQ(r.b->verdict, "refuted");
  }
  EXPECT_EQ(moved, 1);
}

}  // namespace
}  // namespace zl
