// `zerolayer submit`'s job scripts (sim/study/slurm_submit.h): the text --dry-run
// prints, what a task's shell hands to zerolayer, and the refusals. The real
// SLURM round trip is tests/python/test_slurm.py.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <functional>

#include "sim/config.h"
#include "sim/study/slurm_submit.h"
#include "tests/cpp/temp_dir.h"

namespace zl {
namespace {

SubmitOptions options() {
  SubmitOptions o;
  o.executable = "/opt/zl/bin/zerolayer";
  o.study = "/home/me/ablations/smoke.ini";
  o.output_dir = "/scratch/smoke";
  o.workdir = "/home/me";
  o.name = "smoke";
  o.runs = 4;
  o.shards = 2;
  o.cpus_per_task = 2;
  o.overrides = {{"train.steps", "40"}, {"output.dir", "results/x"}, {"decode.temperature", "0.8"}};
  return o;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string error_of(const SubmitOptions& o) {
  try {
    slurm_scripts(o);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(SlurmSubmit, ArrayScriptRunsOneSlicePerTaskWithTheOverrides) {
  const auto s = slurm_scripts(options());
  EXPECT_EQ(s.dir, "/scratch/smoke/slurm");
  EXPECT_EQ(s.array_path, "/scratch/smoke/slurm/array.sbatch");
  const std::string& a = s.array_text;
  EXPECT_EQ(a.rfind("#!/bin/bash\n", 0), 0u) << a;
  EXPECT_TRUE(has(a, "#SBATCH --job-name=zl-smoke\n")) << a;
  EXPECT_TRUE(has(a, "#SBATCH --array=0-1\n")) << a;
  EXPECT_TRUE(has(a, "#SBATCH --cpus-per-task=2\n")) << a;
  EXPECT_TRUE(has(a, "#SBATCH --output=/scratch/smoke/slurm/task-%A_%a.log\n")) << a;
  EXPECT_TRUE(has(a, "#SBATCH --chdir=/home/me\n")) << a;
  EXPECT_TRUE(has(a, "exec /opt/zl/bin/zerolayer ablate /home/me/ablations/smoke.ini --shard "
                     "\"${SLURM_ARRAY_TASK_ID:?not an array task: submit this script with sbatch}/2\"")) << a;
  // Every task writes to the one absolute output.dir, whatever the override said.
  EXPECT_TRUE(has(a, "--output.dir /scratch/smoke \\\n  --train.steps 40 \\\n  --decode.temperature 0.8\n")) << a;
  EXPECT_FALSE(has(a, "results/x")) << a;
  // No partition, time or memory unless asked: the cluster's defaults.
  EXPECT_FALSE(has(a, "--partition") || has(a, "--time") || has(a, "--mem")) << a;
  // OpenMP threads sleep while they wait unless the environment says otherwise
  // (tasks on one node share its cores), set after the last #SBATCH line
  // (sbatch reads none past a command) and before zerolayer starts.
  const auto policy = a.find("\nexport OMP_WAIT_POLICY=\"${OMP_WAIT_POLICY:-PASSIVE}\"\n");
  ASSERT_NE(policy, std::string::npos) << a;
  EXPECT_GT(policy, a.rfind("#SBATCH")) << a;
  EXPECT_LT(policy, a.find("\nexec ")) << a;
}

TEST(SlurmSubmit, MergeRunsAfterTheArrayAndResourcesGoToBothJobs) {
  auto o = options();
  o.partition = "short";
  o.time = "1:30:00";
  o.mem = "4G";
  const auto s = slurm_scripts(o);
  for (const std::string* text : {&s.array_text, &s.merge_text}) {
    EXPECT_TRUE(has(*text, "#SBATCH --partition=short\n")) << *text;
    EXPECT_TRUE(has(*text, "#SBATCH --time=1:30:00\n")) << *text;
    EXPECT_TRUE(has(*text, "#SBATCH --mem=4G\n")) << *text;
  }
  const std::string& m = s.merge_text;
  EXPECT_TRUE(has(m, "#SBATCH --job-name=zl-smoke-merge\n")) << m;
  EXPECT_TRUE(has(m, "#SBATCH --kill-on-invalid-dep=yes\n")) << m;
  EXPECT_TRUE(has(m, "#SBATCH --output=/scratch/smoke/slurm/merge-%j.log\n")) << m;
  // The merge job is the unsharded ablate: every run complete, it times the
  // runs awaiting paired timing on its one node, then merges; same overrides.
  EXPECT_TRUE(has(m, "\nexec /opt/zl/bin/zerolayer ablate /home/me/ablations/smoke.ini \\\n  --output.dir "
                     "/scratch/smoke \\\n  --train.steps 40 \\\n  --decode.temperature 0.8\n")) << m;
  EXPECT_TRUE(has(m, "#SBATCH --cpus-per-task=2\n")) << m;  // timing needs the runs' threads
  EXPECT_FALSE(has(m, "--array")) << m;

  // What --dry-run prints: both scripts, then the two submissions in order.
  const std::string d = describe_submission(s);
  EXPECT_TRUE(has(d, "==> /scratch/smoke/slurm/array.sbatch <==\n" + s.array_text)) << d;
  EXPECT_TRUE(has(d, "==> /scratch/smoke/slurm/merge.sbatch <==\n" + s.merge_text)) << d;
  const auto first = d.find("sbatch --parsable /scratch/smoke/slurm/array.sbatch");
  const auto second = d.find("sbatch --parsable --dependency=afterok:<array job id> /scratch/smoke/slurm/merge.sbatch");
  ASSERT_NE(first, std::string::npos) << d;
  ASSERT_NE(second, std::string::npos) << d;
  EXPECT_LT(first, second);
}

// The script run by bash, as slurmd would run task 1: the words zerolayer
// receives, values with spaces and quotes intact.
TEST(SlurmSubmit, ATaskHandsZerolayerItsSliceAndTheOverridesWordForWord) {
  TempDir dir("zl_slurm");
  const std::string fake = dir / "zerolayer";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\nprintf '[%s]\\n' \"$@\"\n";
  }
  ::chmod(fake.c_str(), 0755);
  auto o = options();
  o.executable = fake;
  o.overrides = {{"decode.prompt", "it's a \"deal\" $HOME"}};
  const std::string script = dir / "array.sbatch";
  std::ofstream(script) << slurm_scripts(o).array_text;

  auto run = [&](const std::string& env) {
    std::string out;
    FILE* p = ::popen((env + " bash " + script + " 2>&1").c_str(), "r");
    char buf[512];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    ::pclose(p);
    return out;
  };
  EXPECT_EQ(run("SLURM_ARRAY_TASK_ID=1"),
            "[ablate]\n[/home/me/ablations/smoke.ini]\n[--shard]\n[1/2]\n[--output.dir]\n[/scratch/smoke]\n"
            "[--decode.prompt]\n[it's a \"deal\" $HOME]\n");
  // Outside an array the script stops before zerolayer runs: no slice is guessed.
  const std::string outside = run("env -u SLURM_ARRAY_TASK_ID");
  EXPECT_TRUE(has(outside, "not an array task")) << outside;
  EXPECT_FALSE(has(outside, "[ablate]")) << outside;
}

// The wait policy a task's zerolayer sees: sleeping threads by default, the
// submitter's own choice when the environment sbatch passes on sets one.
TEST(SlurmSubmit, ATaskLetsOpenMPThreadsSleepUnlessTheEnvironmentSaysOtherwise) {
  TempDir dir("zl_slurm");
  const std::string fake = dir / "zerolayer";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\nprintf 'policy=%s\\n' \"$OMP_WAIT_POLICY\"\n";
  }
  ::chmod(fake.c_str(), 0755);
  auto o = options();
  o.executable = fake;
  const std::string script = dir / "array.sbatch";
  std::ofstream(script) << slurm_scripts(o).array_text;
  auto run = [&](const std::string& env) {
    std::string out;
    FILE* p = ::popen(("env " + env + " SLURM_ARRAY_TASK_ID=0 bash " + script + " 2>&1").c_str(), "r");
    char buf[512];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    ::pclose(p);
    return out;
  };
  EXPECT_EQ(run("-u OMP_WAIT_POLICY"), "policy=PASSIVE\n");
  EXPECT_EQ(run("OMP_WAIT_POLICY="), "policy=PASSIVE\n");  // set but empty: no policy, so the default
  EXPECT_EQ(run("OMP_WAIT_POLICY=ACTIVE"), "policy=ACTIVE\n");
}

TEST(SlurmSubmit, BadInputIsRefusedNamingTheOption) {
  const std::vector<std::pair<std::function<void(SubmitOptions&)>, std::string>> cases = {
      {[](SubmitOptions& o) { o.shards = 0; }, "--shards: must be at least 1, got 0"},
      {[](SubmitOptions& o) { o.shards = 5; }, "--shards 5: the study has only 4 run(s)"},
      {[](SubmitOptions& o) { o.cpus_per_task = 0; }, "--cpus-per-task: must be at least 1"},
      {[](SubmitOptions& o) { o.time = "two hours"; }, "--time: 'two hours' is not a SLURM time"},
      {[](SubmitOptions& o) { o.mem = "lots"; }, "--mem: 'lots' is not a SLURM memory size"},
      {[](SubmitOptions& o) { o.partition = "a\n#SBATCH --x"; }, "--partition: "},
      {[](SubmitOptions& o) { o.output_dir = "/scratch/my results"; }, "output.dir: '/scratch/my results' cannot go"},
      {[](SubmitOptions& o) { o.output_dir = "/scratch/100%"; }, "output.dir: '/scratch/100%' holds a '%'"},
      {[](SubmitOptions& o) { o.output_dir = "results/smoke"; }, "output.dir: 'results/smoke' must be an absolute"},
  };
  for (const auto& [change, expected] : cases) {
    auto o = options();
    change(o);
    const std::string msg = error_of(o);
    EXPECT_TRUE(has(msg, expected)) << "expected '" << expected << "', got '" << msg << "'";
  }
  for (const char* ok : {"90", "1:30:00", "2-12", "2-12:30:00", "UNLIMITED"}) {
    auto o = options();
    o.time = ok;
    EXPECT_EQ(error_of(o), "") << ok;
  }
}

TEST(SlurmSubmit, ShellQuoteLeavesPlainWordsAndQuotesTheRest) {
  EXPECT_EQ(shell_quote("/a/b-c_d.ini"), "/a/b-c_d.ini");
  EXPECT_EQ(shell_quote("0.8"), "0.8");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
}

TEST(SlurmSubmit, WithoutSbatchOnPathSubmitSaysSo) {
  TempDir dir("zl_slurm");
  auto o = options();
  o.output_dir = dir.path().string();
  const auto scripts = slurm_scripts(o);
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", (dir / "empty").c_str(), 1);
  std::string msg;
  try {
    submit_to_slurm(scripts);
  } catch (const std::exception& e) {
    msg = e.what();
  }
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_TRUE(has(msg, "sbatch not found on PATH")) << msg;
}

}  // namespace
}  // namespace zl
