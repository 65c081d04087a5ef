// results: a study runs every run of its grid that is not complete yet, each
// publishing its own shard (runs/<run_id>.h5), then merges the shards into
// output.dir/results.h5 and prints the headline table. A failed run is
// recorded with its error and the study goes on, exiting non-zero at the end.
#pragma once
#include <functional>
#include <string>

#include "sim/study_file.h"

namespace zl {

struct StudyOptions {
  int shard_index = 0, shard_count = 1;  // --shard i/n: this process runs runs i, i+n, ...
  bool dry_run = false;                   // list the runs and which are complete
  std::string command_line;
  // Called with the merged results file when an unsharded, verbose study ends:
  // the CLI prints the headline table (sim/claims/summary.h). The study does
  // not read its own results back: analysis sits above it.
  std::function<void(const std::string&)> summarize;
};

// Returns the process exit code: 0 when every run of this slice is complete.
int run_study(const Study& study, const StudyOptions& opt);

}  // namespace zl
