// The HDF5 results file (the schema is written down in
// docs/results_schema.md and checked by tests). One run writes one shard,
// runs/<run_id>.h5, under a temporary name and publishes it by rename; a study's
// results.h5 is merged from its shards. Everything here is plain data: the
// trainer, decoder and metrics fill a RunRecord, this file only stores it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace zl {

inline constexpr int kSchemaVersion = 1;

// A column-oriented table stored as one compound HDF5 dataset (one row per
// item), so that pandas.DataFrame(f[path][:]) loads it in one line.
struct Table {
  using Column = std::variant<std::vector<double>, std::vector<int64_t>, std::vector<std::string>>;
  std::vector<std::string> names;
  std::vector<Column> columns;

  void add(const std::string& name, Column column);
  size_t rows() const;
  const Column* find(const std::string& name) const;
};

// A curve: value against step. Curve "G/N" is stored as the extendible,
// chunked float64 dataset G/N, and its steps as an int64 dataset in group G
// attached to G/N as a dimension scale, so xarray can open group G. Which step
// dataset (docs/results_schema.md, "Curves"): `axis` if set; otherwise G/step
// for the group's densest steps (most points; ties go to the curve first by
// name), shared by every curve with exactly those steps, and G/N_step for a
// curve measured at other steps. So "train/loss" and "train/lr", logged every
// step, share train/step, and "train/val_loss" gets train/val_loss_step.
struct Curve {
  std::vector<int64_t> step;
  std::vector<double> value;
  std::string axis;  // the step dataset's name in G; empty: the rule above
};

// Provenance recorded at the root of every shard and results file. An empty
// hdf5_version is written as the version of the HDF5 library in use.
struct Provenance {
  std::string git_commit, command_line, created_utc, torch_version, hdf5_version,
      cuda_version, cpu_model, gpu_model, host, zerolayer_version;
  bool git_dirty = false;
  int64_t threads = 0;
};

struct RunRecord {
  std::string run_id;       // hash of the resolved config
  std::string train_id;     // hash of the training keys only (shared checkpoint)
  std::string variant;
  std::string setting;      // the study's swept keys that matter to this run, other than seed
                            // and variant ("verify.threshold=0.5"); names a summary row
  int64_t seed = 0;
  std::string status;       // "complete" or "failed"
  std::string error;        // empty unless failed
  std::string config_ini;   // the resolved config as INI text
  std::string started_utc, finished_utc;
  // The commit the run ran at and the one that trained its checkpoint
  // (sim/training_code.h; "+dirty" when the tree had uncommitted changes,
  // "A,B" for a checkpoint trained further by a second commit); empty in
  // files from before 2026-12-07.
  std::string commit, train_commit;
  std::map<std::string, double> metrics;   // scalar metrics: columns of /index
  std::map<std::string, Curve> curves;     // path under /runs/<id>/, e.g. "train/loss"
  std::map<std::string, Table> tables;     // path under /runs/<id>/, e.g. "eval/items"
};

// Writes one run as a complete shard file at `path`: written to path + ".tmp",
// flushed, closed, then renamed, so a reader sees the whole file or none.
void write_shard(const std::string& path, const Provenance& prov, const RunRecord& run);

// Reads the run stored in a shard (metrics, status, config, curves, tables).
// Each curve's `axis` comes back as the name of the step dataset it was on.
// Throws std::runtime_error naming the file if it is corrupt or not a zerolayer shard.
RunRecord read_shard(const std::string& path);

// Reads one run of a shard or merged results file by run_id (its /index row
// with metrics as stored, NaN included, and its /runs/<run_id> group).
// Throws naming the file and the run if it is not there.
RunRecord read_run(const std::string& path, const std::string& run_id);

// Reads the root provenance attributes of a shard or results file.
Provenance read_provenance(const std::string& path);

// The HDF5 library version this binary runs with, e.g. "1.10.8" (for
// `zerolayer info` and Provenance::hdf5_version, without including hdf5.h).
std::string hdf5_library_version();

// Reads the /index of a shard or results file: one map per row; string columns
// in `strings`, numeric columns in `numbers` (integers as double).
struct IndexRow {
  std::map<std::string, std::string> strings;
  std::map<std::string, double> numbers;
};
std::vector<IndexRow> read_index(const std::string& path);

// Merges every shard runs/*.h5 under `dir` into `out_path` (atomically): root
// provenance from `prov`, /index with one row per run (the union of metric
// columns, NaN where a run lacks one), /runs/<id> copied whole. Rows are sorted
// by run_id so the result does not depend on the order runs finished in.
// Throws naming the file on a corrupt or foreign shard. Returns the row count.
size_t merge_shards(const std::string& dir, const std::string& out_path, const Provenance& prov);

// Writes a string dataset / attribute into an existing results file (used by
// `claims` to add its table). Replaces what was there.
void write_table(const std::string& file, const std::string& path, const Table& table);

}  // namespace zl
