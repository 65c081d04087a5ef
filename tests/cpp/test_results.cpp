// The HDF5 results file (docs/results_schema.md): shard round trip,
// atomic publish, merge, and the errors that name a bad file.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "datasets/atomic_file.h"
#include "sim/h5.h"
#include "sim/results.h"
#include "tests/cpp/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using zl::Curve;
using zl::Provenance;
using zl::RunRecord;
using zl::Table;


Provenance sample_provenance() {
  Provenance prov;
  prov.git_commit = "0123456789abcdef";
  prov.git_dirty = true;
  prov.command_line = "zerolayer ablate ablations/smoke.ini --seed 1,2";
  prov.created_utc = "2024-05-01T12:00:00Z";
  prov.torch_version = "1.13.1";
  prov.cuda_version = "";
  prov.cpu_model = "Test CPU";
  prov.gpu_model = "";
  prov.host = "testhost";
  prov.threads = 8;
  prov.zerolayer_version = "0.1.0";
  return prov;
}

Curve make_curve(int64_t first, int64_t stride, int n, double scale, const std::string& axis = "") {
  Curve curve;
  curve.axis = axis;
  for (int i = 0; i < n; ++i) {
    curve.step.push_back(first + stride * i);
    curve.value.push_back(scale * std::exp(-0.05 * i));
  }
  return curve;
}

// A complete run with curves on two step schedules (every step; every 10th
// for validation) and tables of every column kind.
RunRecord sample_run(const std::string& id, int64_t seed, std::map<std::string, double> metrics) {
  RunRecord run;
  run.run_id = id;
  run.train_id = "train-" + id.substr(0, 1);
  run.variant = seed % 2 ? "sfvl" : "baseline";
  run.seed = seed;
  run.status = "complete";
  run.config_ini = "variant = sfvl\nseed = " + std::to_string(seed) + "\n\n[train]\nsteps = 40\nlr = 3e-4\n";
  run.started_utc = "2024-05-01T12:00:0" + std::to_string(seed) + "Z";
  run.finished_utc = "2024-05-01T12:30:00Z";
  run.metrics = std::move(metrics);
  run.curves["train/loss"] = make_curve(0, 1, 40, 4.0 + seed);
  run.curves["train/lr"] = make_curve(0, 1, 40, 3e-4);
  run.curves["train/val_loss"] = make_curve(0, 10, 4, 4.5 + seed);
  Table items;
  items.add("item", std::vector<int64_t>{0, 1, 2, 3});
  items.add("violation", std::vector<double>{0.0, 1.0, 0.0, 0.5});
  items.add("text", std::vector<std::string>{"Party A shall pay", "", "naïve €", "x"});
  run.tables["eval/items"] = items;
  Table itl;
  itl.add("request", std::vector<int64_t>{0, 0, 1});
  itl.add("itl_ms", std::vector<double>{1.5, 1.25, 2.0});
  run.tables["decode/itl"] = itl;
  return run;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

void expect_same_run(const RunRecord& got, const RunRecord& want) {
  EXPECT_EQ(got.run_id, want.run_id);
  EXPECT_EQ(got.train_id, want.train_id);
  EXPECT_EQ(got.variant, want.variant);
  EXPECT_EQ(got.seed, want.seed);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.error, want.error);
  EXPECT_EQ(got.config_ini, want.config_ini);
  EXPECT_EQ(got.started_utc, want.started_utc);
  EXPECT_EQ(got.finished_utc, want.finished_utc);
  EXPECT_EQ(got.metrics, want.metrics);
  ASSERT_EQ(got.curves.size(), want.curves.size());
  for (const auto& [name, curve] : want.curves) {
    ASSERT_TRUE(got.curves.count(name)) << name;
    EXPECT_EQ(got.curves.at(name).step, curve.step) << name;
    EXPECT_EQ(got.curves.at(name).value, curve.value) << name;
    if (!curve.axis.empty()) {
      EXPECT_EQ(got.curves.at(name).axis, curve.axis) << name;
    }
  }
  ASSERT_EQ(got.tables.size(), want.tables.size());
  for (const auto& [name, table] : want.tables) {
    ASSERT_TRUE(got.tables.count(name)) << name;
    EXPECT_EQ(got.tables.at(name).names, table.names) << name;
    EXPECT_TRUE(got.tables.at(name).columns == table.columns) << name;
  }
}

// Runs `fn`, expecting a std::runtime_error whose message contains `needle`.
template <class Fn>
void expect_error_naming(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one naming " << needle;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Results, TableAddChecksNamesAndLengths) {
  Table table;
  EXPECT_EQ(table.rows(), 0u);
  table.add("a", std::vector<double>{1, 2});
  table.add("b", std::vector<std::string>{"x", "y"});
  EXPECT_EQ(table.rows(), 2u);
  EXPECT_THROW(table.add("c", std::vector<int64_t>{1}), std::invalid_argument);
  EXPECT_THROW(table.add("a", std::vector<int64_t>{1, 2}), std::invalid_argument);
  EXPECT_THROW(table.add("", std::vector<int64_t>{1, 2}), std::invalid_argument);
  ASSERT_NE(table.find("b"), nullptr);
  EXPECT_EQ(std::get<std::vector<std::string>>(*table.find("b"))[1], "y");
  EXPECT_EQ(table.find("zzz"), nullptr);
}

TEST(Results, ShardRoundTrip) {
  TempDir dir("zl_results");
  const std::string path = dir / "runs/abc123.h5";
  RunRecord run = sample_run("abc123", 3, {{"val_loss", 2.25}, {"bpb", 1.125}, {"ttft_ms", 0.5}});
  zl::write_shard(path, sample_provenance(), run);

  expect_same_run(zl::read_shard(path), run);
  expect_same_run(zl::read_run(path, "abc123"), run);

  Provenance prov = zl::read_provenance(path);
  EXPECT_EQ(prov.git_commit, "0123456789abcdef");
  EXPECT_TRUE(prov.git_dirty);
  EXPECT_EQ(prov.command_line, sample_provenance().command_line);
  EXPECT_EQ(prov.threads, 8);
  EXPECT_EQ(prov.hdf5_version, zl::hdf5_library_version());  // filled in when empty

  std::vector<zl::IndexRow> index = zl::read_index(path);
  ASSERT_EQ(index.size(), 1u);
  EXPECT_EQ(index[0].strings.at("run_id"), "abc123");
  EXPECT_EQ(index[0].strings.at("variant"), "sfvl");
  EXPECT_EQ(index[0].numbers.at("seed"), 3.0);
  EXPECT_EQ(index[0].numbers.at("val_loss"), 2.25);
}

TEST(Results, ShardStoresCurvesWithStepScales) {
  TempDir dir("zl_results");
  const std::string path = dir / "s.h5";
  zl::write_shard(path, sample_provenance(), sample_run("r1", 1, {}));
  zl::h5::File file = zl::h5::File::open(path, false);
  zl::h5::Group train = file.group("runs/r1/train");
  // docs/design.md#runs-identity-and-checkpoints names train/step, train/loss and train/val_loss. The densest
  // steps (loss and lr, every step) are train/step; validation, every 10th
  // step, gets its own.
  EXPECT_EQ(train.children(), (std::vector<std::string>{"loss", "lr", "step", "val_loss", "val_loss_step"}));
  EXPECT_TRUE(train.dataset("step").is_scale());
  EXPECT_EQ(train.dataset("loss").scale_paths(), std::vector<std::string>{"/runs/r1/train/step"});
  EXPECT_EQ(train.dataset("lr").scale_paths(), std::vector<std::string>{"/runs/r1/train/step"});
  EXPECT_EQ(train.dataset("val_loss").scale_paths(), std::vector<std::string>{"/runs/r1/train/val_loss_step"});
  EXPECT_EQ(train.dataset("val_loss_step").read_int64s(), (std::vector<int64_t>{0, 10, 20, 30}));
  EXPECT_EQ(file.group("runs/r1").attr_string("status"), "complete");
  // Curves stay extendible: a later append grows them.
  EXPECT_EQ(train.dataset("loss").size(), 40u);
}

TEST(Results, ExplicitAxisNamesTheStepDataset) {
  TempDir dir("zl_results");
  RunRecord run = sample_run("r1", 1, {});
  run.curves["train/val_loss"].axis = "val_step";
  run.curves["train/val_ppl"] = make_curve(0, 10, 4, 90.0, "val_step");
  run.curves["eval/violations"] = make_curve(64, 64, 3, 0.1);  // alone in its group: eval/step
  zl::write_shard(dir / "r1.h5", sample_provenance(), run);
  RunRecord got = zl::read_shard(dir / "r1.h5");
  expect_same_run(got, run);
  EXPECT_EQ(got.curves.at("train/val_ppl").axis, "val_step");
  EXPECT_EQ(got.curves.at("train/loss").axis, "step");
  EXPECT_EQ(got.curves.at("eval/violations").axis, "step");
  zl::h5::File file = zl::h5::File::open(dir / "r1.h5", false);
  EXPECT_EQ(file.group("runs/r1/train").children(),
            (std::vector<std::string>{"loss", "lr", "step", "val_loss", "val_ppl", "val_step"}));
}

TEST(Results, RewritingAReadRunGivesTheSameFile) {
  // read_shard reports each curve's resolved axis, so writing its result
  // back reproduces the shard byte for byte (a resumed study relies on
  // nothing less than the same content).
  TempDir dir("zl_results");
  zl::write_shard(dir / "a.h5", sample_provenance(), sample_run("r1", 1, {{"val_loss", 1.5}}));
  zl::write_shard(dir / "b.h5", sample_provenance(), zl::read_shard(dir / "a.h5"));
  EXPECT_TRUE(read_bytes(dir / "a.h5") == read_bytes(dir / "b.h5"));
}

TEST(Results, FailedRunRoundTrip) {
  TempDir dir("zl_results");
  const std::string path = dir / "f.h5";
  RunRecord run;
  run.run_id = "dead01";
  run.train_id = "t";
  run.variant = "fused";
  run.seed = -7;
  run.status = "failed";
  run.error = "training diverged at step 12:\nloss = nan (ça arrive)";
  run.config_ini = "variant = fused\n";
  zl::write_shard(path, sample_provenance(), run);
  expect_same_run(zl::read_shard(path), run);
}

TEST(Results, ConfigLargerThan64KiBRoundTrips) {
  // The oldest HDF5 format caps an attribute at 64 KiB; we write the 1.8
  // format, which stores larger ones densely.
  TempDir dir("zl_results");
  RunRecord run = sample_run("big", 1, {});
  for (int i = 0; i < 20000; ++i) run.config_ini += "key_" + std::to_string(i) + " = 1\n";
  ASSERT_GT(run.config_ini.size(), 200000u);
  zl::write_shard(dir / "big.h5", sample_provenance(), run);
  EXPECT_EQ(zl::read_shard(dir / "big.h5").config_ini, run.config_ini);
}

TEST(Results, CurvesSharingAnAxisMustAgree) {
  TempDir dir("zl_results");
  RunRecord run = sample_run("r", 1, {});
  run.curves["train/val_loss"].axis = "step";  // 4 points every 10 steps, vs 40 every step
  try {
    zl::write_shard(dir / "r.h5", sample_provenance(), run);
    ADD_FAILURE() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Curve::axis"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "r.h5"));
  EXPECT_FALSE(fs::exists(dir / "r.h5.tmp"));

  RunRecord ragged = sample_run("r", 1, {});
  ragged.curves["train/loss"].value.pop_back();
  EXPECT_THROW(zl::write_shard(dir / "r.h5", sample_provenance(), ragged), std::invalid_argument);
}

TEST(Results, PublishLeavesNoTmpAndReplacesStaleTmp) {
  TempDir dir("zl_results");
  const std::string path = dir / "runs/r1.h5";
  fs::create_directories(dir / "runs");
  write_bytes(path + ".tmp", "a crashed writer left this behind");
  zl::write_shard(path, sample_provenance(), sample_run("r1", 1, {{"val_loss", 1.0}}));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_EQ(zl::read_shard(path).metrics.at("val_loss"), 1.0);

  // Publishing again replaces the old file in one step.
  zl::write_shard(path, sample_provenance(), sample_run("r1", 1, {{"val_loss", 2.0}}));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_EQ(zl::read_shard(path).metrics.at("val_loss"), 2.0);
}

TEST(Results, FailedWriteKeepsOldFileAndLeavesNoTmp) {
  TempDir dir("zl_results");
  const std::string path = dir / "r1.h5";
  RunRecord good = sample_run("r1", 1, {{"val_loss", 1.0}});
  zl::write_shard(path, sample_provenance(), good);
  const std::string before = read_bytes(path);

  // A table at a curve's path fails inside HDF5, half way through writing.
  RunRecord bad = sample_run("r1", 1, {{"val_loss", 9.0}});
  bad.tables["train/loss"] = bad.tables["decode/itl"];
  expect_error_naming([&] { zl::write_shard(path, sample_provenance(), bad); }, path + ".tmp");
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  // The same failure on a new path publishes nothing at all.
  const std::string fresh = dir / "r2.h5";
  EXPECT_THROW(zl::write_shard(fresh, sample_provenance(), bad), std::runtime_error);
  EXPECT_FALSE(fs::exists(fresh));
  EXPECT_FALSE(fs::exists(fresh + ".tmp"));
}

TEST(Results, ReaderNeverSeesAPartialShard) {
  // A poller copies the shard's bytes the moment its final name appears;
  // with write-then-rename that copy is already the complete file. (The
  // poller uses no HDF5: the Debian build is not thread-safe.)
  TempDir dir("zl_results");
  const std::string path = dir / "big.h5";
  RunRecord run = sample_run("big", 1, {{"val_loss", 1.0}});
  run.curves["train/loss"] = make_curve(0, 1, 400000, 1.0);
  run.curves["train/lr"] = make_curve(0, 1, 400000, 3e-4);
  std::atomic<bool> done{false};
  std::string seen;
  bool saw_tmp = false;
  std::thread poller([&] {
    while (!done.load()) {
      saw_tmp = saw_tmp || fs::exists(path + ".tmp");
      if (fs::exists(path)) {
        seen = read_bytes(path);
        return;
      }
    }
  });
  zl::write_shard(path, sample_provenance(), run);
  done = true;
  poller.join();
  const std::string final_bytes = read_bytes(path);
  EXPECT_GT(final_bytes.size(), 6'000'000u);
  if (!seen.empty()) {
    EXPECT_TRUE(seen == final_bytes) << "saw " << seen.size() << " of " << final_bytes.size() << " bytes";
  }
  RecordProperty("poller_saw_tmp", saw_tmp ? "yes" : "no");
}

TEST(Results, MergeSortsRowsFillsNaNAndCopiesRuns) {
  TempDir dir("zl_results");
  const Provenance prov = sample_provenance();
  RunRecord c = sample_run("c3", 3, {{"val_loss", 3.0}});
  RunRecord a = sample_run("a1", 1, {{"bpb", 0.5}});
  RunRecord b = sample_run("b2", 2, {{"val_loss", 2.0}, {"violation_rate", 0.25}});
  b.status = "failed";
  b.error = "out of memory";
  for (const RunRecord* run : {&c, &a, &b}) zl::write_shard(dir / ("runs/" + run->run_id + ".h5"), prov, *run);
  write_bytes(dir / "runs/zz.h5.tmp", "a shard still being written");  // not a shard yet

  Provenance merge_prov = prov;
  merge_prov.command_line = "zerolayer merge " + dir.path().string();
  const std::string out = dir / "results.h5";
  EXPECT_EQ(zl::merge_shards(dir.path().string(), out, merge_prov), 3u);
  EXPECT_FALSE(fs::exists(out + ".tmp"));
  EXPECT_EQ(zl::read_provenance(out).command_line, merge_prov.command_line);

  std::vector<zl::IndexRow> rows = zl::read_index(out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].strings.at("run_id"), "a1");
  EXPECT_EQ(rows[1].strings.at("run_id"), "b2");
  EXPECT_EQ(rows[2].strings.at("run_id"), "c3");
  EXPECT_EQ(rows[1].strings.at("status"), "failed");
  EXPECT_EQ(rows[1].strings.at("error"), "out of memory");
  EXPECT_EQ(rows[0].numbers.at("bpb"), 0.5);
  EXPECT_TRUE(std::isnan(rows[0].numbers.at("val_loss")));
  EXPECT_TRUE(std::isnan(rows[0].numbers.at("violation_rate")));
  EXPECT_TRUE(std::isnan(rows[1].numbers.at("bpb")));
  EXPECT_EQ(rows[1].numbers.at("violation_rate"), 0.25);
  EXPECT_EQ(rows[2].numbers.at("val_loss"), 3.0);

  // Fixed columns first, then the union of metrics in name order.
  zl::h5::File file = zl::h5::File::open(out, false);
  EXPECT_EQ(file.dataset("index").read_table().names,
            (std::vector<std::string>{"run_id", "train_id", "variant", "setting", "seed", "status", "error", "started_utc",
                                      "finished_utc", "commit", "train_commit", "bpb", "val_loss", "violation_rate"}));
  EXPECT_EQ(file.group("runs").children(), (std::vector<std::string>{"a1", "b2", "c3"}));
  // Copied groups keep their step scales, re-linked inside the merged file.
  EXPECT_EQ(file.dataset("runs/b2/train/val_loss").scale_paths(),
            std::vector<std::string>{"/runs/b2/train/val_loss_step"});

  for (const RunRecord* run : {&a, &b, &c}) {
    RunRecord got = zl::read_run(out, run->run_id);
    RunRecord want = *run;
    for (const auto& metric : got.metrics)  // the NaN fill of metrics the run lacks
      if (!want.metrics.count(metric.first)) {
        EXPECT_TRUE(std::isnan(metric.second)) << run->run_id << " " << metric.first;
        want.metrics[metric.first] = metric.second;
      }
    got.metrics.clear();
    want.metrics.clear();
    expect_same_run(got, want);
  }
}

TEST(Results, MergeIsIndependentOfShardCreationOrder) {
  TempDir dir("zl_results");
  const Provenance prov = sample_provenance();
  std::vector<RunRecord> runs = {sample_run("b2", 2, {{"val_loss", 2.0}}), sample_run("a1", 1, {{"bpb", 1.0}}),
                                 sample_run("c3", 3, {{"val_loss", 3.0}, {"bpb", 0.5}})};
  for (const RunRecord& run : runs) zl::write_shard(dir / ("one/runs/" + run.run_id + ".h5"), prov, run);
  for (auto it = runs.rbegin(); it != runs.rend(); ++it)
    zl::write_shard(dir / ("two/runs/" + it->run_id + ".h5"), prov, *it);
  zl::merge_shards(dir / "one", dir / "one/results.h5", prov);
  zl::merge_shards(dir / "two", dir / "two/results.h5", prov);
  // Byte for byte: objects carry no modification times and rows and groups
  // are written in run_id order.
  const std::string one = read_bytes(dir / "one/results.h5");
  EXPECT_FALSE(one.empty());
  EXPECT_TRUE(one == read_bytes(dir / "two/results.h5"));
}

TEST(Results, MergeRejectsCorruptShardByName) {
  TempDir dir("zl_results");
  zl::write_shard(dir / "runs/a1.h5", sample_provenance(), sample_run("a1", 1, {}));
  std::mt19937 rng(42);
  std::string noise(4096, '\0');
  for (char& ch : noise) ch = static_cast<char>(rng());
  write_bytes(dir / "runs/b2.h5", noise);
  const std::string out = dir / "results.h5";
  expect_error_naming([&] { zl::merge_shards(dir.path().string(), out, sample_provenance()); }, dir / "runs/b2.h5");
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".tmp"));

  // A shard cut short (a copy that stopped half way) is caught too.
  const std::string whole = read_bytes(dir / "runs/a1.h5");
  write_bytes(dir / "runs/b2.h5", whole.substr(0, whole.size() / 2));
  expect_error_naming([&] { zl::merge_shards(dir.path().string(), out, sample_provenance()); }, dir / "runs/b2.h5");
  expect_error_naming([&] { zl::read_shard(dir / "runs/b2.h5"); }, dir / "runs/b2.h5");
}

// Found by fuzzing: a shard whose /index has no row was merged without its
// run, in silence.
TEST(Results, MergeRejectsAShardWithoutItsRun) {
  TempDir dir("zl_results");
  fs::create_directories(dir.path() / "runs");
  RunRecord a = sample_run("aaa", 1, {{"val_loss", 1.0}});
  const std::string shard = (dir.path() / "runs" / "aaa.h5").string();
  write_shard(shard, sample_provenance(), a);
  Table empty;
  empty.add("run_id", std::vector<std::string>{});
  zl::write_table(shard, "index", empty);
  expect_error_naming([&] { merge_shards(dir.path().string(), dir / "results.h5", sample_provenance()); }, "aaa.h5");
}

TEST(Results, MergeRejectsForeignHdf5ByName) {
  TempDir dir("zl_results");
  zl::write_shard(dir / "runs/a1.h5", sample_provenance(), sample_run("a1", 1, {}));
  {
    zl::h5::File foreign = zl::h5::File::create(dir / "runs/other.h5");
    foreign.create_extendible("data", zl::h5::Elem::f64, 16).append(std::vector<double>{1, 2, 3});
    foreign.close();
  }
  expect_error_naming([&] { zl::merge_shards(dir.path().string(), dir / "results.h5", sample_provenance()); },
                      dir / "runs/other.h5");
  expect_error_naming([&] { zl::read_shard(dir / "runs/other.h5"); }, "schema_version");
  EXPECT_FALSE(fs::exists(dir / "results.h5"));
}

TEST(Results, MergeRejectsDuplicateRunsAndMissingDirectory) {
  TempDir dir("zl_results");
  zl::write_shard(dir / "runs/a1.h5", sample_provenance(), sample_run("a1", 1, {}));
  fs::copy_file(dir / "runs/a1.h5", dir / "runs/copy.h5");
  expect_error_naming([&] { zl::merge_shards(dir.path().string(), dir / "results.h5", sample_provenance()); },
                      dir / "runs/copy.h5");
  expect_error_naming([&] { zl::merge_shards(dir / "nowhere", dir / "results.h5", sample_provenance()); },
                      dir / "nowhere");
}

TEST(Results, WriteTableReplaces) {
  TempDir dir("zl_results");
  const std::string path = dir / "results.h5";
  zl::write_shard(path, sample_provenance(), sample_run("a1", 1, {{"val_loss", 1.0}}));
  Table first;
  first.add("claim", std::vector<std::string>{"S001", "S002"});
  first.add("holds", std::vector<int64_t>{1, 0});
  zl::write_table(path, "claims", first);
  Table second;
  second.add("claim", std::vector<std::string>{"S003-a-longer-name"});
  second.add("p_value", std::vector<double>{0.03});
  zl::write_table(path, "claims", second);
  zl::write_table(path, "extra/nested", first);
  {
    zl::h5::File file = zl::h5::File::open(path, false);
    Table got = file.dataset("claims").read_table();
    EXPECT_EQ(got.names, second.names);
    EXPECT_TRUE(got.columns == second.columns);
    EXPECT_TRUE(file.dataset("extra/nested").read_table().columns == first.columns);
  }
  EXPECT_EQ(zl::read_shard(path).metrics.at("val_loss"), 1.0);  // the rest untouched
}

TEST(H5, AppendGrowsAnExtendibleDataset) {
  TempDir dir("zl_results");
  const std::string path = dir / "a.h5";
  zl::h5::File file = zl::h5::File::create(path);
  {
    zl::h5::Dataset ds = file.create_extendible("g/x", zl::h5::Elem::i64, 2);
    ds.append(std::vector<int64_t>{1, 2, 3});
    ds.append(std::vector<int64_t>{});
    ds.append(std::vector<int64_t>{4, 5});
    EXPECT_EQ(ds.size(), 5u);
    EXPECT_EQ(ds.read_int64s(), (std::vector<int64_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(ds.read_doubles(), (std::vector<double>{1, 2, 3, 4, 5}));
    EXPECT_EQ(ds.path(), "/g/x");
    file.group("g").set_attr("note", "é");
    file.group("g").set_attr("n", int64_t{7});
    file.group("g").set_attr("x", 0.5);
    EXPECT_EQ(file.group("g").attr_string("note"), "é");
    EXPECT_EQ(file.group("g").attr_int("n"), 7);
    EXPECT_EQ(file.group("g").attr_double("x"), 0.5);
    expect_error_naming([&] { file.group("g").attr_int("note"); }, path);
  }
  file.close();
  expect_error_naming([&] { zl::h5::File::open(dir / "missing.h5", false); }, dir / "missing.h5");
  expect_error_naming([&] { zl::h5::File::open(path, false).dataset("nope"); }, "open dataset 'nope'");
}

namespace {

TEST(AtomicFile, PublishesWholeAndSweepsOnlyDeadProcessesTemporaries) {
  TempDir dir("zl_results");
  const std::string target = dir / "sub/state.ini";
  fs::create_directories(dir.path() / "sub");
  zl::write_file_atomically(target, "step=3\n");
  std::ifstream in(target);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "step=3");

  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  // A dead process's temporary (a pid no process has), a live one's (ours), another host's.
  long dead = 4194000;
  while (::kill(static_cast<pid_t>(dead), 0) == 0 || errno != ESRCH) ++dead;
  const std::string stale = zl::temporary_name(target, host, dead);
  const std::string live = zl::temporary_name(target, host, ::getpid());
  const std::string elsewhere = zl::temporary_name(target, "another-host", dead);
  for (const auto& p : {stale, live, elsewhere}) std::ofstream(p) << "partial";
  EXPECT_EQ(zl::remove_stale_temporaries(dir.path().string()), 1);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(elsewhere));
}

}  // namespace
