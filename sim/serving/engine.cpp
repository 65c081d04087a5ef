#include "sim/serving/engine.h"

#include <stdexcept>
#include <thread>

namespace zl {

ServingEngine::ServingEngine(Transformer model, const std::vector<ServeRequest>& requests, const DecodeOptions& opt,
                             DecodeHook* hook, int64_t max_num_seqs, uint64_t seed)
    : model_(std::move(model)), requests_(requests), opt_(opt), hook_(hook), gen_(make_generator(seed)) {
  torch::NoGradGuard no_grad;
  model_->eval();
  std::string why;
  if (!DecodeStep::supports(model_, &why))
    throw std::invalid_argument("this model cannot be served: the server runs on the fast decode step, and " + why);
  step_ = std::make_unique<DecodeStep>(model_);
  cache_ = model_->make_cache(max_num_seqs, 0, opt_.eviction);
  tokens_.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) tokens_[i] = requests[i].prompt;
  rows_.resize(max_num_seqs);
  temperature_.assign(max_num_seqs, opt_.sampling.temperature);
  if (hook_) hook_->begin_batch(max_num_seqs);
  start();
}

void ServingEngine::start() { t0_ = std::chrono::steady_clock::now(); }

int64_t ServingEngine::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
}

void ServingEngine::wait_until(int64_t ns) {
  // Sleep most of the way (the OS wakes us late by tens of µs), spin the rest.
  const int64_t slack = 200'000;
  if (ns - now_ns() > slack) std::this_thread::sleep_for(std::chrono::nanoseconds(ns - now_ns() - slack));
  while (now_ns() < ns) {
  }
}

void ServingEngine::reset_row(int64_t slot) {
  // A row starts empty: what it held before is never read again (stale slots
  // past a length are masked, and rewritten when their position is fed).
  cache_.lengths.data_ptr<int64_t>()[slot] = 0;
  if (cache_.evicting()) cache_.held.data_ptr<int64_t>()[slot] = 0;
}

int64_t ServingEngine::run(const StepPlan& plan, int64_t start_ns, std::vector<int64_t>& dropped) {
  torch::NoGradGuard no_grad;
  std::vector<DecodeStep::Feed> feeds;
  std::vector<size_t> sampling;  // parts that sample, in feed order
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    const auto& p = plan.parts[i];
    if (p.fresh_slot) {
      reset_row(p.slot);
      temperature_[p.slot] = opt_.sampling.temperature;
      if (hook_) hook_->begin_sequence(p.slot, requests_[p.request].prompt.size());
    }
    const auto& t = tokens_[p.request];
    feeds.push_back({p.slot, std::vector<int64_t>(t.begin() + p.start, t.begin() + p.start + p.tokens), p.samples});
    if (p.samples) sampling.push_back(i);
  }
  if (hook_) {
    const int64_t* length = cache_.lengths.data_ptr<int64_t>();
    std::vector<DecodeHook::Fed> fed;
    for (const auto& f : feeds)
      fed.push_back({f.sequence, length[f.sequence], f.tokens.data(), static_cast<int64_t>(f.tokens.size())});
    hook_->before_step(fed, cache_.batch());
  }
  auto logits = step_->feed(feeds, cache_);  // [S,V], the sampling parts in order
  if (!sampling.empty()) {
    auto next = sample_next(logits, opt_.sampling, gen_);  // [S]
    for (size_t s = 0; s < sampling.size(); ++s) {
      const double temp = temperature_[plan.parts[sampling[s]].slot];
      if (temp == opt_.sampling.temperature) continue;
      SamplingOptions hot = opt_.sampling;
      hot.temperature = temp;
      next[s] = sample_next(logits.narrow(0, s, 1), hot, gen_)[0];
    }
    const int64_t* id = next.data_ptr<int64_t>();
    for (size_t s = 0; s < sampling.size(); ++s) tokens_[plan.parts[sampling[s]].request].push_back(id[s]);
  }
  if (hook_ && !sampling.empty()) {
    const auto review_start = std::chrono::steady_clock::now();
    std::vector<bool> active(rows_.size(), false);
    for (size_t i : sampling) {
      const auto& p = plan.parts[i];
      std::swap(rows_[p.slot], tokens_[p.request]);  // lent to the hook, given back below
      active[p.slot] = true;
    }
    DecodeHook::Verdict v = hook_->review(rows_, active);
    for (size_t i : sampling) {
      const auto& p = plan.parts[i];
      std::swap(rows_[p.slot], tokens_[p.request]);
      auto& t = tokens_[p.request];
      const int64_t produced = t.size() - requests_[p.request].prompt.size();
      const int64_t d = std::min<int64_t>(v.drop[p.slot], produced);
      temperature_[p.slot] = d > 0 ? v.temperature[p.slot] : opt_.sampling.temperature;
      if (d == 0) continue;
      t.resize(t.size() - d);
      cache_.truncate(p.slot, static_cast<int64_t>(t.size()) - 1);  // the newest kept token is fed again
      dropped[i] = d;
    }
    hook_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - review_start).count();
  }
  return now_ns();
}

}  // namespace zl
