// The continuous-batching scheduler of a serving engine, as vLLM's V1
// scheduler does it (vllm/v1/core/sched/scheduler.py): each step first
// schedules every running request (a decode, or the rest of a prefill)
// within a token budget, `max_num_batched_tokens`, then admits waiting
// requests in arrival order while the budget, `max_num_seqs` and the KV
// blocks allow, chunking a prefill that does not fit the budget. The KV
// cache is counted in blocks of `block_size` tokens (PagedAttention); when a
// running request needs a block and none is free, the latest admitted
// running request is preempted: its blocks are freed and it goes back to
// the head of the queue, to be recomputed from its prompt and the tokens it
// already produced (vLLM's preemption by recompute).
//
// It counts tokens and nothing else: the real server (sim/serving/engine.h)
// and the simulator (sim/serving/simulator.h) drive the same scheduler, so
// they make the same decisions whenever their steps take the same time.
#pragma once
#include <cstdint>
#include <deque>
#include <set>
#include <vector>

#include "sim/serving/cost_model.h"

namespace zl {

struct SchedulerOptions {
  int64_t block_size = 16;
  int64_t num_blocks = 0;               // the KV budget, in blocks
  int64_t max_num_seqs = 8;             // requests running at once (the cache's rows)
  int64_t max_num_batched_tokens = 256; // tokens fed per step
  int64_t held_token_cap = 0;           // an evicting cache holds at most this many tokens per request (0: all)
};

// One request's part of a step: feed `tokens` of its known tokens from
// position `start` (what its cache holds) into row `slot` of the cache.
struct ScheduledPart {
  int64_t request = 0;
  int64_t slot = 0;
  int64_t start = 0;
  int64_t tokens = 0;
  bool samples = false;     // the part reaches its last known token: a new token is sampled
  bool fresh_slot = false;  // the request took this row at this step (its row starts empty)
};

struct StepPlan {
  std::vector<ScheduledPart> parts;  // in slot order (the order a step feeds its rows)
  std::vector<int64_t> preempted;    // requests preempted while planning it
  bool after_idle = false;           // set by the serving loop: the step follows an idle wait
  std::array<int64_t, 2> prefilled_before{0, 0};  // set by the serving loop: StepShape's
  StepShape shape() const;
};

class Scheduler {
 public:
  // Throws std::invalid_argument naming the option that cannot work
  // (a budget of no blocks, no rows, no tokens).
  explicit Scheduler(SchedulerOptions opt);

  // A request arrives: `prompt_len` tokens known, `output_len` to produce.
  // Throws std::invalid_argument when it could never fit the KV budget.
  void add(int64_t request, int64_t prompt_len, int64_t output_len);

  // The next step; empty when nothing can run.
  StepPlan schedule();

  // After the step ran: every part's tokens are in the cache and each
  // sampling part produced a token, of which the newest `dropped[i]`
  // (i: the part's index, one entry per part) were taken back on review
  // (sfvl's re-sampling; all zero otherwise). Returns the requests that
  // finished.
  std::vector<int64_t> complete(const StepPlan& plan, const std::vector<int64_t>& dropped);

  bool idle() const { return waiting_.empty() && running_.empty(); }
  int64_t running() const { return running_.size(); }
  int64_t waiting() const { return waiting_.size(); }
  int64_t free_blocks() const { return free_blocks_; }
  int64_t preemptions(int64_t request) const { return seq(request).preemptions; }
  // Blocks a request holding `tokens` tokens needs.
  int64_t blocks_for(int64_t tokens) const;

 private:
  struct Seq {
    int64_t id = 0, prompt_len = 0, output_len = 0;
    int64_t known = 0;     // prompt + produced tokens kept
    int64_t computed = 0;  // tokens in the cache
    int64_t blocks = 0, slot = -1, preemptions = 0;
    bool finished = false;
  };
  Seq& seq(int64_t request);
  const Seq& seq(int64_t request) const;
  // Grows s's blocks to hold `tokens`; false (and nothing taken) when too few are free.
  bool reserve(Seq& s, int64_t tokens);
  void release(Seq& s);
  void preempt(Seq& s);

  SchedulerOptions opt_;
  std::vector<Seq> seqs_;           // by request id
  std::deque<int64_t> waiting_;     // arrival order; preempted requests go back to the front
  std::vector<int64_t> running_;    // admission order (the last is preempted first)
  std::set<int64_t> free_slots_;    // rows of the cache not in use
  int64_t free_blocks_ = 0;
};

}  // namespace zl
