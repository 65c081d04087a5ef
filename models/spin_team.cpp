#include "models/spin_team.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ZL_PAUSE() _mm_pause()
#else
#define ZL_PAUSE() std::this_thread::yield()
#endif

namespace zl {

namespace {
// How long a worker spins for the next part before it sleeps: several decode
// steps' worth of gaps (sampling, the hook), a negligible share of a second.
constexpr auto kSpin = std::chrono::microseconds(200);
}  // namespace

SpinTeam::SpinTeam(int threads) {
  for (int id = 1; id < threads; ++id) workers_.emplace_back([this] { work(); });
}

SpinTeam::~SpinTeam() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void SpinTeam::run(int parts, const std::function<void(int)>& part) {
  if (workers_.empty() || parts <= 1) {
    for (int i = 0; i < parts; ++i) part(i);
    return;
  }
  task_ = &part;
  parts_ = parts;
  next_.store(0, std::memory_order_relaxed);
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    // Publishing under the mutex orders it before any sleeper's re-check.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_acquire) > 0) wake_.notify_all();
  claim(part);  // the caller takes parts too
  // Waiting for the others: after a few microseconds, yield the core between
  // checks, in case a member shares it with us (the scheduler put it there
  // while the other core was busy) and can only finish when we let it run.
  for (int spins = 0; pending_.load(std::memory_order_acquire) > 0; ++spins) {
    if (spins < 2048)
      ZL_PAUSE();
    else
      std::this_thread::yield();
  }
  task_ = nullptr;
}

void SpinTeam::claim(const std::function<void(int)>& part) {
  for (;;) {
    const int i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= parts_) return;
    part(i);
  }
}

void SpinTeam::work() {
  uint64_t seen = 0;
  for (;;) {
    // Spin for the next run, then sleep until one comes.
    const auto until = std::chrono::steady_clock::now() + kSpin;
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && !stop_.load(std::memory_order_relaxed)) {
      ZL_PAUSE();
      if (++spins % 256 != 0) continue;
      std::this_thread::yield();  // as in run(): let a thread that shares this core go on
      if (std::chrono::steady_clock::now() > until) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1, std::memory_order_acq_rel);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen || stop_.load(); });
        sleepers_.fetch_sub(1, std::memory_order_acq_rel);
        break;
      }
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    claim(*task_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace zl
