// A checkpoint belongs to the code that trained it (sim/training_code.h,
// issue 37 item 5): it records the commit and the training code's
// fingerprint; a run refuses one that other code trained unless
// train.stale_checkpoints = reuse, and records which commit trained its model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "models/factory.h"
#include "sim/data.h"
#include "sim/model_options.h"
#include "sim/results.h"
#include "sim/run_identity.h"
#include "sim/trainer.h"
#include "sim/training_code.h"
#include "tests/cpp/message_of.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/tiny_run.h"

namespace zl {
namespace {

TrainOutcome train(const RunConfig& c, const Dataset& ds) {
  torch::manual_seed(1);
  Transformer m = make_model("baseline", model_config(c, ds.tokenizer->vocab_size()));
  return train_model(c, identify(c), m, ds, torch::kCPU);
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// state.ini as another commit's code would have written it (or, with
// fingerprint empty, a checkpoint from before they were recorded).
void rewrite_code(const std::string& state, const std::string& commit, const std::string& fingerprint) {
  std::string text = read(state);
  text = std::regex_replace(text, std::regex("commit=[^\n]*\n"), fingerprint.empty() ? "" : "commit=" + commit + "\n");
  text = std::regex_replace(text, std::regex("training_code=[^\n]*\n"),
                            fingerprint.empty() ? "" : "training_code=" + fingerprint + "\n");
  std::ofstream(state) << text;
}

TEST(CheckpointCode, TheFingerprintIsSixteenHexDigitsAndTheCommitIsRead) {
  EXPECT_TRUE(std::regex_match(std::string(training_code_fingerprint()), std::regex("[0-9a-f]{16}")));
  EXPECT_FALSE(current_training_code().commit.empty());
  EXPECT_EQ(current_training_code().fingerprint, training_code_fingerprint());
}

TEST(CheckpointCode, AStaleCheckpointIsRefusedNamingItBothCommitsAndTheKeyThatAllowsIt) {
  TempDir dir("zl_code");
  RunConfig c = tiny_run(dir / "out");
  Dataset ds = prepare_data(c);
  const TrainOutcome first = train(c, ds);
  EXPECT_FALSE(first.reused);
  const std::string ckpt = identify(c).checkpoint_dir, state = ckpt + "/state.ini";
  // What it records: this build's code.
  EXPECT_NE(read(state).find("training_code=" + std::string(training_code_fingerprint())), std::string::npos);
  EXPECT_EQ(first.state.code.commit, current_training_code().commit);
  EXPECT_TRUE(train(c, ds).reused);  // the same code reuses it

  rewrite_code(state, "0123abc", "00000000deadbeef");
  const std::string msg = message_of([&] { train(c, ds); });
  EXPECT_NE(msg.find("checkpoint " + ckpt + " was trained by commit 0123abc (training code 00000000deadbeef)"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("(commit " + current_training_code().commit + ")"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--train.stale_checkpoints reuse"), std::string::npos) << msg;
  EXPECT_THROW(train(c, ds), StaleCheckpoint);

  // Allowed: reused as it is, and it still says which commit trained it.
  RunConfig allow = c;
  allow.train.stale_checkpoints = "reuse";
  EXPECT_EQ(run_id(allow), run_id(c));  // an output key: not part of what the run is
  const TrainOutcome reused = train(allow, ds);
  EXPECT_TRUE(reused.reused);
  EXPECT_EQ(reused.state.code.commit, "0123abc");

  // Written before checkpoints recorded their code: refused too.
  rewrite_code(state, "", "");
  EXPECT_NE(message_of([&] { train(c, ds); }).find("was written before checkpoints recorded the code"), std::string::npos);
}

TEST(CheckpointCode, IndexRowsKeepTheRunsCommitAndItsModels) {
  TempDir dir("zl_code");
  RunRecord r;
  r.run_id = "abc";
  r.train_id = "def";
  r.variant = "baseline";
  r.status = "complete";
  r.commit = "1111111";
  r.train_commit = "2222222,1111111";
  r.metrics["x"] = 1;
  Provenance p;
  p.git_commit = "1111111";
  write_shard(dir / "runs/abc.h5", p, r);
  const RunRecord back = read_run(dir / "runs/abc.h5", "abc");
  EXPECT_EQ(back.commit, "1111111");
  EXPECT_EQ(back.train_commit, "2222222,1111111");
  const auto rows = read_index(dir / "runs/abc.h5");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].strings.at("train_commit"), "2222222,1111111");
  EXPECT_EQ(rows[0].numbers.count("commit"), 0u);  // a string column, not a metric
}

}  // namespace
}  // namespace zl
