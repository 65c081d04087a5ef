#include "sim/serving/scheduler.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace zl {

StepShape StepPlan::shape() const {
  StepShape s;
  for (const auto& p : parts) s.parts.push_back({p.tokens, p.start, p.samples});
  s.after_idle = after_idle;
  s.prefilled_before = prefilled_before;
  return s;
}

Scheduler::Scheduler(SchedulerOptions opt) : opt_(opt), free_blocks_(opt.num_blocks) {
  if (opt.block_size < 1) throw std::invalid_argument("serve.block_size must be >= 1, got " + std::to_string(opt.block_size));
  if (opt.num_blocks < 1) throw std::invalid_argument("the KV budget holds no block (" + std::to_string(opt.num_blocks) + ")");
  if (opt.max_num_seqs < 1)
    throw std::invalid_argument("serve.max_num_seqs must be >= 1, got " + std::to_string(opt.max_num_seqs));
  if (opt.max_num_batched_tokens < 1)
    throw std::invalid_argument("serve.max_num_batched_tokens must be >= 1, got " +
                                std::to_string(opt.max_num_batched_tokens));
  for (int64_t s = 0; s < opt.max_num_seqs; ++s) free_slots_.insert(s);
}

int64_t Scheduler::blocks_for(int64_t tokens) const {
  // An evicting cache writes a token before it evicts one: cap + 1 slots at most.
  if (opt_.held_token_cap > 0) tokens = std::min(tokens, opt_.held_token_cap + 1);
  return (tokens + opt_.block_size - 1) / opt_.block_size;
}

Scheduler::Seq& Scheduler::seq(int64_t request) { return seqs_.at(request); }
const Scheduler::Seq& Scheduler::seq(int64_t request) const { return seqs_.at(request); }

void Scheduler::add(int64_t request, int64_t prompt_len, int64_t output_len) {
  if (prompt_len < 1 || output_len < 1) throw std::invalid_argument("a request needs a prompt and at least one output token");
  // Its whole life (prompt, then every token but the last fed back) must fit
  // the budget alone, or it would preempt itself for ever.
  const int64_t need = blocks_for(prompt_len + output_len - 1);
  if (need > opt_.num_blocks)
    throw std::invalid_argument("the KV budget of " + std::to_string(opt_.num_blocks) + " blocks of " +
                                std::to_string(opt_.block_size) + " tokens cannot hold one request of " +
                                std::to_string(prompt_len) + " + " + std::to_string(output_len) + " tokens (" +
                                std::to_string(need) + " blocks): raise serve.kv_budget_mb");
  if (request >= static_cast<int64_t>(seqs_.size())) seqs_.resize(request + 1);
  Seq& s = seqs_[request];
  s = Seq{};
  s.id = request;
  s.prompt_len = s.known = prompt_len;
  s.output_len = output_len;
  waiting_.push_back(request);
}

bool Scheduler::reserve(Seq& s, int64_t tokens) {
  const int64_t more = blocks_for(tokens) - s.blocks;
  if (more <= 0) return true;
  if (more > free_blocks_) return false;
  free_blocks_ -= more;
  s.blocks += more;
  return true;
}

void Scheduler::release(Seq& s) {
  free_blocks_ += s.blocks;
  s.blocks = 0;
  if (s.slot >= 0) free_slots_.insert(s.slot);
  s.slot = -1;
}

void Scheduler::preempt(Seq& s) {
  release(s);
  s.computed = 0;  // recomputed from prompt + produced tokens when it runs again
  ++s.preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), s.id));
  waiting_.push_front(s.id);
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  int64_t budget = opt_.max_num_batched_tokens;
  // Running requests first, in admission order.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Seq& s = seq(running_[i]);
    const int64_t n = std::min(s.known - s.computed, budget);
    bool self_preempted = false;
    while (!reserve(s, s.computed + n)) {
      Seq& victim = seq(running_.back());
      plan.preempted.push_back(victim.id);
      self_preempted = victim.id == s.id;
      preempt(victim);
      if (self_preempted) break;
    }
    if (self_preempted) break;
    plan.parts.push_back({s.id, s.slot, s.computed, n, s.computed + n == s.known, false});
    budget -= n;
    ++i;
  }
  // Then waiting ones in order, unless this step had to preempt (vLLM admits
  // nothing new while it is short of blocks).
  while (plan.preempted.empty() && !waiting_.empty() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < opt_.max_num_seqs) {
    Seq& s = seq(waiting_.front());
    const int64_t n = std::min(s.known - s.computed, budget);
    if (!reserve(s, s.computed + n)) break;
    waiting_.pop_front();
    s.slot = *free_slots_.begin();  // the lowest free row
    free_slots_.erase(free_slots_.begin());
    running_.push_back(s.id);
    plan.parts.push_back({s.id, s.slot, s.computed, n, s.computed + n == s.known, true});
    budget -= n;
  }
  std::sort(plan.parts.begin(), plan.parts.end(),
            [](const ScheduledPart& a, const ScheduledPart& b) { return a.slot < b.slot; });
  return plan;
}

std::vector<int64_t> Scheduler::complete(const StepPlan& plan, const std::vector<int64_t>& dropped) {
  if (dropped.size() != plan.parts.size()) throw std::invalid_argument("Scheduler::complete: one drop count per part");
  std::vector<int64_t> finished;
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    const ScheduledPart& p = plan.parts[i];
    Seq& s = seq(p.request);
    s.computed = p.start + p.tokens;
    if (!p.samples) continue;
    // The sampled token is known but not yet in the cache; a review may take
    // back the newest tokens, and the newest kept one is fed again.
    s.known += 1 - dropped[i];
    s.computed = std::min(s.computed, s.known - 1);
    if (s.known - s.prompt_len >= s.output_len) {
      s.finished = true;
      release(s);
      running_.erase(std::find(running_.begin(), running_.end(), s.id));
      finished.push_back(s.id);
    }
  }
  return finished;
}

}  // namespace zl
