// The serving loop: requests arrive, the scheduler (sim/serving/scheduler.h)
// plans a step, a StepRunner runs it, and every token sampled and kept is
// sent at the step's end. The same loop drives the real server (the runner
// decodes: sim/serving/engine.h) and the simulator (the runner predicts the
// step's duration: sim/serving/simulator.h), so the two differ only in how
// long a step takes and what a review takes back.
//
// Time is integer nanoseconds since the first arrival, and the loop reads it
// only from its runner: a step starts where the last one ended (or, idle, at
// the next arrival) and ends when the runner says. A replay of recorded
// step durations therefore gives back the recorded timeline exactly.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/serving/cost_model.h"
#include "sim/serving/scheduler.h"
#include "sim/serving/serving_metrics.h"
#include "sim/serving/workload.h"

namespace zl {

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  // Runs `plan`, which starts at `start_ns`; returns when it ended and sets
  // dropped[i], the newest tokens part i's review took back (sfvl; else 0).
  virtual int64_t run(const StepPlan& plan, int64_t start_ns, std::vector<int64_t>& dropped) = 0;
  // Nothing to run until `ns` (the next arrival): the real server waits for it.
  virtual void wait_until(int64_t /*ns*/) {}
};

// One step as it ran.
struct StepRecord {
  int64_t start_ns = 0, end_ns = 0;
  StepShape shape;
  std::vector<int64_t> requests;  // per part: the request it feeds
  std::vector<int64_t> dropped;   // per part
  int64_t running = 0, waiting = 0, preempted = 0;  // the scheduler's queues when it was planned
  int64_t free_blocks = 0;                          // after planning
};

struct ServeResult {
  std::vector<RequestRecord> requests;  // by request id
  std::vector<StepRecord> steps;
};

// Serves `requests` (arrival order) to the end. Throws std::invalid_argument
// when a request cannot fit the scheduler's budget at all.
ServeResult serve(const std::vector<ServeRequest>& requests, const SchedulerOptions& opt, StepRunner& runner);

}  // namespace zl
