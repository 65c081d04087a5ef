// The serving figures under vLLM's definitions (issue 14): numpy's
// percentiles, a hand-computed three-request example for TTFT, TPOT, ITL,
// E2EL, the throughputs and goodput, each SLO on its own, and a benchmark in
// which nothing finished.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "sim/metrics.h"
#include "sim/serving/serving_metrics.h"

namespace {

using zl::RequestRecord;
using zl::Slo;

constexpr int64_t kMs = 1000000;  // ns

RequestRecord request(int64_t arrival_ms, int64_t prompt_len, const std::vector<int64_t>& token_ms,
                      int64_t preemptions = 0) {
  RequestRecord r;
  r.arrival_ns = arrival_ms * kMs;
  r.prompt_len = prompt_len;
  for (int64_t t : token_ms) r.token_ns.push_back(t * kMs);
  r.preemptions = preemptions;
  return r;
}

// A: arrives at 0, 4 tokens at 100, 120, 140, 160 ms: TTFT 100, E2EL 160, TPOT 60 / 3 = 20, ITL 20, 20, 20.
// B: arrives at 50, 2 tokens at 250, 300: TTFT 200, E2EL 250, TPOT 50, ITL 50.
// C: arrives at 100, 1 token at 400: TTFT 300, E2EL 300, no TPOT (one token), no ITL.
// D: arrives at 200 and never gets a token: in no figure but preemptions.
// The last token is at 400 ms: duration 0.4 s.
std::vector<RequestRecord> three_requests() {
  return {request(0, 10, {100, 120, 140, 160}), request(50, 20, {250, 300}), request(100, 5, {400}, 2),
          request(200, 7, {}, 1)};
}

Slo slo(double ttft, double tpot, double e2el) {
  Slo s;
  s.ttft_ms = ttft;
  s.tpot_ms = tpot;
  s.e2el_ms = e2el;
  return s;
}

TEST(ServingMetrics, PercentileMatchesNumpy) {
  EXPECT_DOUBLE_EQ(zl::percentile({1, 2, 3, 4, 10}, 90), 7.6);  // rank 3.6: 4 + 0.6 · 6
  EXPECT_DOUBLE_EQ(zl::percentile({10, 1, 4, 3, 2}, 90), 7.6);  // order does not matter
  EXPECT_DOUBLE_EQ(zl::percentile({5}, 99), 5);
  EXPECT_DOUBLE_EQ(zl::percentile({3, 1, 2, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(zl::percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99), 9.91);  // rank 8.91
  EXPECT_DOUBLE_EQ(zl::percentile({7, -1, 3}, 0), -1);
  EXPECT_DOUBLE_EQ(zl::percentile({7, -1, 3}, 100), 7);
  EXPECT_TRUE(std::isnan(zl::percentile({}, 50)));
  EXPECT_THROW(zl::percentile({1, 2}, 101), std::invalid_argument);
  EXPECT_DOUBLE_EQ(zl::percentile_of_sorted({1, 2, 3, 4, 10}, 90), 7.6);
  EXPECT_THROW(zl::percentile_of_sorted({1, 2}, -1), std::invalid_argument);
}

TEST(ServingMetrics, SummaryUsesThePopulationStd) {
  // numpy: mean 2.5, std (ddof 0) sqrt(1.25), median 2.5, p90 rank 2.7 → 3.7, p99 rank 2.97 → 3.97.
  auto s = zl::summarise({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p90, 3.7);
  EXPECT_DOUBLE_EQ(s.p99, 3.97);
  auto none = zl::summarise({});
  for (double v : {none.mean, none.median, none.std, none.p90, none.p99}) EXPECT_TRUE(std::isnan(v));
}

TEST(ServingMetrics, HandBuiltRequestsGiveVllmFigures) {
  auto m = zl::serving_metrics(three_requests(), Slo{});
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.total_input, 35);  // D's 7 prompt tokens are not counted: it never completed
  EXPECT_EQ(m.total_output, 7);
  EXPECT_EQ(m.preemptions, 3);
  EXPECT_DOUBLE_EQ(m.duration_s, 0.4);
  EXPECT_DOUBLE_EQ(m.request_throughput, 7.5);  // 3 / 0.4
  EXPECT_DOUBLE_EQ(m.output_throughput, 17.5);  // 7 / 0.4
  // TTFT 100, 200, 300: std sqrt(20000 / 3); p90 rank 1.8 → 280; p99 rank 1.98 → 298.
  EXPECT_DOUBLE_EQ(m.ttft_ms.mean, 200);
  EXPECT_DOUBLE_EQ(m.ttft_ms.median, 200);
  EXPECT_NEAR(m.ttft_ms.std, std::sqrt(20000.0 / 3), 1e-9);
  EXPECT_DOUBLE_EQ(m.ttft_ms.p90, 280);
  EXPECT_DOUBLE_EQ(m.ttft_ms.p99, 298);
  // TPOT 20, 50 (C has one token and no TPOT): mean 35, std 15, p90 47, p99 49.7.
  EXPECT_DOUBLE_EQ(m.tpot_ms.mean, 35);
  EXPECT_DOUBLE_EQ(m.tpot_ms.std, 15);
  EXPECT_DOUBLE_EQ(m.tpot_ms.p90, 47);
  EXPECT_DOUBLE_EQ(m.tpot_ms.p99, 49.7);
  // ITL pooled 20, 20, 20, 50: mean 27.5, median 20, std sqrt(168.75), p90 rank 2.7 → 41, p99 → 49.1.
  EXPECT_DOUBLE_EQ(m.itl_ms.mean, 27.5);
  EXPECT_DOUBLE_EQ(m.itl_ms.median, 20);
  EXPECT_NEAR(m.itl_ms.std, std::sqrt(168.75), 1e-9);
  EXPECT_DOUBLE_EQ(m.itl_ms.p90, 41);
  EXPECT_DOUBLE_EQ(m.itl_ms.p99, 49.1);
  // E2EL 160, 250, 300: mean 710 / 3, median 250, p90 rank 1.8 → 290.
  EXPECT_DOUBLE_EQ(m.e2el_ms.mean, 710.0 / 3);
  EXPECT_DOUBLE_EQ(m.e2el_ms.median, 250);
  EXPECT_DOUBLE_EQ(m.e2el_ms.p90, 290);
  // No SLO set: every completed request is good.
  EXPECT_DOUBLE_EQ(m.goodput, 7.5);
  EXPECT_DOUBLE_EQ(m.slo_attainment, 1);
  auto named = m.named();
  EXPECT_DOUBLE_EQ(named.at("total_token_throughput"), 105);  // (35 + 7) / 0.4
  EXPECT_DOUBLE_EQ(named.at("p99_itl_ms"), 49.1);
  EXPECT_DOUBLE_EQ(named.at("median_e2el_ms"), 250);
  EXPECT_DOUBLE_EQ(named.at("preemptions"), 3);
}

TEST(ServingMetrics, EachSloAloneCountsTheRequestsWithinIt) {
  const auto reqs = three_requests();
  auto check = [&](const Slo& s, double good) {
    auto m = zl::serving_metrics(reqs, s);
    EXPECT_DOUBLE_EQ(m.goodput, good / 0.4);
    EXPECT_DOUBLE_EQ(m.slo_attainment, good / 3);
    // The search over rates reads these alone.
    EXPECT_EQ(zl::meeting_slo(reqs, s), good);
    EXPECT_DOUBLE_EQ(zl::slo_attainment(reqs, s), m.slo_attainment);
  };
  check(slo(250, 0, 0), 2);  // TTFT 100, 200 within; 300 not
  check(slo(99, 0, 0), 0);
  check(slo(0, 30, 0), 2);   // TPOT 20 and C's one token (TPOT 0) within; 50 not
  check(slo(0, 0, 250), 2);  // E2EL 160 and exactly 250 within; 300 not
  check(slo(250, 30, 0), 1);  // only A meets both: C fails TTFT, B fails TPOT
  EXPECT_FALSE(Slo{}.met_by(reqs[3]));  // no token: never good, even with no SLO
  EXPECT_TRUE(Slo{}.met_by(reqs[2]));
}

TEST(ServingMetrics, NothingCompletedGivesZerosAndNans) {
  for (const auto& reqs : {std::vector<RequestRecord>{}, std::vector<RequestRecord>{request(0, 5, {}, 4)}}) {
    auto m = zl::serving_metrics(reqs, slo(100, 0, 0));
    EXPECT_EQ(m.completed, 0);
    EXPECT_EQ(m.duration_s, 0);
    EXPECT_EQ(m.request_throughput, 0);
    EXPECT_EQ(m.output_throughput, 0);
    EXPECT_EQ(m.goodput, 0);
    EXPECT_TRUE(std::isnan(m.slo_attainment));
    EXPECT_TRUE(std::isnan(zl::slo_attainment(reqs, slo(100, 0, 0))));
    EXPECT_TRUE(std::isnan(m.ttft_ms.mean));
    EXPECT_TRUE(std::isnan(m.itl_ms.p99));
    EXPECT_EQ(m.named().at("total_token_throughput"), 0);
    EXPECT_EQ(m.preemptions, reqs.empty() ? 0 : 4);
  }
}

TEST(ServingMetrics, NamedHasExactlyTheVllmKeys) {
  std::set<std::string> expected = {"request_throughput", "output_throughput", "total_token_throughput",
                                    "goodput",            "slo_attainment",    "completed",
                                    "total_input_tokens", "total_output_tokens", "duration_s",
                                    "preemptions"};
  for (const char* figure : {"ttft", "tpot", "itl", "e2el"}) {
    for (const char* stat : {"mean", "median", "std", "p90", "p99"}) {
      expected.insert(std::string(stat) + "_" + figure + "_ms");
    }
  }
  std::set<std::string> got;
  for (const auto& [key, value] : zl::serving_metrics(three_requests(), Slo{}).named()) got.insert(key);
  EXPECT_EQ(got, expected);
}

}  // namespace
