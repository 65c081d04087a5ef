// A small team of threads for work split into parts of a few microseconds:
// the sequence groups of one decode step, or the products and attention
// heads of a single sequence's (models/decode_step.h). Workers spin for a
// short while after each run (the next one comes within microseconds: a run
// with nothing to do takes about 1 µs here) and then sleep, so an idle team
// costs nothing. (An earlier comparison with LibTorch's at::parallel_for,
// which found it no faster than one thread, was void: our code was not
// compiled with OpenMP then, so at::parallel_for ran serially.)
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zl {

class SpinTeam {
 public:
  // `threads` in all, the caller's included (1 = everything on the caller).
  explicit SpinTeam(int threads);
  ~SpinTeam();
  SpinTeam(const SpinTeam&) = delete;
  SpinTeam& operator=(const SpinTeam&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs part(i) for i in [0, parts) across the team and returns when all
  // are done. Members, the caller among them, claim parts one at a time, so
  // a member on a slower core (a busy neighbour on its physical core, seen
  // here: 2/3 of the other's speed) takes fewer of them. Not re-entrant.
  void run(int parts, const std::function<void(int)>& part);

 private:
  void work();
  void claim(const std::function<void(int)>& part);  // runs parts until none is left

  // What members poll or write at every run sits on lines of its own (128
  // bytes: a line and the neighbour the prefetcher pairs with it), and the
  // team is aligned to them: a member spinning on a line that the caller
  // writes for other reasons makes every such write a transfer between
  // cores. Where the heap happened to put the team decided whether a decode
  // ran at 25k or 48k tokens/s here (the same run, with the study file's
  // path given absolute or relative).
  static constexpr size_t kLine = 128;
  alignas(kLine) std::atomic<uint64_t> generation_{0};  // bumped once per run
  const std::function<void(int)>* task_ = nullptr;      // this run's, set before the bump
  int parts_ = 0;
  std::atomic<bool> stop_{false};
  alignas(kLine) std::atomic<int> next_{0};     // the next unclaimed part
  alignas(kLine) std::atomic<int> pending_{0};  // workers still busy with this run
  alignas(kLine) std::atomic<int> sleepers_{0};
  std::mutex mutex_;  // for sleeping workers only
  std::condition_variable wake_;
  std::vector<std::thread> workers_;
};

}  // namespace zl
