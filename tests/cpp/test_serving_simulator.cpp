// The serving loop and its simulator (issue 14), on cost models whose
// answers are known, so nothing here depends on this machine's speed:
// - replay: recorded step durations and drops give back the recorded
//   timeline to the nanosecond, preemptions and idle gaps included (the
//   claim that lets the real server's steps be replayed through the
//   simulator's bookkeeping);
// - queueing: constant step costs reproduce M/D/1's mean wait
//   (Pollaczek–Khinchine), deterministic arrivals, sequential service and
//   the saturated throughput max_num_seqs / (output_len · c);
// - capacity and the highest rate meeting an SLO move the right way;
// - sfvl's re-sampling model takes back about `rate` of the tokens, within
//   its retry budget, never more than was produced, and the rates read
//   back from a served run are those it was drawn at;
// - calibration: the team groups follow DecodeStep::run_rows's cut, and a
//   fit recovers known coefficients through noise and outliers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim/serving/calibration.h"
#include "sim/serving/serve_loop.h"
#include "sim/serving/simulator.h"
#include "sim/serving/workload.h"
#include "tests/cpp/scheduler_options.h"

namespace {

using zl::ResampleModel;
using zl::ServeRequest;
using zl::ServeResult;
using zl::StepShape;

constexpr int64_t kMs = 1000000;  // ns

// A cost model given as a function of the shape.
class FnCost : public zl::StepCostModel {
 public:
  explicit FnCost(std::function<int64_t(const StepShape&)> f) : f_(std::move(f)) {}
  int64_t step_ns(const StepShape& s) const override { return f_(s); }
  std::string kind() const override { return "test"; }

 private:
  std::function<int64_t(const StepShape&)> f_;
};

FnCost constant_cost(int64_t c) {
  return FnCost([c](const StepShape&) { return c; });
}

// Durations that follow no pattern a bookkeeping slip could hide behind: a
// hash of the whole shape, between 0.05 and 2 ms.
int64_t hashed_ns(const StepShape& s) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 1099511628211ull;
  };
  for (const auto& p : s.parts) {
    mix(static_cast<uint64_t>(p.tokens));
    mix(static_cast<uint64_t>(p.context));
    mix(p.samples ? 1 : 2);
  }
  return 50'000 + static_cast<int64_t>(h % 1'950'000);
}

ServeRequest request(int64_t id, int64_t arrival_ns, int64_t prompt_len, int64_t output_len) {
  ServeRequest q;
  q.id = id;
  q.arrival_ns = arrival_ns;
  q.prompt.assign(static_cast<size_t>(prompt_len), 7);
  q.output_len = output_len;
  return q;
}

// `n` requests at the given arrivals, every one with the same prompt and output lengths.
std::vector<ServeRequest> uniform_requests(const std::vector<int64_t>& arrivals, int64_t prompt_len, int64_t output_len) {
  std::vector<ServeRequest> out;
  for (size_t i = 0; i < arrivals.size(); ++i) out.push_back(request(i, arrivals[i], prompt_len, output_len));
  return out;
}

std::vector<int64_t> poisson_arrivals(double rate, int64_t n, uint64_t seed, double burstiness = 1) {
  zl::ArrivalOptions a;
  a.rate = rate;
  a.requests = n;
  a.seed = seed;
  a.burstiness = burstiness;
  return zl::arrival_times_ns(a);
}

double mean_ttft_ns(const ServeResult& r) {
  double sum = 0;
  for (const auto& q : r.requests) sum += static_cast<double>(q.token_ns.at(0) - q.arrival_ns);
  return sum / static_cast<double>(r.requests.size());
}

// ---- Replay ------------------------------------------------------------------

// Requests of varied lengths under bursty arrivals, on a KV budget that
// cannot hold four of them at once, with a budget of tokens that chunks.
std::vector<ServeRequest> mixed_requests(int64_t n, uint64_t seed) {
  const auto arrivals = poisson_arrivals(60, n, seed, 0.3);
  std::vector<ServeRequest> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(request(i, arrivals[i], 3 + (i * 7) % 38, 5 + (i * 11) % 26));
  return out;
}

void expect_same_timeline(const ServeResult& a, const ServeResult& b) {
  ASSERT_EQ(a.requests.size(), b.requests.size());
  for (size_t i = 0; i < a.requests.size(); ++i) {
    EXPECT_EQ(a.requests[i].token_ns, b.requests[i].token_ns) << "request " << i;
    EXPECT_EQ(a.requests[i].preemptions, b.requests[i].preemptions) << "request " << i;
  }
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const auto &x = a.steps[i], &y = b.steps[i];
    EXPECT_EQ(x.start_ns, y.start_ns) << "step " << i;
    EXPECT_EQ(x.end_ns, y.end_ns) << "step " << i;
    EXPECT_EQ(x.dropped, y.dropped) << "step " << i;
    EXPECT_EQ(x.running, y.running) << "step " << i;
    EXPECT_EQ(x.waiting, y.waiting) << "step " << i;
    EXPECT_EQ(x.preempted, y.preempted) << "step " << i;
    EXPECT_EQ(x.free_blocks, y.free_blocks) << "step " << i;
    ASSERT_EQ(x.shape.parts.size(), y.shape.parts.size()) << "step " << i;
    for (size_t j = 0; j < x.shape.parts.size(); ++j) {
      EXPECT_EQ(x.shape.parts[j].tokens, y.shape.parts[j].tokens) << "step " << i << " part " << j;
      EXPECT_EQ(x.shape.parts[j].context, y.shape.parts[j].context) << "step " << i << " part " << j;
      EXPECT_EQ(x.shape.parts[j].samples, y.shape.parts[j].samples) << "step " << i << " part " << j;
    }
  }
}

TEST(ServingReplay, RecordedStepsGiveBackTheTimelineExactly) {
  const auto reqs = mixed_requests(150, 11);
  // Longest life: 40 + 29 tokens, 18 blocks of 4; 24 blocks hold about two
  // such requests, so a batch of four must preempt.
  const auto opt = zl::scheduler_options(4, 24, 4, 16);
  FnCost cost(hashed_ns);
  ResampleModel resample;
  resample.rate = 0.15;
  resample.drop = "random";
  zl::SimulatedRunner sim(cost, resample, 5);
  const ServeResult rec = zl::serve(reqs, opt, sim);

  // The case must hold what it claims to test: preemptions, drops, chunked
  // prefills and idle gaps between arrivals.
  int64_t preemptions = 0, drops = 0, chunks = 0, idle_gaps = 0;
  for (const auto& q : rec.requests) preemptions += q.preemptions;
  for (size_t i = 0; i < rec.steps.size(); ++i) {
    const auto& s = rec.steps[i];
    for (int64_t d : s.dropped) drops += d;
    for (const auto& p : s.shape.parts) chunks += !p.samples;
    if (i > 0) {
      ASSERT_GE(s.start_ns, rec.steps[i - 1].end_ns);
      if (s.start_ns > rec.steps[i - 1].end_ns) {
        ++idle_gaps;
        // An idle loop starts again at an arrival, not at some later time.
        EXPECT_TRUE(std::any_of(reqs.begin(), reqs.end(), [&](const ServeRequest& q) { return q.arrival_ns == s.start_ns; }))
            << "step " << i;
      }
    }
  }
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(drops, 0);
  EXPECT_GT(chunks, 0);
  EXPECT_GT(idle_gaps, 0);
  for (const auto& q : rec.requests) EXPECT_EQ(static_cast<int64_t>(q.token_ns.size()), reqs[q.id].output_len);

  zl::ReplayRunner replay(rec.steps);
  const ServeResult again = zl::serve(reqs, opt, replay);
  expect_same_timeline(rec, again);
}

TEST(ServingReplay, ReplayWithoutReviewIsExactToo) {
  const auto reqs = mixed_requests(80, 3);
  const auto opt = zl::scheduler_options(4, 20, 3, 24);
  FnCost cost(hashed_ns);
  const ServeResult rec = zl::simulate(cost, ResampleModel{}, reqs, opt, 0);
  for (const auto& s : rec.steps)
    for (int64_t d : s.dropped) EXPECT_EQ(d, 0);  // rate 0: no review
  zl::ReplayRunner replay(rec.steps);
  expect_same_timeline(rec, zl::serve(reqs, opt, replay));
}

TEST(ServingReplay, ReplayRefusesStepsThatDoNotMatch) {
  const auto reqs = mixed_requests(20, 4);
  FnCost cost(hashed_ns);
  const ServeResult rec = zl::simulate(cost, ResampleModel{}, reqs, zl::scheduler_options(4, 24, 4, 16), 0);
  // Fewer steps than the run needs.
  std::vector<zl::StepRecord> cut(rec.steps.begin(), rec.steps.begin() + rec.steps.size() / 2);
  zl::ReplayRunner short_replay(cut);
  EXPECT_THROW(zl::serve(reqs, zl::scheduler_options(4, 24, 4, 16), short_replay), std::runtime_error);
  // Steps recorded with a batch of 4 replayed on a batch of 1: parts differ.
  zl::ReplayRunner other(rec.steps);
  EXPECT_THROW(zl::serve(reqs, zl::scheduler_options(4, 24, 1, 16), other), std::runtime_error);
}

// ---- Queueing ----------------------------------------------------------------

// One request at a time, one step each (the prefill samples its only token),
// each lasting c: an M/D/1 queue. Mean time in system (= TTFT) is
// c + λc² / (2(1 − ρ)) (Pollaczek–Khinchine), ρ = λc.
TEST(ServingQueueing, ConstantStepsUnderPoissonArrivalsAreMD1) {
  const int64_t c = kMs;
  auto cost = constant_cost(c);
  // 40000 requests: the sample mean's spread is then about 0.3% at ρ = 0.3
  // and 0.6% at ρ = 0.5 (measured over 50 seeds), well inside 3%.
  for (double rho : {0.3, 0.5}) {
    const double lambda = rho / (static_cast<double>(c) / 1e9);  // per s
    const auto reqs = uniform_requests(poisson_arrivals(lambda, 40000, 17), 4, 1);
    const ServeResult r = zl::simulate(cost, ResampleModel{}, reqs, zl::scheduler_options(16, 64, 1, 256), 0);
    const double expected = c + rho * c / (2 * (1 - rho));  // λc² = ρc
    EXPECT_NEAR(mean_ttft_ns(r) / expected, 1, 0.03) << "rho " << rho;
    for (const auto& s : r.steps) ASSERT_EQ(s.end_ns - s.start_ns, c);
  }
}

TEST(ServingQueueing, SpacedArrivalsNeverWait) {
  const int64_t c = 3 * kMs;
  auto cost = constant_cost(c);
  std::vector<int64_t> arrivals;
  for (int64_t i = 0; i < 50; ++i) arrivals.push_back(i * (c + c / 2) + (i % 3) * 1000);  // gaps > c
  const ServeResult r = zl::simulate(cost, ResampleModel{}, uniform_requests(arrivals, 5, 1), zl::scheduler_options(16, 64, 1, 256), 0);
  for (const auto& q : r.requests) EXPECT_EQ(q.token_ns.at(0) - q.arrival_ns, c) << "request " << q.id;
  for (size_t i = 0; i < r.steps.size(); ++i) EXPECT_EQ(r.steps[i].start_ns, arrivals[i]);
}

// The loop tells each step what the step before prefilled and, halved per
// step further back, what earlier ones did (what the cache-cold cost of a
// decode after a prefill is fitted on), and forgets it over an idle wait,
// whose own cost is after_idle's.
TEST(ServingLoop, EachStepKnowsWhatTheStepsBeforeItPrefilled) {
  auto cost = constant_cost(kMs);
  // Two requests at 0 (prompts of 6 and 6), a third at 2.5 ms (prompt 9),
  // a fourth long after everything is done (prompt 5); 4 tokens each.
  std::vector<ServeRequest> reqs = {request(0, 0, 6, 4), request(1, 0, 6, 4), request(2, 2 * kMs + kMs / 2, 9, 4),
                                    request(3, 100 * kMs, 5, 4)};
  const ServeResult r = zl::simulate(cost, ResampleModel{}, reqs, zl::scheduler_options(16, 64, 4, 256), 0);
  using Before = std::array<int64_t, 2>;
  std::vector<Before> seen;
  std::vector<int64_t> prefill;
  for (const auto& st : r.steps) seen.push_back(st.shape.prefilled_before), prefill.push_back(st.shape.prefill_tokens());
  ASSERT_GE(seen.size(), 8u);
  EXPECT_EQ(seen[0], (Before{0, 0}));
  EXPECT_EQ(prefill[0], 12);  // both prompts at once
  EXPECT_EQ(seen[1], (Before{12, 0}));
  EXPECT_EQ(seen[2], (Before{0, 12}));
  EXPECT_EQ(seen[3], (Before{0, 6}));
  EXPECT_EQ(prefill[3], 9);  // the third joins at the step after 2.5 ms
  EXPECT_EQ(seen[4], (Before{9, 3}));
  EXPECT_EQ(seen[5], (Before{0, 10}));
  EXPECT_EQ(seen[6], (Before{0, 5}));
  for (size_t i = 1; i < r.steps.size(); ++i) {
    if (r.steps[i].shape.after_idle) {
      EXPECT_EQ(seen[i], (Before{0, 0})) << "step " << i;
    } else {
      EXPECT_EQ(seen[i], (Before{prefill[i - 1], seen[i - 1][0] + seen[i - 1][1] / 2})) << "step " << i;
    }
  }
  EXPECT_TRUE(r.steps[seen.size() - 4].shape.after_idle);  // the fourth request, alone
}

TEST(ServingQueueing, AllAtOnceOneAtATimeIsSequential) {
  // Request k runs steps k·n … k·n + n − 1: its token i at (k·n + i + 1)·c.
  const int64_t c = 2 * kMs, n = 5, N = 12;
  auto cost = constant_cost(c);
  const ServeResult r =
      zl::simulate(cost, ResampleModel{}, uniform_requests(std::vector<int64_t>(N, 0), 6, n), zl::scheduler_options(16, 64, 1, 256), 0);
  ASSERT_EQ(r.steps.size(), static_cast<size_t>(N * n));
  for (int64_t k = 0; k < N; ++k) {
    const auto& q = r.requests[k];
    ASSERT_EQ(static_cast<int64_t>(q.token_ns.size()), n);
    EXPECT_EQ(q.token_ns.front(), (k * n + 1) * c) << "request " << k;  // TTFT
    EXPECT_EQ(q.token_ns.back(), (k + 1) * n * c) << "request " << k;   // E2EL (arrival 0)
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(q.token_ns[i], (k * n + i + 1) * c);
  }
}

TEST(ServingQueueing, SaturatedThroughputIsSeqsOverOutputTimesStep) {
  // Every step costs c whatever its batch, plus 50 ns per prefill token (a
  // tiny prefill): max_num_seqs requests finish every output_len steps.
  const int64_t c = kMs, S = 8, n = 32, N = 64;
  FnCost cost([c](const StepShape& s) { return c + 50 * s.prefill_tokens(); });
  // simulated_capacity sends everything at once, whatever the arrivals say.
  std::vector<int64_t> arrivals;
  for (int64_t i = 0; i < N; ++i) arrivals.push_back(i * 1000 * kMs);
  const auto reqs = uniform_requests(arrivals, 4, n);
  const double cap = zl::simulated_capacity(cost, ResampleModel{}, reqs, zl::scheduler_options(16, 1000, S, 256), 0);
  const double expected = S / (n * c / 1e9);
  EXPECT_NEAR(cap / expected, 1, 0.01);
  EXPECT_LE(cap, expected);  // the prefills only add time
  // Half the rows: half the throughput.
  const double half = zl::simulated_capacity(cost, ResampleModel{}, reqs, zl::scheduler_options(16, 1000, S / 2, 256), 0);
  EXPECT_NEAR(half / cap, 0.5, 0.01);
}

TEST(ServingQueueing, ScaledStepsScaleTheSaturatedThroughput) {
  // serve/sensitivity's model: every step `factor` times as long, rounded, never under 1 ns.
  const FnCost base([](const StepShape& s) { return kMs + 7 * s.tokens(); });
  StepShape shape;
  shape.parts = {{3, 0, true}, {1, 10, true}};
  EXPECT_EQ(zl::ScaledCost(base, 1.02).step_ns(shape), std::llround((kMs + 28) * 1.02));
  EXPECT_EQ(zl::ScaledCost(base, 0.98).step_ns(shape), std::llround((kMs + 28) * 0.98));
  EXPECT_EQ(zl::ScaledCost(constant_cost(1), 0.25).step_ns(shape), 1);
  EXPECT_EQ(zl::ScaledCost(base, 1.02).kind(), "test");
  // Saturated, the server completes 2% fewer requests a second on 2% longer steps.
  std::vector<int64_t> arrivals(64, 0);
  const auto reqs = uniform_requests(arrivals, 4, 32);
  const auto sched = zl::scheduler_options(16, 1000, 8, 256);
  const double at = zl::simulated_capacity(base, ResampleModel{}, reqs, sched, 0);
  const double slower = zl::simulated_capacity(zl::ScaledCost(base, 1.02), ResampleModel{}, reqs, sched, 0);
  EXPECT_NEAR(at / slower, 1.02, 1e-3);
}

// ---- Capacity and the highest rate under an SLO --------------------------------

std::vector<ServeRequest> poisson_workload(double rate) { return uniform_requests(poisson_arrivals(rate, 300, 23), 8, 4); }

TEST(ServingCapacity, TighterSlosAndHigherTargetsGiveLowerRates) {
  const int64_t c = kMs;
  FnCost cost([c](const StepShape& s) { return c + 20'000 * s.tokens(); });
  const auto opt = zl::scheduler_options(16, 1000, 4, 256);
  const double cap = zl::simulated_capacity(cost, ResampleModel{}, poisson_workload(1), opt, 0);
  ASSERT_GT(cap, 0);
  auto max_rate = [&](double ttft_ms, double target) {
    zl::Slo slo;
    slo.ttft_ms = ttft_ms;
    return zl::max_rate_meeting(cost, ResampleModel{}, poisson_workload, opt, slo, target, cap, 0);
  };
  double last = 0;
  for (double ttft : {2.0, 4.0, 8.0, 16.0, 64.0}) {
    const double r = max_rate(ttft, 0.9);
    EXPECT_GE(r, last) << "TTFT SLO " << ttft << " ms";
    last = r;
  }
  EXPECT_GT(last, 0.3 * cap);   // a loose SLO is met at a good share of capacity
  EXPECT_LE(last, 1.5 * cap);
  EXPECT_LE(max_rate(8.0, 0.99), max_rate(8.0, 0.9));
  EXPECT_LE(max_rate(8.0, 0.9), max_rate(8.0, 0.5));
  // No step is shorter than c: a TTFT under c is met at no rate at all.
  EXPECT_EQ(max_rate(0.5, 0.5), 0);
}

TEST(ServingCapacity, MaxRateFindsTheThresholdOfEvenlySpacedArrivals) {
  // One request at a time, one step of c each; N arrivals spaced g apart.
  // When g < c the queue grows: request k's TTFT is (k + 1)c − k·g, the
  // last's N·c − (N − 1)g. A TTFT SLO of 1.5c met by all holds while
  // g ≥ c(N − 1.5)/(N − 1): the highest rate is capacity · (N − 1)/(N − 1.5).
  const int64_t c = kMs, N = 100;
  auto cost = constant_cost(c);
  auto evenly = [&](double rate) {
    std::vector<int64_t> arrivals;
    for (int64_t i = 0; i < N; ++i) arrivals.push_back(std::llround(i * 1e9 / rate));
    return uniform_requests(arrivals, 4, 1);
  };
  const auto opt = zl::scheduler_options(16, 64, 1, 256);
  const double cap = zl::simulated_capacity(cost, ResampleModel{}, evenly(1), opt, 0);
  EXPECT_NEAR(cap, 1e9 / c, 1e-6);
  zl::Slo slo;
  slo.ttft_ms = 1.5;
  const double r = zl::max_rate_meeting(cost, ResampleModel{}, evenly, opt, slo, 1.0, cap, 0);
  EXPECT_NEAR(r / (cap * (N - 1) / (N - 1.5)), 1, 2e-3);
}

// ---- Re-sampling --------------------------------------------------------------

struct ReviewCounts {
  int64_t samples = 0, dropped = 0, fires = 0;
  int64_t most_fires_at_one_position = 0;
  bool dropped_more_than_produced = false;
  int64_t fires_at_first_token = 0, most_dropped_at_first_token = 0;  // fires while one token was produced
  int64_t later_fires_of[3] = {0, 0, 0};  // fires past the first token, by tokens taken back (1 or 2)
};

// A runner that wraps the simulator and keeps, for every sampling part, its
// request and the drop it was given: what the review did, by request.
class Recording : public zl::StepRunner {
 public:
  explicit Recording(zl::SimulatedRunner& inner) : inner_(inner) {}
  int64_t run(const zl::StepPlan& plan, int64_t start_ns, std::vector<int64_t>& dropped) override {
    const int64_t end = inner_.run(plan, start_ns, dropped);
    for (size_t i = 0; i < plan.parts.size(); ++i)
      if (plan.parts[i].samples) events.push_back({plan.parts[i].request, dropped[i]});
    return end;
  }
  struct Event {
    int64_t request, dropped;
  };
  std::vector<Event> events;

 private:
  zl::SimulatedRunner& inner_;
};

ReviewCounts count_reviews(const std::vector<Recording::Event>& events, size_t requests) {
  ReviewCounts c;
  std::vector<int64_t> produced(requests, 0);
  std::vector<std::map<int64_t, int64_t>> fires_at(requests);  // position → consecutive fires there
  for (const auto& e : events) {
    ++c.samples;
    const int64_t pos = ++produced[e.request];  // the sampled token's position among the outputs (1-based)
    if (e.dropped > pos) c.dropped_more_than_produced = true;
    if (pos == 1 && e.dropped > 0) {
      ++c.fires_at_first_token;
      c.most_dropped_at_first_token = std::max(c.most_dropped_at_first_token, e.dropped);
    }
    if (pos > 1 && e.dropped > 0) ++c.later_fires_of[std::min<int64_t>(e.dropped, 2)];
    if (e.dropped > 0) {
      ++c.fires;
      c.dropped += e.dropped;
      c.most_fires_at_one_position = std::max(c.most_fires_at_one_position, ++fires_at[e.request][pos]);
    } else {
      fires_at[e.request].erase(pos);  // a kept token ends the run of fires at its position
    }
    produced[e.request] -= e.dropped;
  }
  return c;
}

TEST(ServingResample, TakesBackAboutRateOfTheSampledTokens) {
  const double r = 0.2;
  ResampleModel m;
  m.rate = r;
  m.drop = "1";
  m.max_retries = 3;
  auto cost = constant_cost(kMs);
  const auto reqs = uniform_requests(std::vector<int64_t>(100, 0), 4, 200);
  zl::SimulatedRunner sim(cost, m, 99);
  Recording rec(sim);
  const ServeResult out = zl::serve(reqs, zl::scheduler_options(16, 1000, 8, 256), rec);
  const ReviewCounts c = count_reviews(rec.events, reqs.size());
  // A position fires with probability r until its retries run out (at most
  // 3 fires, then a kept token): per position r + r² + r³ fires over
  // 1 + r + r² + r³ samples, which is r to within r⁴.
  const double expected = (r + r * r + r * r * r) / (1 + r + r * r + r * r * r);
  const double share = static_cast<double>(c.dropped) / static_cast<double>(c.samples);
  const double sd = std::sqrt(expected * (1 - expected) / static_cast<double>(c.samples));
  EXPECT_GT(c.samples, 20000);
  EXPECT_NEAR(share, expected, 4 * sd);
  EXPECT_NEAR(share, r, 0.01);
  EXPECT_LE(c.most_fires_at_one_position, 3);
  EXPECT_FALSE(c.dropped_more_than_produced);
  for (const auto& q : out.requests) EXPECT_EQ(q.token_ns.size(), 200u);
}

TEST(ServingResample, ACertainFireSpendsExactlyTheRetriesAtEachPosition) {
  // Rate 1: every position fires max_retries times, then its token is kept.
  ResampleModel m;
  m.rate = 1;
  m.drop = "1";
  m.max_retries = 2;
  auto cost = constant_cost(kMs);
  const int64_t n = 10;
  const auto reqs = uniform_requests(std::vector<int64_t>(3, 0), 4, n);
  zl::SimulatedRunner sim(cost, m, 1);
  Recording rec(sim);
  const ServeResult out = zl::serve(reqs, zl::scheduler_options(16, 1000, 4, 256), rec);
  const ReviewCounts c = count_reviews(rec.events, reqs.size());
  EXPECT_EQ(c.samples, 3 * n * (m.max_retries + 1));
  EXPECT_EQ(c.dropped, 3 * n * m.max_retries);
  EXPECT_EQ(c.most_fires_at_one_position, m.max_retries);
  EXPECT_EQ(out.steps.size(), static_cast<size_t>(n * (m.max_retries + 1)));  // the three run side by side
  for (const auto& q : out.requests) {
    ASSERT_EQ(static_cast<int64_t>(q.token_ns.size()), n);
    // Token i is kept at the end of step (i + 1)(retries + 1).
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(q.token_ns[i], (i + 1) * (m.max_retries + 1) * kMs);
  }
}

TEST(ServingResample, NeverTakesBackMoreThanWasProduced) {
  auto cost = constant_cost(kMs);
  const auto reqs = uniform_requests(std::vector<int64_t>(20, 0), 4, 12);
  for (const std::string drop : {"2", "random"}) {
    ResampleModel m;
    m.rate = 0.9;
    m.drop = drop;
    m.max_retries = 3;
    zl::SimulatedRunner sim(cost, m, 7);
    Recording rec(sim);
    const ServeResult out = zl::serve(reqs, zl::scheduler_options(16, 1000, 4, 256), rec);
    const ReviewCounts c = count_reviews(rec.events, reqs.size());
    EXPECT_FALSE(c.dropped_more_than_produced) << drop;
    // Past the first token "2" always takes two; "random" one or two evenly.
    const double twos = static_cast<double>(c.later_fires_of[2]) / (c.later_fires_of[1] + c.later_fires_of[2]);
    EXPECT_GT(c.later_fires_of[2], 100) << drop;
    if (drop == "2") {
      EXPECT_EQ(c.later_fires_of[1], 0);
    } else {
      EXPECT_NEAR(twos, 0.5, 0.1);
    }
    // A fire on a request's only output token could take back that token
    // alone, whatever "2" asks; the case must have had such fires.
    EXPECT_GT(c.fires_at_first_token, 0) << drop;
    EXPECT_EQ(c.most_dropped_at_first_token, 1) << drop;
    for (const auto& q : out.requests) {
      EXPECT_EQ(q.token_ns.size(), 12u) << drop;
      EXPECT_TRUE(std::is_sorted(q.token_ns.begin(), q.token_ns.end())) << drop;
    }
  }
}

// The review's rates read back from a served run (ReviewTally): they are
// the rates the run was drawn at, at fresh positions, just past a fire and
// at retried ones, where the share of all sampled tokens taken back is not
// (a position out of retries keeps its token, so that share counts the
// budget twice).
TEST(ServingResample, TheTallyReadsBackTheRatesARunWasDrawnAt) {
  using zl::kAfterFire;
  using zl::kFresh;
  using zl::kAtFire;
  using zl::kBehindFire;
  ResampleModel m;
  m.rate = 0.3;
  m.after_fire_rate = 0.5;
  m.behind_fire_rate = 0.45;
  m.at_fire_rate = 0.8;
  m.drop = "random";
  m.max_retries = 3;
  auto cost = constant_cost(kMs);
  const auto reqs = uniform_requests(std::vector<int64_t>(400, 0), 4, 64);
  const ServeResult out = zl::simulate(cost, m, reqs, zl::scheduler_options(16, 1000, 16, 256), 11);
  zl::ReviewTally tally(m.max_retries);
  tally.add(out.steps);
  const ResampleModel read = tally.model(m.drop);
  auto sd = [](double p, int64_t n) { return std::sqrt(p * (1 - p) / static_cast<double>(n)); };
  ASSERT_GT(tally.could_fire(kFresh), 10000);
  ASSERT_GT(tally.could_fire(kAfterFire), 3000);
  ASSERT_GT(tally.could_fire(kBehindFire), 3000);
  ASSERT_GT(tally.could_fire(kAtFire), 5000);
  EXPECT_NEAR(read.rate, m.rate, 4 * sd(m.rate, tally.could_fire(kFresh)));
  EXPECT_NEAR(read.after_fire_rate, m.after_fire_rate, 4 * sd(m.after_fire_rate, tally.could_fire(kAfterFire)));
  EXPECT_NEAR(read.behind_fire_rate, m.behind_fire_rate, 4 * sd(m.behind_fire_rate, tally.could_fire(kBehindFire)));
  EXPECT_NEAR(read.at_fire_rate, m.at_fire_rate, 4 * sd(m.at_fire_rate, tally.could_fire(kAtFire)));
  EXPECT_EQ(read.drop, "random");
  EXPECT_EQ(read.max_retries, 3);
  // The naive share, fires over every sampled token, falls well short of the fresh rate.
  int64_t fires = 0, could = 0;
  for (auto k : {kFresh, kAfterFire, kBehindFire, kAtFire}) fires += tally.fires(k), could += tally.could_fire(k);
  const double naive = static_cast<double>(fires) / tally.samples();
  EXPECT_LT(could, tally.samples());  // some positions ran out

  // Served again on the rates read back, the run samples as many tokens per
  // request (within 2%); on the naive share, clearly fewer.
  auto samples_of = [&](const ResampleModel& r) {
    int64_t n = 0;
    for (const auto& st : zl::simulate(cost, r, reqs, zl::scheduler_options(16, 1000, 16, 256), 12).steps)
      for (const auto& p : st.shape.parts) n += p.samples;
    return static_cast<double>(n);
  };
  ResampleModel flat = m;
  flat.rate = naive;
  flat.after_fire_rate = flat.behind_fire_rate = flat.at_fire_rate = NAN;
  // Or one rate for every kind, counted right: still off, as the review's
  // fires cluster.
  ResampleModel one_kind = m;
  one_kind.rate = static_cast<double>(fires) / could;
  one_kind.after_fire_rate = one_kind.behind_fire_rate = one_kind.at_fire_rate = NAN;
  const double real = tally.samples();
  EXPECT_NEAR(samples_of(read) / real, 1.0, 0.02);
  EXPECT_LT(samples_of(flat) / real, 0.9);
  EXPECT_GT(std::abs(samples_of(one_kind) / real - 1), 0.04);
}

// A review whose rate depends on the output position (sfvl's does: the
// first token fires least, the next few most) is read back band by band,
// and its time to first token with it: the pooled rates miss it.
TEST(ServingResample, TheTallyReadsBackRatesByPosition) {
  ResampleModel m;
  m.rate = 0.35;
  m.after_fire_rate = 0.5;
  m.behind_fire_rate = 0.5;
  m.at_fire_rate = 0.8;
  // Positions 1, 2-3, 4-7, 8+: fresh, after a fire, behind one, at one.
  m.by_position = {{0.1, 0.3, 0.3, 0.3}, {0.7, 0.75, 0.6, 0.85}, {0.6, 0.7, 0.5, 0.8}, {0.35, 0.5, 0.5, 0.8}};
  m.drop = "random";
  auto cost = constant_cost(kMs);
  std::vector<int64_t> apart;  // one request at a time: TTFT counts its own steps alone
  for (int64_t i = 0; i < 2000; ++i) apart.push_back(i * 1000 * kMs);
  const auto reqs = uniform_requests(apart, 4, 24);
  const auto sched = zl::scheduler_options(16, 1000, 16, 256);
  const ServeResult out = zl::simulate(cost, m, reqs, sched, 21);
  zl::ReviewTally tally(m.max_retries);
  tally.add(out.steps);
  const ResampleModel read = tally.model(m.drop);
  ASSERT_EQ(read.by_position.size(), 5u);  // positions up to 24: bands 0 to 4
  for (size_t band = 0; band < 4; ++band)
    for (int k = 0; k < zl::kReviewKinds; ++k) {
      if (band == 0 && k == zl::kAfterFire) continue;  // position 1 is never past a fire
      EXPECT_NEAR(read.by_position[band][k], m.by_position[band][k], 0.04) << band << " " << k;
    }
  EXPECT_TRUE(std::isnan(read.by_position[0][zl::kAfterFire]));
  EXPECT_NEAR(read.by_position[4][0], 0.35, 0.03);  // past the last band given: the last's
  EXPECT_EQ(read.rate_at(1, zl::kFresh), read.by_position[0][zl::kFresh]);
  EXPECT_EQ(read.rate_at(1000, zl::kAtFire), read.by_position[4][zl::kAtFire]);
  const zl::Slo none{};
  auto ttft = [&](const ResampleModel& r) { return zl::serving_metrics(zl::simulate(cost, r, reqs, sched, 22).requests, none).ttft_ms.mean; };
  const double real = ttft(m);  // the rates it was drawn at, on the same stream as the others
  EXPECT_NEAR(ttft(read) / real, 1.0, 0.04);
  ResampleModel pooled = read;
  pooled.by_position.clear();
  EXPECT_GT(std::abs(ttft(pooled) / real - 1), 0.1);
}

TEST(ServingResample, OneRateServesEveryKindOfPosition) {
  ResampleModel m;
  m.rate = 0.3;
  EXPECT_EQ(m.rate_at(1, zl::kAtFire), 0.3);
  EXPECT_EQ(m.rate_at(3, zl::kBehindFire), 0.3);
  EXPECT_EQ(m.rate_at(5, zl::kAfterFire), 0.3);
  EXPECT_EQ(m.rate_at(40, zl::kFresh), 0.3);
  auto cost = constant_cost(kMs);
  const ServeResult out = zl::simulate(cost, m, uniform_requests(std::vector<int64_t>(200, 0), 4, 40),
                                       zl::scheduler_options(16, 1000, 16, 256), 3);
  zl::ReviewTally tally(m.max_retries);
  tally.add(out.steps);
  const ResampleModel read = tally.model("1");
  EXPECT_NEAR(read.rate, 0.3, 0.03);
  EXPECT_NEAR(read.after_fire_rate, 0.3, 0.05);
  EXPECT_NEAR(read.behind_fire_rate, 0.3, 0.05);
  EXPECT_NEAR(read.at_fire_rate, 0.3, 0.05);
  // Nothing sampled: no review.
  EXPECT_EQ(zl::ReviewTally(3).model("1").rate, 0);
}

TEST(ServingResample, TheTallyRefusesStepsItCannotRead) {
  zl::StepRecord st;
  st.shape.parts.push_back({1, 4, true});
  st.dropped = {0};  // no requests per part
  zl::ReviewTally tally(2);
  EXPECT_THROW(tally.add({st}), std::invalid_argument);
  // A drop at a position already out of retries: another retry budget.
  st.requests = {0};
  st.dropped = {1};
  std::vector<zl::StepRecord> steps(3, st);
  try {
    tally.add(steps);
    FAIL() << "a third fire at one position passed a budget of 2";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max_retries"), std::string::npos) << e.what();
  }
}

TEST(ServingResample, APreemptedRequestIsReviewedAfreshWhenAdmittedAgain) {
  // As the hook does (begin_sequence on the new row): after a preemption, a
  // position that had spent its budget may fire again.
  zl::ReviewState r;
  ASSERT_TRUE(r.sampled(1));
  ASSERT_TRUE(r.sampled(1));
  r.took_back(1);                    // position 2 spent its one retry
  EXPECT_FALSE(r.sampled(1));        // so its next token is kept
  EXPECT_EQ(r.kind(), zl::kAtFire);
  r.admitted();                      // preempted, its two tokens recomputed on a new row
  EXPECT_EQ(r.produced(), 2);
  EXPECT_TRUE(r.sampled(1));         // position 3: fresh, with a full budget
  EXPECT_EQ(r.kind(), zl::kFresh);

  // The simulator does the same: every position fires once (rate 1, one
  // retry), and a request preempted between a fire and its retry fires
  // there again when it comes back, so more than one fire per token.
  ResampleModel m;
  m.rate = 1;
  m.drop = "1";
  m.max_retries = 1;
  auto cost = constant_cost(kMs);
  const int64_t n = 12;
  // A step apart, so that the victim of a preemption may be between a fire and its retry.
  const auto reqs = uniform_requests({0, kMs, 2 * kMs, 3 * kMs}, 4, n);
  zl::SimulatedRunner sim(cost, m, 1);
  Recording rec(sim);
  const ServeResult out = zl::serve(reqs, zl::scheduler_options(4, 10, 4, 256), rec);  // 10 blocks: 4 requests need 16
  int64_t preemptions = 0;
  for (const auto& q : out.requests) {
    preemptions += q.preemptions;
    EXPECT_EQ(static_cast<int64_t>(q.token_ns.size()), n);
  }
  ASSERT_GT(preemptions, 0);
  EXPECT_GT(count_reviews(rec.events, reqs.size()).dropped, static_cast<int64_t>(reqs.size()) * n);

  // The tally reads a re-admission off a part at context 0: a fire at a
  // position whose budget was spent before the preemption is a fire, not an
  // error.
  auto step = [](int64_t tokens, int64_t context, bool samples, int64_t dropped) {
    zl::StepRecord st;
    st.shape.parts.push_back({tokens, context, samples});
    st.requests = {0};
    st.dropped = {dropped};
    return st;
  };
  const std::vector<zl::StepRecord> steps{step(4, 0, true, 1),   // prompt of 4, token 1 fires
                                          step(1, 4, true, 0),   // token 1 again: out of retries, kept
                                          step(5, 0, true, 1)};  // preempted, readmitted: token 2 fires
  zl::ReviewTally tally(1);
  ASSERT_NO_THROW(tally.add(steps));
  EXPECT_EQ(tally.fires(zl::kFresh), 2);
}

// ---- Calibration --------------------------------------------------------------

StepShape shape_of(const std::vector<int64_t>& tokens) {
  StepShape s;
  for (int64_t t : tokens) s.parts.push_back({t, 10, true});
  return s;
}

using Groups = std::vector<std::pair<size_t, size_t>>;

TEST(ServingCalibration, TeamGroupsByHand) {
  EXPECT_EQ(zl::team_groups(shape_of({1, 1, 1, 1}), 2), (Groups{{0, 2}, {2, 4}}));
  // The cut at row 50 moves forward to the next sequence start, which is the
  // end of the rows: the long last sequence keeps everything in one group.
  EXPECT_EQ(zl::team_groups(shape_of({1, 100}), 2), (Groups{{0, 2}}));
  EXPECT_EQ(zl::team_groups(shape_of({100, 1}), 2), (Groups{{0, 1}, {1, 2}}));
  EXPECT_EQ(zl::team_groups(shape_of({1, 1, 1, 1}), 1), (Groups{{0, 4}}));
  EXPECT_EQ(zl::team_groups(shape_of({5}), 4), (Groups{{0, 1}}));  // one sequence: one group
  // Three members, rows 0..8 cut near 3 and 6: parts start at 0, 2, 3, 7.
  EXPECT_EQ(zl::team_groups(shape_of({2, 1, 4, 2}), 3), (Groups{{0, 2}, {2, 3}, {3, 4}}));
  // More members than sequences: one group each.
  EXPECT_EQ(zl::team_groups(shape_of({3, 3}), 8), (Groups{{0, 1}, {1, 2}}));
}

// DecodeStep::run_rows's rule restated over rows (models/decode_step.cpp):
// groups = min(team, sequences); cut g starts at max(previous, M·g/groups),
// moved forward while it splits a sequence; cuts at 0 or M, or not past the
// previous one, are dropped. Sequences here are the parts, one row each per token.
Groups run_rows_groups(const std::vector<int64_t>& tokens, int team) {
  std::vector<int64_t> seq_of_row;
  for (size_t i = 0; i < tokens.size(); ++i) seq_of_row.insert(seq_of_row.end(), tokens[i], static_cast<int64_t>(i));
  const int64_t M = seq_of_row.size();
  const int64_t sequences = seq_of_row.back() - seq_of_row.front() + 1;
  const int64_t groups = std::min<int64_t>(team, sequences);
  std::vector<int64_t> cut{0};
  for (int64_t g = 1, m = 0; g < groups; ++g) {
    m = std::max(m, M * g / groups);
    while (m > 0 && m < M && seq_of_row[m] == seq_of_row[m - 1]) ++m;
    if (m > cut.back() && m < M) cut.push_back(m);
  }
  cut.push_back(M);
  Groups out;
  for (size_t i = 0; i + 1 < cut.size(); ++i)
    out.emplace_back(seq_of_row[cut[i]], cut[i + 1] == M ? tokens.size() : seq_of_row[cut[i + 1]]);
  return out;
}

TEST(ServingCalibration, TeamGroupsFollowRunRowsOnManyShapes) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 3000; ++trial) {
    const int team = 1 + static_cast<int>(rng() % 8);
    const size_t parts = 1 + rng() % 9;
    std::vector<int64_t> tokens;
    for (size_t i = 0; i < parts; ++i) tokens.push_back(rng() % 3 == 0 ? 1 + static_cast<int64_t>(rng() % 60) : 1);
    ASSERT_EQ(zl::team_groups(shape_of(tokens), team), run_rows_groups(tokens, team))
        << "trial " << trial << ", team " << team;
  }
}

// Shapes like a server's steps: decodes at varied contexts, prefill chunks
// fresh or continued, sampling or not.
StepShape random_shape(std::mt19937_64& rng) {
  StepShape s;
  const int parts = 1 + static_cast<int>(rng() % 6);
  for (int i = 0; i < parts; ++i) {
    StepShape::Part p;
    if (rng() % 10 < 7) {
      p.tokens = 1;
      p.context = 1 + static_cast<int64_t>(rng() % 800);
      p.samples = true;
    } else {
      p.tokens = 2 + static_cast<int64_t>(rng() % 95);
      p.context = rng() % 2 ? 0 : static_cast<int64_t>(rng() % 400);
      p.samples = rng() % 2;
    }
    s.parts.push_back(p);
  }
  return s;
}

// {overhead, per sample, per row, per key, per sequence, per logits row}, ns.
const zl::StepCoefficients kAlone = {30000, 2500, 400, 1.5, 1200, 5000};
const zl::StepCoefficients kGrouped = {40000, 2000, 250, 1.0, 900, 3500};

TEST(ServingCalibration, RecoversKnownCoefficientsThroughNoiseAndOutliers) {
  const int team = 2;
  const zl::CalibratedCost truth(team, kAlone, kGrouped);
  for (uint64_t seed : {1, 3, 6, 14, 21}) {
    std::mt19937_64 rng(seed);
    std::vector<zl::ProfiledStep> profile;
    int64_t injected = 0;
    for (int i = 0; i < 400; ++i) {
      zl::ProfiledStep p;
      p.shape = random_shape(rng);
      // ±100 ns of deterministic noise on steps of tens to hundreds of µs,
      // and every 50th step a stall of 5× (this machine is shared).
      p.ns = truth.step_ns(p.shape) + (static_cast<int64_t>(i) * 7919 % 201 - 100);
      if (i % 50 == 17) p.ns *= 5, ++injected;
      profile.push_back(p);
    }
    const zl::Calibration cal = zl::calibrate(profile, team);
    EXPECT_EQ(cal.steps, 400);
    // Every stall is found, and few honest steps are taken for one (judged
    // against a fit the stalls pulled, up to 60 of 400 were; the decode
    // table's lines only approximate this structural truth, a step or two more).
    EXPECT_GE(cal.outliers, injected) << "seed " << seed;
    EXPECT_LE(cal.outliers, injected + 6) << "seed " << seed;
    EXPECT_LT(cal.median_abs_error, 0.01) << "seed " << seed;
    EXPECT_EQ(cal.cost.team(), team);
    // The structural model is recovered (2%); decode-only steps are the
    // decode table's, lines per split of the batch that only approximate
    // this synthetic truth (5%).
    double worst = 0, worst_decode = 0;
    int64_t one = 0, several = 0;
    for (int i = 0; i < 500; ++i) {
      const StepShape s = random_shape(rng);
      (zl::team_groups(s, team).size() == 1 ? one : several) += 1;
      const double t = truth.step_ns(s), e = std::abs(cal.cost.step_ns(s) - t) / t;
      bool decode_only = true;
      for (const auto& p : s.parts) decode_only = decode_only && p.tokens == 1;
      (decode_only ? worst_decode : worst) = std::max(decode_only ? worst_decode : worst, e);
    }
    EXPECT_GT(one, 50);  // both kinds were checked
    EXPECT_GT(several, 50);
    EXPECT_LT(worst, 0.02) << "seed " << seed;
    EXPECT_LT(worst_decode, 0.05) << "seed " << seed;
  }
}

// Decode-only steps are the decode table's, one line per batch size: a
// cost no line through the team's split can give (here, as measured, an odd
// batch costing less than the even one that loads the slower thread alike)
// is recovered at every profiled size, and a size never profiled lies
// between its neighbours' lines.
TEST(ServingCalibration, TheDecodeTableFollowsEachBatchSize) {
  auto truth = [](const StepShape& s) {
    const auto n = static_cast<double>(s.parts.size());
    return 20000 + 30000 * n * (s.parts.size() % 2 ? 0.85 : 1.0) + 2.0 * static_cast<double>(s.keys());
  };
  auto decodes = [](int64_t n, int64_t context) {
    StepShape s;
    for (int64_t i = 0; i < n; ++i) s.parts.push_back({1, context + 7 * i, true});
    return s;
  };
  const zl::CalibratedCost structure(2, kAlone, kGrouped);
  std::mt19937_64 rng(5);
  std::vector<zl::ProfiledStep> profile;
  while (profile.size() < 200) {  // steps with a prefill, for the structural fit
    const StepShape s = random_shape(rng);
    if (s.prefill_tokens() > 0) profile.push_back({s, structure.step_ns(s)});
  }
  for (int64_t n = 1; n <= 16; ++n) {
    if (n == 14) continue;
    for (int64_t c = 10; c < 250; c += 15) profile.push_back({decodes(n, c), std::llround(truth(decodes(n, c)))});
  }
  const zl::Calibration cal = zl::calibrate(profile, 2);
  for (int64_t n = 1; n <= 16; ++n) {
    for (int64_t c : {20, 100, 200}) {
      const StepShape s = decodes(n, c);
      const double want = n == 14 ? 0.5 * (truth(decodes(13, c)) + truth(decodes(15, c))) : truth(s);
      EXPECT_NEAR(cal.cost.step_ns(s), want, 0.01 * want) << n << " decodes at context " << c;
    }
  }
  EXPECT_EQ(cal.cost.decode_lines().size(), 15u);
  EXPECT_EQ(cal.cost.decode_lines().count(14), 0u);
}

// A decode after a prefill costs more here (its caches hold the prefill's
// activations and new KV rows, not the weights): the table's lines are
// fitted on warm steps and the cold cost on the rest, a step and a slope in
// the tokens prefilled the step before and earlier, recovered through stalls.
TEST(ServingCalibration, ADecodeAfterAPrefillAddsTheColdCostFittedOnTheRest) {
  const zl::DecodeCold truth_cold = {40000, 400, 8000, 100};
  auto truth = [&](const StepShape& s) {
    const auto p = s.prefilled_before;
    return 20000 + 25000.0 * static_cast<double>(s.parts.size()) + 2.0 * static_cast<double>(s.keys()) +
           (p[0] > 0) * truth_cold[0] + truth_cold[1] * p[0] + (p[1] > 0) * truth_cold[2] + truth_cold[3] * p[1];
  };
  const zl::CalibratedCost structure(2, kAlone, kGrouped);
  std::mt19937_64 rng(9);
  std::vector<zl::ProfiledStep> profile;
  while (profile.size() < 200) {
    const StepShape s = random_shape(rng);
    if (s.prefill_tokens() > 0) profile.push_back({s, structure.step_ns(s)});
  }
  int64_t stalls = 0;
  for (int64_t n = 2; n <= 8; ++n)
    for (int64_t k = 0; k < 48; ++k) {
      const int64_t c = 10 + 5 * k;
      StepShape s;
      for (int64_t i = 0; i < n; ++i) s.parts.push_back({1, c + 5 * i, true});
      // Half warm; the rest after a prefill of 16 to 250 tokens one or two steps back, or both.
      s.prefilled_before = k % 2 == 0 ? std::array<int64_t, 2>{0, 0}
                           : k % 4 == 1 ? std::array<int64_t, 2>{16 + (7 * c) % 240, 0}
                                        : std::array<int64_t, 2>{0, 16 + (11 * c) % 240};
      if (k % 6 == 5) s.prefilled_before = {30 + c, 20 + c / 2};
      int64_t ns = std::llround(truth(s));
      if ((n * 31 + k) % 41 == 0) ns *= 6, ++stalls;
      profile.push_back({s, ns});
    }
  ASSERT_GT(stalls, 0);
  const zl::Calibration cal = zl::calibrate(profile, 2);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(cal.cost.decode_cold()[i], truth_cold[i], 0.02 * truth_cold[i] + 1) << i;
  for (int64_t n : {2, 5, 8}) {
    StepShape s;
    for (int64_t i = 0; i < n; ++i) s.parts.push_back({1, 100 + 5 * i, true});
    for (std::array<int64_t, 2> p : {std::array<int64_t, 2>{0, 0}, {128, 0}, {0, 64}, {200, 100}}) {
      s.prefilled_before = p;
      EXPECT_NEAR(cal.cost.step_ns(s), truth(s), 0.01 * truth(s)) << n << " decodes after " << p[0] << ", " << p[1];
    }
  }
}

TEST(ServingCalibration, TooFewStepsOfAKindAreRefused) {
  const zl::CalibratedCost truth(2, kAlone, kGrouped);
  std::vector<zl::ProfiledStep> profile;
  // 7 steps of one sequence (one group), 40 of four decodes (two groups).
  for (int i = 0; i < 7; ++i) profile.push_back({shape_of({1 + i}), 0});
  for (int i = 0; i < 40; ++i) profile.push_back({shape_of({1, 1, 1, 1 + i % 3}), 0});
  for (auto& p : profile) p.ns = truth.step_ns(p.shape);
  EXPECT_THROW(zl::calibrate(profile, 2), std::invalid_argument);
  profile.push_back({shape_of({9}), truth.step_ns(shape_of({9}))});  // the 8th
  EXPECT_NO_THROW(zl::calibrate(profile, 2));
  // And the other way round: plenty alone, 7 of several.
  std::vector<zl::ProfiledStep> alone;
  for (int i = 0; i < 40; ++i) alone.push_back({shape_of({1 + i}), truth.step_ns(shape_of({1 + i}))});
  for (int i = 0; i < 7; ++i) {
    const StepShape s = shape_of({1, 1, 1, 1 + i % 3});
    ASSERT_EQ(zl::team_groups(s, 2).size(), 2u);
    alone.push_back({s, truth.step_ns(s)});
  }
  EXPECT_THROW(zl::calibrate(alone, 2), std::invalid_argument);
}

TEST(ServingCalibration, ATeamOfOneNeedsOnlyStepsOfOneGroup) {
  // On one thread (threads = 1, or a one-core machine) DecodeStep::run_rows
  // never cuts a step, so a profile has no step of several groups and none
  // is needed: the fit of one group's coefficients is the whole model.
  const zl::CalibratedCost truth(1, kAlone, kAlone);
  std::mt19937_64 rng(3);
  std::vector<zl::ProfiledStep> profile;
  for (int i = 0; i < 100; ++i) {
    zl::ProfiledStep p;
    p.shape = random_shape(rng);
    ASSERT_EQ(zl::team_groups(p.shape, 1).size(), 1u);
    p.ns = truth.step_ns(p.shape);
    profile.push_back(p);
  }
  const zl::Calibration cal = zl::calibrate(profile, 1);
  for (int i = 0; i < 100; ++i) {
    const StepShape s = random_shape(rng);
    EXPECT_NEAR(cal.cost.step_ns(s), truth.step_ns(s), 0.001 * truth.step_ns(s));
  }
  profile.resize(7);
  EXPECT_THROW(zl::calibrate(profile, 1), std::invalid_argument);
}

}  // namespace
