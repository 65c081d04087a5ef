// decoder → metrics, across runs: the timed passes of the arms that a claim
// compares (decode.timing = paired). Timed each in its own process, minutes
// apart, two arms met different load on a shared machine, and a seed's
// throughput ratio moved by a quarter between two runs of the same study
// (issue 12). Here the complete runs of one seed are opened together, warmed
// up, and timed pass by pass, round after round, each round in an order drawn
// afresh, so every arm of a seed sees the same stretch of machine time; each
// shard then gets its timing metrics and tables, written atomically.
#pragma once
#include <string>
#include <vector>

#include "sim/config.h"

namespace zl {

struct TimedRun {
  RunConfig cfg;
  std::string shard;  // its complete shard, runs/<run_id>.h5
};

// True when `run` has decode.timing = paired and its shard is complete but
// has no timing metrics yet.
bool awaits_paired_timing(const TimedRun& run);

// Times every seed among `runs` (complete shards) that has a run awaiting
// paired timing: all of that seed's runs with decode.timing = paired,
// together (those that decode on the fast step, then those on the
// reference step: the two kinds disturb each other interleaved), so a
// resumed study re-times a seed whose timing a kill cut short. Calls throw_if_stop_requested between passes. Returns the number
// of runs timed. Two processes on one folder take turns, by a lock per seed
// under `lock_dir`: the second finds the seed timed and leaves it.
int time_paired(const std::vector<TimedRun>& runs, const std::string& lock_dir, bool verbose);

}  // namespace zl
