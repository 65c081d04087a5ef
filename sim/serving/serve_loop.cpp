#include "sim/serving/serve_loop.h"

#include <algorithm>
#include <stdexcept>

namespace zl {

ServeResult serve(const std::vector<ServeRequest>& requests, const SchedulerOptions& opt, StepRunner& runner) {
  Scheduler scheduler(opt);
  ServeResult out;
  out.requests.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].id != static_cast<int64_t>(i)) throw std::invalid_argument("serve: request ids must be 0..n-1 in order");
    out.requests[i].id = requests[i].id;
    out.requests[i].arrival_ns = requests[i].arrival_ns;
    out.requests[i].prompt_len = requests[i].prompt.size();
  }
  size_t next = 0, finished = 0;
  int64_t now = requests.empty() ? 0 : requests.front().arrival_ns;
  std::vector<int64_t> dropped;
  bool waited = false;
  std::array<int64_t, 2> prefilled{0, 0};  // StepShape::prefilled_before of the next step
  while (finished < requests.size()) {
    for (; next < requests.size() && requests[next].arrival_ns <= now; ++next)
      scheduler.add(requests[next].id, requests[next].prompt.size(), requests[next].output_len);
    if (scheduler.idle()) {
      now = requests[next].arrival_ns;
      runner.wait_until(now);
      waited = true;
      prefilled = {0, 0};
      continue;
    }
    StepRecord rec;
    rec.running = scheduler.running();
    rec.waiting = scheduler.waiting();
    StepPlan plan = scheduler.schedule();
    plan.after_idle = waited;
    plan.prefilled_before = prefilled;
    waited = false;
    rec.preempted = plan.preempted.size();
    rec.free_blocks = scheduler.free_blocks();
    if (plan.parts.empty()) throw std::logic_error("serve: the scheduler planned an empty step with requests pending");
    dropped.assign(plan.parts.size(), 0);
    rec.start_ns = now;
    rec.end_ns = now = runner.run(plan, now, dropped);
    for (size_t i = 0; i < plan.parts.size(); ++i) {
      if (!plan.parts[i].samples) continue;
      auto& times = out.requests[plan.parts[i].request].token_ns;
      times.push_back(now);
      times.resize(times.size() - std::min<size_t>(times.size(), dropped[i]));
    }
    for (int64_t id : scheduler.complete(plan, dropped)) {
      out.requests[id].preemptions = scheduler.preemptions(id);
      ++finished;
    }
    rec.shape = plan.shape();
    prefilled = {rec.shape.prefill_tokens(), prefilled[0] + prefilled[1] / 2};
    for (const auto& p : plan.parts) rec.requests.push_back(p.request);
    rec.dropped = dropped;
    out.steps.push_back(std::move(rec));
  }
  return out;
}

}  // namespace zl
