#include "sim/serving/simulator.h"

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace zl {

SimulatedRunner::SimulatedRunner(const StepCostModel& cost, ResampleModel resample, uint64_t seed)
    : cost_(cost), resample_(std::move(resample)), rng_(seed) {}

int64_t SimulatedRunner::run(const StepPlan& plan, int64_t start_ns, std::vector<int64_t>& dropped) {
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    const auto& p = plan.parts[i];
    if (resample_.rate <= 0) break;
    if (p.request >= static_cast<int64_t>(reviews_.size())) reviews_.resize(p.request + 1);
    ReviewState& r = reviews_[p.request];
    if (p.fresh_slot) r.admitted();
    if (!p.samples) continue;
    if (!r.sampled(resample_.max_retries) || u(rng_) >= resample_.rate_at(r.produced(), r.kind())) continue;
    int64_t d = resample_.drop == "2" ? 2 : resample_.drop == "random" ? 1 + static_cast<int64_t>(rng_() % 2) : 1;
    d = std::min(d, r.produced());
    r.took_back(d);
    dropped[i] = d;
  }
  return start_ns + std::max<int64_t>(1, cost_.step_ns(plan.shape()));
}

int64_t ReplayRunner::run(const StepPlan& plan, int64_t start_ns, std::vector<int64_t>& dropped) {
  if (next_ >= steps_.size()) throw std::runtime_error("replay: more steps than were recorded");
  const StepRecord& r = steps_[next_++];
  if (r.dropped.size() != plan.parts.size())
    throw std::runtime_error("replay: step " + std::to_string(next_ - 1) + " was recorded with " +
                             std::to_string(r.dropped.size()) + " parts, planned with " + std::to_string(plan.parts.size()));
  dropped = r.dropped;
  return start_ns + (r.end_ns - r.start_ns);
}

ServeResult simulate(const StepCostModel& cost, const ResampleModel& resample, const std::vector<ServeRequest>& requests,
                     const SchedulerOptions& sched, uint64_t seed) {
  SimulatedRunner runner(cost, resample, seed);
  return serve(requests, sched, runner);
}

double simulated_capacity(const StepCostModel& cost, const ResampleModel& resample, std::vector<ServeRequest> requests,
                          const SchedulerOptions& sched, uint64_t seed) {
  for (auto& q : requests) q.arrival_ns = 0;
  const ServeResult res = simulate(cost, resample, requests, sched, seed);
  int64_t first_end = INT64_MAX, last_full = 0;
  for (const auto& r : res.requests)
    if (!r.token_ns.empty()) first_end = std::min(first_end, r.token_ns.back());
  for (const auto& s : res.steps)
    if (s.waiting > 0) last_full = s.end_ns;
  int64_t done = 0;
  for (const auto& r : res.requests) done += !r.token_ns.empty() && r.token_ns.back() > first_end && r.token_ns.back() <= last_full;
  // Too few requests to fill the server for long: the whole run's rate.
  if (last_full <= first_end || done < 3) return serving_metrics(res.requests, Slo{}).request_throughput;
  return done / ((last_full - first_end) * 1e-9);
}

double max_rate_meeting(const StepCostModel& cost, const ResampleModel& resample,
                        const std::function<std::vector<ServeRequest>(double rate)>& workload,
                        const SchedulerOptions& sched, const Slo& slo, double target, double capacity, uint64_t seed) {
  auto meets = [&](double rate) {
    return slo_attainment(simulate(cost, resample, workload(rate), sched, seed).requests, slo) >= target;
  };
  double lo = 0.01 * capacity, hi = 3 * capacity;
  if (!meets(lo)) return 0;
  if (meets(hi)) return hi;
  while (hi - lo > 1e-3 * capacity) {
    const double mid = 0.5 * (lo + hi);
    (meets(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace zl
