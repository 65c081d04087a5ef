// The results file, laid out as docs/results_schema.md describes,
// on top of the HDF5 wrapper in sim/h5.h.
#include "sim/results.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <type_traits>

#include "sim/h5.h"
#include "sim/util/file_lock.h"

namespace zl {

// ---- Table -------------------------------------------------------------------

namespace {
size_t column_rows(const Table::Column& column) {
  return std::visit([](const auto& values) { return values.size(); }, column);
}
}  // namespace

void Table::add(const std::string& name, Column column) {
  if (name.empty()) throw std::invalid_argument("Table::add: empty column name");
  if (find(name) != nullptr) throw std::invalid_argument("Table::add: duplicate column '" + name + "'");
  if (!columns.empty() && column_rows(column) != rows())
    throw std::invalid_argument("Table::add: column '" + name + "' has " + std::to_string(column_rows(column)) +
                                " rows, the table has " + std::to_string(rows()));
  names.push_back(name);
  columns.push_back(std::move(column));
}

size_t Table::rows() const { return columns.empty() ? 0 : column_rows(columns.front()); }

const Table::Column* Table::find(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return &columns[i];
  return nullptr;
}

namespace {

namespace fs = std::filesystem;

// ---- /index ------------------------------------------------------------------

// The fixed leading columns of /index, in order; metrics follow, sorted.
const std::vector<std::string> kIndexColumns = {"run_id", "train_id", "variant",     "setting", "seed",
                                                "status", "error",    "started_utc", "finished_utc"};

// Written after them since 2026-12-07; a file from before has neither, and
// its runs read back with these fields empty.
const std::vector<std::string> kLaterIndexColumns = {"commit", "train_commit"};

bool is_fixed_column(const std::string& name) {
  return std::find(kIndexColumns.begin(), kIndexColumns.end(), name) != kIndexColumns.end() ||
         std::find(kLaterIndexColumns.begin(), kLaterIndexColumns.end(), name) != kLaterIndexColumns.end();
}

// The RunRecord field behind a string column of /index; null for others.
std::string RunRecord::*string_field(const std::string& name) {
  if (name == "run_id") return &RunRecord::run_id;
  if (name == "train_id") return &RunRecord::train_id;
  if (name == "variant") return &RunRecord::variant;
  if (name == "setting") return &RunRecord::setting;
  if (name == "status") return &RunRecord::status;
  if (name == "error") return &RunRecord::error;
  if (name == "started_utc") return &RunRecord::started_utc;
  if (name == "finished_utc") return &RunRecord::finished_utc;
  if (name == "commit") return &RunRecord::commit;
  if (name == "train_commit") return &RunRecord::train_commit;
  return nullptr;
}

// One row per run; a run without one of `metrics` gets NaN there, which is
// how pandas marks a missing value.
Table index_table(const std::vector<const RunRecord*>& runs, const std::set<std::string>& metrics) {
  Table table;
  for (const std::string& name : kIndexColumns) {
    if (name == "seed") {
      std::vector<int64_t> seeds;
      for (const RunRecord* run : runs) seeds.push_back(run->seed);
      table.add(name, std::move(seeds));
      continue;
    }
    std::vector<std::string> values;
    for (const RunRecord* run : runs) values.push_back(run->*string_field(name));
    table.add(name, std::move(values));
  }
  for (const std::string& name : kLaterIndexColumns) {
    std::vector<std::string> values;
    for (const RunRecord* run : runs) values.push_back(run->*string_field(name));
    table.add(name, std::move(values));
  }
  for (const std::string& metric : metrics) {
    std::vector<double> values;
    for (const RunRecord* run : runs) {
      auto it = run->metrics.find(metric);
      values.push_back(it == run->metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second);
    }
    table.add(metric, std::move(values));
  }
  return table;
}

// The runs an /index table describes (index fields and metrics only).
std::vector<RunRecord> index_records(const Table& table, const std::string& file) {
  std::vector<RunRecord> runs(table.rows());
  for (size_t c = 0; c < table.names.size(); ++c) {
    const std::string& name = table.names[c];
    const Table::Column& column = table.columns[c];
    if (name == "seed" && std::holds_alternative<std::vector<int64_t>>(column)) {
      for (size_t r = 0; r < runs.size(); ++r) runs[r].seed = std::get<std::vector<int64_t>>(column)[r];
    } else if (string_field(name) != nullptr && std::holds_alternative<std::vector<std::string>>(column)) {
      for (size_t r = 0; r < runs.size(); ++r) runs[r].*string_field(name) = std::get<std::vector<std::string>>(column)[r];
    } else if (!is_fixed_column(name) && std::holds_alternative<std::vector<double>>(column)) {
      for (size_t r = 0; r < runs.size(); ++r) runs[r].metrics[name] = std::get<std::vector<double>>(column)[r];
    } else {
      throw std::runtime_error("'" + file + "': /index column '" + name + "' has an unexpected type");
    }
  }
  for (const std::string& name : kIndexColumns)
    if (table.find(name) == nullptr) throw std::runtime_error("'" + file + "': /index has no column '" + name + "'");
  return runs;
}

// ---- files -------------------------------------------------------------------

// Opens a shard or results file for reading and checks that it is one of
// ours: a foreign HDF5 file has no schema_version, a future one another value.
h5::File open_results(const std::string& path) {
  h5::File file = h5::File::open(path, false);
  if (!file.has_attr("schema_version"))
    throw std::runtime_error("'" + path + "' is not a zerolayer results file (no schema_version attribute)");
  int64_t version = file.attr_int("schema_version");
  if (version != kSchemaVersion)
    throw std::runtime_error("'" + path + "' has schema_version " + std::to_string(version) + "; this build reads " +
                             std::to_string(kSchemaVersion));
  return file;
}

Table read_index_table(const h5::File& file) {
  if (file.kind("index") != h5::Kind::dataset)
    throw std::runtime_error("'" + file.file() + "' has no /index table");
  return file.dataset("index").read_table();
}

void write_provenance(const h5::Node& root, const Provenance& prov) {
  root.set_attr("schema_version", static_cast<int64_t>(kSchemaVersion));
  root.set_attr("git_commit", prov.git_commit);
  root.set_attr("git_dirty", static_cast<int64_t>(prov.git_dirty ? 1 : 0));
  root.set_attr("command_line", prov.command_line);
  root.set_attr("created_utc", prov.created_utc);
  root.set_attr("torch_version", prov.torch_version);
  root.set_attr("hdf5_version", prov.hdf5_version.empty() ? h5::library_version() : prov.hdf5_version);
  root.set_attr("cuda_version", prov.cuda_version);
  root.set_attr("cpu_model", prov.cpu_model);
  root.set_attr("gpu_model", prov.gpu_model);
  root.set_attr("host", prov.host);
  root.set_attr("threads", prov.threads);
  root.set_attr("zerolayer_version", prov.zerolayer_version);
}

void sync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw std::runtime_error("cannot open '" + path + "' to sync: " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("cannot sync '" + path + "': " + std::strerror(errno));
}

// Writes a complete file at `path` or nothing: `write` fills `path`.tmp
// (truncating a stale one a crashed writer left), which is flushed, closed,
// synced to disk and renamed over `path`. rename() within one directory is
// atomic, so a reader (a resuming study, a concurrent merge) sees either the
// old file or the whole new one. On failure the .tmp is removed.
template <class Write>
void publish_atomically(const std::string& path, Write&& write) {
  const std::string tmp = path + ".tmp";
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent);
  try {
    h5::File file = h5::File::create(tmp);
    write(file);
    file.flush();
    file.close();
    sync_path(tmp, O_RDONLY);
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw std::runtime_error("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  // Makes the rename itself durable. Best effort: some file systems refuse
  // to sync a directory, and the data is already complete either way.
  try {
    sync_path(parent.empty() ? "." : parent.string(), O_RDONLY | O_DIRECTORY);
  } catch (const std::runtime_error&) {
  }
}

// ---- /runs/<run_id> ----------------------------------------------------------

// "train/loss" -> {"train", "loss"}; "loss" -> {"", "loss"}.
std::pair<std::string, std::string> split_last(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

std::string join(const std::string& group, const std::string& name) {
  return group.empty() ? name : group + "/" + name;
}

// A step dataset and the first curve that uses it (named in errors).
struct Axis {
  const std::vector<int64_t>* steps;
  std::string first_curve;
};

// Where each curve's steps go: curve name -> step dataset path under the run
// group, by the rule stated at zl::Curve.
std::map<std::string, std::string> resolve_axes(const RunRecord& run) {
  std::map<std::string, const Curve*> densest;  // group -> its densest default-axis curve
  for (const auto& [name, curve] : run.curves) {
    if (!curve.axis.empty()) continue;
    const Curve*& best = densest[split_last(name).first];
    if (best == nullptr || curve.step.size() > best->step.size()) best = &curve;  // name order breaks ties
  }
  std::map<std::string, std::string> axes;
  for (const auto& [name, curve] : run.curves) {
    auto [group, leaf] = split_last(name);
    std::string axis = curve.axis;
    if (axis.empty()) axis = curve.step == densest.at(group)->step ? "step" : leaf + "_step";
    axes[name] = join(group, axis);
  }
  return axes;
}

// Checks the run before anything is written, and returns the step datasets
// (path under the run group -> steps) and each curve's step dataset.
std::map<std::string, Axis> plan_axes(const RunRecord& run, const std::map<std::string, std::string>& curve_axes) {
  if (run.run_id.empty() || run.run_id.find('/') != std::string::npos || run.run_id == "." || run.run_id == "..")
    throw std::invalid_argument("bad run_id '" + run.run_id + "'");
  const std::string who = "run '" + run.run_id + "': ";
  for (const auto& [name, value] : run.metrics)
    if (name.empty() || is_fixed_column(name))
      throw std::invalid_argument(who + "metric name '" + name + "' clashes with an /index column");
  std::map<std::string, Axis> axes;
  for (const auto& [name, curve] : run.curves) {
    if (curve.step.size() != curve.value.size())
      throw std::invalid_argument(who + "curve '" + name + "' has " + std::to_string(curve.step.size()) +
                                  " steps for " + std::to_string(curve.value.size()) + " values");
    if (curve.axis.find('/') != std::string::npos)
      throw std::invalid_argument(who + "curve '" + name + "' has a bad axis name '" + curve.axis + "'");
    const std::string& axis = curve_axes.at(name);
    if (run.curves.count(axis) != 0 || run.tables.count(axis) != 0)
      throw std::invalid_argument(who + "axis '" + axis + "' of curve '" + name + "' is also a curve or table");
    auto [it, inserted] = axes.emplace(axis, Axis{&curve.step, name});
    if (!inserted && *it->second.steps != curve.step)
      throw std::invalid_argument(who + "curves '" + it->second.first_curve + "' and '" + name +
                                  "' share axis '" + axis + "' but not their steps; give one its own Curve::axis");
  }
  return axes;
}

// Chunks of up to 4096 elements (32 KiB): a whole short curve in one chunk,
// a long one in pieces that later appends can add to.
hsize_t chunk_for(size_t n) { return std::clamp<hsize_t>(n, 1, 4096); }

void write_run_group(const h5::File& file, const RunRecord& run, const std::map<std::string, Axis>& axes,
                     const std::map<std::string, std::string>& curve_axes) {
  h5::Group group = file.require_group("runs/" + run.run_id);
  group.set_attr("config", run.config_ini);
  group.set_attr("status", run.status);
  group.set_attr("error", run.error);
  for (const auto& [path, axis] : axes) {
    h5::Dataset steps = group.create_extendible(path, h5::Elem::i64, chunk_for(axis.steps->size()));
    steps.append(*axis.steps);
    steps.make_scale(split_last(path).second);
  }
  for (const auto& [name, curve] : run.curves) {
    h5::Dataset values = group.create_extendible(name, h5::Elem::f64, chunk_for(curve.value.size()));
    values.append(curve.value);
    values.attach_scale(group.dataset(curve_axes.at(name)));
  }
  for (const auto& [name, table] : run.tables) group.write_table(name, table);
}

// Reads the curves and tables under `group` into `run`, naming them by their
// path below the run group (`prefix`). Links the schema does not make (soft,
// external, a second link to a group: maybe a cycle) are not followed.
void read_run_objects(const h5::Group& group, const std::string& prefix, RunRecord& run) {
  for (const std::string& child : group.tree_children()) {
    const std::string name = join(prefix, child);
    h5::Kind kind = group.kind(child);
    if (kind == h5::Kind::group) {
      read_run_objects(group.group(child), name, run);
      continue;
    }
    if (kind != h5::Kind::dataset) continue;
    h5::Dataset ds = group.dataset(child);
    if (ds.type_class() == H5T_COMPOUND) {
      run.tables[name] = ds.read_table();
    } else if (ds.type_class() == H5T_FLOAT && ds.rank() == 1 && !ds.is_scale()) {
      std::vector<std::string> scales = ds.scale_paths(0);
      if (scales.size() != 1)
        throw std::runtime_error("'" + group.file() + "': curve '" + ds.path() + "' has " +
                                 std::to_string(scales.size()) + " step scales, expected 1");
      Curve curve;
      curve.value = ds.read_doubles();
      curve.step = group.dataset(scales[0]).read_int64s();  // an absolute path
      curve.axis = split_last(scales[0]).second;
      run.curves[name] = std::move(curve);
    }
    // Step datasets (scales) are read with their curves; anything else is
    // not part of the schema and is left alone.
  }
}

std::vector<std::string> list_shards(const fs::path& runs_dir) {
  std::vector<std::string> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(runs_dir))
    if (entry.is_regular_file() && entry.path().extension() == ".h5") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());  // errors name the same file every time
  return files;
}

}  // namespace

// ---- public ------------------------------------------------------------------

std::string hdf5_library_version() { return h5::library_version(); }

void write_shard(const std::string& path, const Provenance& prov, const RunRecord& run) {
  const std::map<std::string, std::string> curve_axes = resolve_axes(run);
  const std::map<std::string, Axis> axes = plan_axes(run, curve_axes);
  std::set<std::string> metrics;
  for (const auto& entry : run.metrics) metrics.insert(entry.first);
  publish_atomically(path, [&](const h5::File& file) {
    write_provenance(file, prov);
    file.write_table("index", index_table({&run}, metrics));
    write_run_group(file, run, axes, curve_axes);
  });
}

namespace {

// Fills in config, curves and tables of `run` from its group in `file`.
RunRecord with_run_group(const h5::File& file, RunRecord run) {
  const std::string group_path = "runs/" + run.run_id;
  if (file.kind(group_path) != h5::Kind::group)
    throw std::runtime_error("'" + file.file() + "' has no group /" + group_path);
  h5::Group group = file.group(group_path);
  run.config_ini = group.attr_string("config");
  read_run_objects(group, "", run);
  return run;
}

}  // namespace

RunRecord read_shard(const std::string& path) {
  h5::File file = open_results(path);
  std::vector<RunRecord> runs = index_records(read_index_table(file), path);
  if (runs.size() != 1)
    throw std::runtime_error("'" + path + "' holds " + std::to_string(runs.size()) + " runs; a shard holds one");
  return with_run_group(file, std::move(runs.front()));
}

RunRecord read_run(const std::string& path, const std::string& run_id) {
  h5::File file = open_results(path);
  for (RunRecord& run : index_records(read_index_table(file), path))
    if (run.run_id == run_id) return with_run_group(file, std::move(run));
  throw std::runtime_error("'" + path + "' has no run '" + run_id + "'");
}

Provenance read_provenance(const std::string& path) {
  h5::File file = open_results(path);
  Provenance prov;
  prov.git_commit = file.attr_string("git_commit");
  prov.git_dirty = file.attr_int("git_dirty") != 0;
  prov.command_line = file.attr_string("command_line");
  prov.created_utc = file.attr_string("created_utc");
  prov.torch_version = file.attr_string("torch_version");
  prov.hdf5_version = file.attr_string("hdf5_version");
  prov.cuda_version = file.attr_string("cuda_version");
  prov.cpu_model = file.attr_string("cpu_model");
  prov.gpu_model = file.attr_string("gpu_model");
  prov.host = file.attr_string("host");
  prov.threads = file.attr_int("threads");
  prov.zerolayer_version = file.attr_string("zerolayer_version");
  return prov;
}

std::vector<IndexRow> read_index(const std::string& path) {
  Table table = read_index_table(open_results(path));
  std::vector<IndexRow> rows(table.rows());
  for (size_t c = 0; c < table.names.size(); ++c) {
    std::visit(
        [&](const auto& values) {
          using T = typename std::decay_t<decltype(values)>::value_type;
          for (size_t r = 0; r < rows.size(); ++r) {
            if constexpr (std::is_same_v<T, std::string>)
              rows[r].strings[table.names[c]] = values[r];
            else
              rows[r].numbers[table.names[c]] = static_cast<double>(values[r]);
          }
        },
        table.columns[c]);
  }
  return rows;
}

size_t merge_shards(const std::string& dir, const std::string& out_path, const Provenance& prov) {
  const fs::path runs_dir = fs::path(dir) / "runs";
  if (!fs::is_directory(runs_dir)) throw std::runtime_error("no shard directory '" + runs_dir.string() + "'");
  // One merge at a time per folder (two studies finishing together, a manual
  // merge beside them): they would write one results file's .tmp at once.
  FileLock merging((fs::path(dir) / "locks" / "merge.lock").string());
  merging.lock();

  // Read and check every shard before writing anything.
  struct Entry {
    RunRecord run;
    std::string file;
  };
  std::vector<Entry> entries;
  std::map<std::string, std::string> file_of;  // run_id -> shard, to catch duplicates
  std::set<std::string> metrics;
  for (const std::string& path : list_shards(runs_dir)) {
    h5::File file = open_results(path);
    std::vector<RunRecord> runs = index_records(read_index_table(file), path);
    // A shard is one run: an empty /index would drop its run from the merge in silence.
    if (runs.size() != 1)
      throw std::runtime_error("'" + path + "' is not a run shard: its /index holds " + std::to_string(runs.size()) +
                               " runs, not 1");
    for (RunRecord& run : runs) {
      if (file.kind("runs/" + run.run_id) != h5::Kind::group)
        throw std::runtime_error("'" + path + "' has no group /runs/" + run.run_id);
      auto [it, inserted] = file_of.emplace(run.run_id, path);
      if (!inserted)
        throw std::runtime_error("run '" + run.run_id + "' is in both '" + it->second + "' and '" + path + "'");
      for (const auto& metric : run.metrics) metrics.insert(metric.first);
      entries.push_back({std::move(run), path});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.run.run_id < b.run.run_id; });

  std::vector<const RunRecord*> rows;
  for (const Entry& entry : entries) rows.push_back(&entry.run);
  publish_atomically(out_path, [&](const h5::File& out) {
    write_provenance(out, prov);
    out.write_table("index", index_table(rows, metrics));
    h5::Group runs = out.require_group("runs");
    for (const Entry& entry : entries) {
      h5::File shard = h5::File::open(entry.file, false);
      shard.copy("runs/" + entry.run.run_id, runs, entry.run.run_id);
    }
  });
  return entries.size();
}

void write_table(const std::string& file, const std::string& path, const Table& table) {
  h5::File out = h5::File::open(file, true);
  if (out.exists(path)) out.remove(path);
  out.write_table(path, table);
  out.flush();
  out.close();
}

}  // namespace zl
