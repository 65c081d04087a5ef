#include "sim/study/paired_timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <random>

#include "sim/open_run.h"
#include "sim/results.h"
#include "sim/util/file_lock.h"
#include "sim/util/stop.h"

namespace zl {

bool awaits_paired_timing(const TimedRun& run) {
  if (run.cfg.decode.timing != "paired") return false;
  const auto rows = read_index(run.shard);
  if (rows.size() != 1 || rows[0].strings.at("status") != "complete") return false;
  auto it = rows[0].numbers.find("decode_tok_s");
  return it == rows[0].numbers.end() || !std::isfinite(it->second);
}

namespace {

// One seed's arms on one decode step: opened, warmed up, then timed round by
// round. `step` names the step in the message.
void time_seed(const std::vector<const TimedRun*>& group, const char* step, bool verbose) {
  std::vector<std::unique_ptr<OpenRun>> arms;
  for (const TimedRun* t : group) {
    throw_if_stop_requested("while opening run " + run_id(t->cfg) + " for paired timing");
    RunRecord scratch;  // the figures of training and preparation are in the shard already
    // A calibrated run decodes at the knob it solved (in its shard), not at a second search's.
    std::optional<double> knob;
    const auto rows = read_index(t->shard);
    if (rows.size() == 1 && rows[0].numbers.count("calibrated_knob_value"))
      knob = rows[0].numbers.at("calibrated_knob_value");
    arms.push_back(open_run(t->cfg, scratch, /*with_judge=*/false, knob));
  }
  const size_t n = arms.size();
  int64_t rounds = 0;
  for (const auto& a : arms) rounds = std::max(rounds, a->cfg.decode.repeats);
  // Warm-up: each arm's first pass in this process (its weights into cache,
  // its buffers allocated) is not timed, as the quality pass warms a run up
  // when decode.timing = run.
  for (auto& a : arms) {
    PassTimings discard;
    timed_pass(*a, -1, discard);
  }
  // A round is one timed pass of every arm, in an order drawn afresh for
  // each round (seeded, so a study repeats it). A fixed rotation put each
  // arm always right after the same neighbour, and the A/A arm, always
  // second after its twin, came out 2.5% slower on average (15 seeds over
  // five claims studies, issue 12); a fresh order leaves no arm a fixed
  // place or neighbour.
  // (Interleaving batch by batch did not pair the arms better: a batch is
  // about 12 ms, under the machine's own jitter, and eight decode calls a
  // pass paid eight cold starts of the step's thread team.)
  std::vector<PassTimings> timings(n);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(0x7A11ED0ull + static_cast<uint64_t>(group.front()->cfg.seed));
  for (int64_t round = 0; round < rounds; ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t k : order) {
      if (round >= arms[k]->cfg.decode.repeats) continue;
      throw_if_stop_requested("while timing run " + run_id(arms[k]->cfg));
      timed_pass(*arms[k], round, timings[k]);
    }
  }
  for (size_t k = 0; k < n; ++k) {
    const std::string& path = group[k]->shard;
    RunRecord r = read_shard(path);
    timings[k].write(r);
    arms[k]->stage->add_timing(*arms[k]->ctx, r);
    r.metrics["decode_timing_arms"] = static_cast<double>(n);
    write_shard(path, read_provenance(path), r);
  }
  if (verbose)
    std::fprintf(stderr, "timed seed %lld: %zu arm%s%s, %lld passes each, interleaved\n",
                 static_cast<long long>(group.front()->cfg.seed), n, n == 1 ? "" : "s", step,
                 static_cast<long long>(rounds));
}

}  // namespace

int time_paired(const std::vector<TimedRun>& runs, const std::string& lock_dir, bool verbose) {
  std::map<int64_t, std::vector<const TimedRun*>> by_seed;
  std::map<const TimedRun*, bool> on_fast_step;
  for (const auto& t : runs) {
    if (t.cfg.decode.timing != "paired") continue;
    const auto rows = read_index(t.shard);
    if (rows.size() != 1 || rows[0].strings.at("status") != "complete") continue;
    by_seed[t.cfg.seed].push_back(&t);
    auto fast = rows[0].numbers.find("decode_fast_step");
    on_fast_step[&t] = fast == rows[0].numbers.end() || fast->second != 0;
  }
  auto pending = [](const std::vector<const TimedRun*>& group) {
    for (const TimedRun* t : group)
      if (awaits_paired_timing(*t)) return true;
    return false;
  };
  int timed = 0;
  for (const auto& [seed, group] : by_seed) {
    if (!pending(group)) continue;
    FileLock lock(lock_dir + "/timing-seed" + std::to_string(seed) + ".lock");
    lock.lock([&] { throw_if_stop_requested("while waiting to time seed " + std::to_string(seed)); });
    if (!pending(group)) continue;  // another process timed it while we waited
    // The arms on the fast step first, then those on the reference step,
    // each kind interleaved among itself. Interleaved together, the two
    // slowed each other (a smoke study's two arms: the fast step 29k tokens/s
    // against 100-140k timed apart, the reference step 3.5-5k against
    // 11-14k). Two thread pools take turns on the same cores, LibTorch's
    // OpenMP team (which spins after a parallel region) and the fast step's
    // (which switches LibTorch to one thread and back); which of them costs
    // what is not yet measured. No claim compares the two steps' speeds.
    std::vector<const TimedRun*> fast, reference;
    for (const TimedRun* t : group) (on_fast_step.at(t) ? fast : reference).push_back(t);
    const bool both = !fast.empty() && !reference.empty();
    if (!fast.empty()) time_seed(fast, both ? " on the fast step" : "", verbose);
    if (!reference.empty()) time_seed(reference, both ? " on the reference step" : "", verbose);
    timed += static_cast<int>(group.size());
  }
  return timed;
}

}  // namespace zl
