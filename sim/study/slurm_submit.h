// `zerolayer submit`: a study as a SLURM job array of `ablate --shard i/N`
// slices plus a merge job that runs once every slice has succeeded
// (docs/studies.md, issue 15). The scripts are built by a pure function, so that a
// test reads the very text `--dry-run` prints; submission is a separate step.
//
// Resubmitting after a task failed or was killed is the way to finish a
// study: each slice skips its complete runs (sim/study/study.cpp) and training
// resumes from its last checkpoint; shards that need one model wait on its
// checkpoint lock (sim/checkpoint.h), so it is trained once and never read
// half-written.
#pragma once
#include <string>

#include "sim/study_file.h"

namespace zl {

struct SubmitOptions {
  std::string executable;  // absolute path of the zerolayer the jobs run (this one)
  std::string study;       // absolute path of the study file
  Overrides overrides;     // --section.key value, given to every task (output.dir aside: below)
  std::string output_dir;  // absolute output.dir of the resolved study: every task gets it, so all agree
  std::string workdir;     // the jobs' working directory: where submit ran, so relative paths mean the same
  std::string name = "study";  // the study's name, for the job names
  int runs = 0;                // runs in the study (after dedupe): a slice beyond them would have nothing to do
  int shards = 0;              // --shards N: array tasks 0..N-1
  int cpus_per_task = 1;       // --cpus-per-task
  std::string partition, time, mem;  // --partition, --time, --mem; "" leaves the cluster's default
};

struct SlurmScripts {
  std::string dir;         // <output.dir>/slurm: the scripts and every job's log
  std::string array_path;  // <dir>/array.sbatch
  std::string array_text;
  std::string merge_path;  // <dir>/merge.sbatch; submitted with --dependency=afterok:<array job>
  std::string merge_text;
};

// The two scripts. Throws ConfigError naming the option for impossible input
// (--shards 0, more shards than runs, a value an #SBATCH line cannot hold).
SlurmScripts slurm_scripts(const SubmitOptions& opt);

// What --dry-run prints: both scripts and the two sbatch commands.
std::string describe_submission(const SlurmScripts& s);

struct SubmittedJobs {
  std::string array_id, merge_id;
};

// Writes the scripts and submits them with `sbatch --parsable` (the array,
// then the merge depending on it). Throws naming the problem: sbatch not on
// PATH, or its refusal with its own message.
SubmittedJobs submit_to_slurm(const SlurmScripts& s);

// `text` as one word for /bin/sh: single-quoted where it needs quoting.
std::string shell_quote(const std::string& text);

}  // namespace zl
