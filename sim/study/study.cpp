#include "sim/study/study.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include <c10/util/Exception.h>

#include "datasets/atomic_file.h"
#include "sim/memory_estimate.h"
#include "sim/provenance.h"
#include "sim/results.h"
#include "sim/run/run.h"
#include "sim/run_identity.h"
#include "sim/runtime.h"
#include "sim/study/paired_timing.h"
#include "sim/training_code.h"
#include "sim/util/file_lock.h"
#include "sim/util/progress.h"
#include "sim/util/stop.h"

namespace zl {
namespace fs = std::filesystem;

namespace {

// "complete", "failed", "missing", or "corrupt: <why>".
std::string shard_status(const std::string& path) {
  if (!fs::exists(path)) return "missing";
  try {
    auto rows = read_index(path);
    if (rows.size() != 1) return "corrupt: expected one index row";
    return rows[0].strings.at("status");
  } catch (const std::exception& e) {
    return std::string("corrupt: ") + e.what();
  }
}

// The keys the grid sweeps, other than the seed: they name a row of the summary.
std::vector<std::string> setting_keys(const Study& s) {
  std::vector<std::string> keys;
  for (const auto& axis : s.axes)
    for (const auto& k : axis.keys)
      if (k != "seed" && k != "variant") keys.push_back(k);
  return keys;
}

std::string describe(const RunConfig& c, const std::vector<std::string>& keys) {
  std::string d = c.variant + " seed=" + std::to_string(c.seed);
  for (const auto& k : keys) d += " " + k + "=" + find_key(k)->get(c);
  return d;
}

// Where `key` was set for the study's runs, for an error's "file:line: key":
// the grid axis that sweeps it, else the file or command line that set it.
Origin origin_of(const Study& s, const std::string& key) {
  for (const auto& axis : s.axes)
    for (size_t j = 0; j < axis.keys.size(); ++j)
      if (axis.keys[j] == key) return axis.origins[j];
  const auto it = s.origins.find(key);
  return it == s.origins.end() ? Origin{} : it->second;
}

// What would fail a run only after its model has trained (a served run's KV
// budget, accelerators and shapes: sim/run/run.h's serving_problem) refuses
// the study now, naming the key where it was set. Every run of the study,
// not only this slice's: the slices of a sharded study are refused alike
// (docs/serving.md#errors-and-what-cannot-be-served).
void refuse_what_fails_late(const Study& study, const std::vector<RunConfig>& runs) {
  for (const auto& c : runs) {
    const std::string problem = serving_problem(c);
    if (problem.empty()) continue;
    const auto colon = problem.find(": ");
    const std::string key = problem.substr(0, colon);
    throw ConfigError(origin_of(study, key).str(key) + problem.substr(colon));
  }
}

}  // namespace

int run_study(const Study& study, const StudyOptions& opt) {
  // Each run's identity resolved once (sim/run_identity.h). Dedupe: two grid
  // points can resolve to one run (another variant's key swept).
  std::vector<RunConfig> runs;
  std::vector<RunIdentity> ids;
  std::set<std::string> seen;
  for (auto& c : study.expand()) {
    RunIdentity id = identify(c);
    if (!seen.insert(id.run_id).second) continue;
    runs.push_back(c);
    ids.push_back(std::move(id));
  }
  std::vector<RunConfig> mine;
  std::vector<RunIdentity> my_ids;
  for (size_t i = 0; i < runs.size(); ++i)
    if (static_cast<int>(i % opt.shard_count) == opt.shard_index) {
      mine.push_back(runs[i]);
      my_ids.push_back(ids[i]);
    }
  const auto keys = setting_keys(study);
  // A run that cannot work is refused before anything is made, the folder
  // included: one that would fail after training, and one this machine
  // cannot hold (sim/memory_estimate.h; train.memory_check = off runs it anyway).
  refuse_what_fails_late(study, runs);
  check_memory(mine);
  const std::string dir = study.base.output.dir;
  fs::create_directories(fs::path(dir) / "runs");

  if (opt.dry_run) {
    // The train id beside the run id: runs that share one say which checkpoint they decode.
    for (size_t i = 0; i < mine.size(); ++i)
      std::printf("%s  %s  %-9s %s\n", my_ids[i].run_id.c_str(), my_ids[i].train_id.c_str(),
                  shard_status(my_ids[i].shard).c_str(), describe(mine[i], keys).c_str());
    std::printf("%zu runs in this slice (%zu in the study)\n", mine.size(), runs.size());
    return 0;
  }

  // Two processes on one folder (two `ablate`s, shards that overlap) share
  // the work: a run is claimed by a lock (output.dir/locks/<run_id>.lock)
  // before it starts; a run another process holds is left to it and waited
  // for at the end. A lock whose holder died is free again (sim/util/file_lock.h),
  // so a run it left unfinished is run here then.
  int failures = 0;
  const bool verbose = study.base.output.verbosity > 0;
  if (int n = remove_stale_temporaries(dir); n > 0 && verbose)
    std::fprintf(stderr, "removed %d temporary file(s) that killed processes left under %s\n", n, dir.c_str());
  Progress progress("study " + study.name, static_cast<int64_t>(mine.size()), verbose);
  auto run_one = [&](size_t i) {
    const RunConfig& c = mine[i];
    const std::string& path = my_ids[i].shard;
    const std::string status = shard_status(path);
    if (status == "complete") return;
    if (status.rfind("corrupt", 0) == 0) {
      // Set aside, not deleted: whatever damaged it, the file is evidence.
      const std::string aside = path + ".corrupt";
      fs::rename(path, aside);
      std::fprintf(stderr, "%s: %s; set aside as %s, running the run again\n", path.c_str(), status.c_str(),
                   aside.c_str());
    }
    progress.finish();
    if (verbose) std::fprintf(stderr, "[%zu/%zu] %s %s\n", i + 1, mine.size(), my_ids[i].run_id.c_str(),
                              describe(c, keys).c_str());
    RunRecord record;
    try {
      record = execute_run(c);
    } catch (const StopRequested&) {
      throw;  // not a failure of the run: no shard, and the study stops (below)
    } catch (const c10::Error& e) {
      record = failed_run(c, e.what_without_backtrace());
      std::fprintf(stderr, "run %s failed: %s\n", record.run_id.c_str(), record.error.c_str());
    } catch (const std::exception& e) {
      record = failed_run(c, e.what());
      std::fprintf(stderr, "run %s failed: %s\n", record.run_id.c_str(), e.what());
    }
    for (const auto& k : keys)
      if (relevant_key(k, c)) record.setting += (record.setting.empty() ? "" : " ") + k + "=" + find_key(k)->get(c);
    if (record.status != "complete") ++failures;
    record.commit = current_training_code().commit;
    write_shard(path, collect_provenance(opt.command_line, c.train.threads > 0 ? c.train.threads : hardware_threads()),
                record);
  };
  auto run_all = [&]() {
    std::vector<size_t> elsewhere;  // runs another process holds
    for (size_t i = 0; i < mine.size(); ++i) {
      throw_if_stop_requested("before run " + my_ids[i].run_id);
      if (shard_status(my_ids[i].shard) == "complete") continue;
      FileLock claim(my_ids[i].lock);
      if (!claim.try_lock()) {
        elsewhere.push_back(i);
        continue;
      }
      run_one(i);  // re-reads the status: the holder before us may have just finished it
      progress.update(static_cast<int64_t>(i + 1));
    }
    for (size_t i : elsewhere) {
      FileLock claim(my_ids[i].lock);
      if (!claim.try_lock()) {
        progress.finish();
        if (verbose)
          std::fprintf(stderr, "waiting for run %s, held by %s (%s)\n", my_ids[i].run_id.c_str(),
                       claim.holder().c_str(), claim.path().c_str());
        claim.lock([&] { throw_if_stop_requested("while waiting for run " + my_ids[i].run_id); });
      }
      throw_if_stop_requested("before run " + my_ids[i].run_id);
      run_one(i);  // nothing to do if its holder completed it
    }
  };
  // Paired timing (sim/study/paired_timing.h) needs every arm of a seed on one
  // machine: an unsharded study times them after its runs; slices leave it
  // to the unsharded `ablate` that joins them (the SLURM merge job runs that).
  auto complete_runs = [&] {
    std::vector<TimedRun> complete;
    for (size_t i = 0; i < mine.size(); ++i)
      if (shard_status(my_ids[i].shard) == "complete") complete.push_back({mine[i], my_ids[i].shard});
    return complete;
  };
  try {
    run_all();
    if (opt.shard_count == 1) time_paired(complete_runs(), (fs::path(dir) / "locks").string(), verbose);
  } catch (const StopRequested& e) {
    progress.finish();
    std::fprintf(stderr,
                 "stopped by %s. Complete runs are kept; run the same command again to resume (training resumes "
                 "from its last checkpoint).\n",
                 e.what());
    return 128 + stop_signal();
  }
  progress.finish();
  if (opt.shard_count == 1) {
    const std::string results = (fs::path(dir) / "results.h5").string();
    merge_shards(dir, results, collect_provenance(opt.command_line, hardware_threads()));
    if (verbose && opt.summarize) opt.summarize(results);
    std::printf("results: %s\n", results.c_str());
  } else {
    int waiting = 0;
    for (const auto& t : complete_runs()) waiting += awaits_paired_timing(t);
    if (waiting > 0)
      std::printf("slice %d/%d done; %d run(s) await paired timing (decode.timing = paired): once every slice is "
                  "done, the same `zerolayer ablate` without --shard times them and joins the slices\n",
                  opt.shard_index, opt.shard_count, waiting);
    else
      std::printf("slice %d/%d done; join the slices with: zerolayer merge %s\n", opt.shard_index, opt.shard_count,
                  dir.c_str());
  }
  if (failures) std::fprintf(stderr, "%d run(s) failed; their errors are in the results index\n", failures);
  return failures ? 1 : 0;
}

}  // namespace zl
