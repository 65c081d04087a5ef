// The serving simulator: the serving loop (sim/serving/serve_loop.h) with
// a runner that runs nothing. A step lasts what a cost model predicts for
// its shape (sim/serving/cost_model.h), and re-sampling (sfvl) takes tokens
// back at the rate measured on the real decode, drawn from a seeded stream.
// Or it replays recorded steps, durations and drops, as they ran: the test
// that the simulator's bookkeeping is the real server's.
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "sim/serving/cost_model.h"
#include "sim/serving/resample.h"
#include "sim/serving/serve_loop.h"
#include "sim/serving/serving_metrics.h"

namespace zl {

class SimulatedRunner : public StepRunner {
 public:
  SimulatedRunner(const StepCostModel& cost, ResampleModel resample = {}, uint64_t seed = 0);
  int64_t run(const StepPlan& plan, int64_t start_ns, std::vector<int64_t>& dropped) override;

 private:
  const StepCostModel& cost_;
  ResampleModel resample_;
  std::mt19937_64 rng_;
  std::vector<ReviewState> reviews_;  // by request
};

// Gives back recorded steps in order: each one's duration and drops.
class ReplayRunner : public StepRunner {
 public:
  explicit ReplayRunner(std::vector<StepRecord> steps) : steps_(std::move(steps)) {}
  int64_t run(const StepPlan& plan, int64_t start_ns, std::vector<int64_t>& dropped) override;

 private:
  std::vector<StepRecord> steps_;
  size_t next_ = 0;
};

// Serves `requests` on the simulator.
ServeResult simulate(const StepCostModel& cost, const ResampleModel& resample, const std::vector<ServeRequest>& requests,
                     const SchedulerOptions& sched, uint64_t seed);

// Requests per second the server completes while it is full: `requests`
// all arrive at once (their arrival times are ignored), and the rate is
// counted from the first request's end to the last step that still had a
// request waiting, so that neither the ramp-up nor the tail, where the last
// requests run in a thinning batch, lowers it. The capacity that loads are
// shares of.
double simulated_capacity(const StepCostModel& cost, const ResampleModel& resample, std::vector<ServeRequest> requests,
                          const SchedulerOptions& sched, uint64_t seed);

// The highest rate at which the share of requests meeting `slo` reaches
// `target`, by bisection between 1% and 300% of `capacity`, each rate
// served on `workload(rate)`; 0 when even the lowest misses.
double max_rate_meeting(const StepCostModel& cost, const ResampleModel& resample,
                        const std::function<std::vector<ServeRequest>(double rate)>& workload,
                        const SchedulerOptions& sched, const Slo& slo, double target, double capacity, uint64_t seed);

}  // namespace zl
