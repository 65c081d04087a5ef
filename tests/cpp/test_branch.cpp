// Uptraining (sim/branch.h): with train.branch a model of another family
// than the baseline's starts at its baseline's checkpoint at the branch
// point, with the baseline's weights and AdamW moments, and trains the rest
// of the schedule; the baseline keeps that checkpoint; a baseline trained
// without one is named, as is a family that reshapes the baseline's network.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "models/factory.h"
#include "sim/branch.h"
#include "sim/optimizer.h"
#include "sim/data.h"
#include "sim/model_options.h"
#include "sim/run_identity.h"
#include "sim/trainer.h"
#include "tests/cpp/message_of.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/tiny_run.h"

namespace zl {
namespace {

// Six steps, so that a share of a half branches at step 3.
RunConfig branch_run(const std::string& dir, const std::string& variant, double branch) {
  RunConfig c = tiny_run(dir);
  c.variant = variant;
  c.seed = 2;
  c.train.steps = 6;
  c.train.eval_every = 6;
  c.train.checkpoint_every = 2;
  c.train.branch = branch;
  return c;
}

Transformer fresh(const RunConfig& c, const Dataset& ds) {
  torch::manual_seed(static_cast<uint64_t>(c.seed));
  return make_model(trained_family(c), model_config(c, ds.tokenizer->vocab_size()));
}

TrainOutcome train(const RunConfig& c, const Dataset& ds) {
  Transformer m = fresh(c, ds);
  return train_model(c, identify(c), m, ds, torch::kCPU);
}

TEST(Branch, TheStepIsTheShareFromTheEndAndOnlyOtherFamiliesBranch) {
  TrainConfig t;
  t.steps = 4800;
  EXPECT_EQ(branch_step(t), -1);
  t.branch = 0.25;
  EXPECT_EQ(branch_step(t), 3600);
  t.steps = 6;
  t.branch = 0.01;  // at least one step of its own
  EXPECT_EQ(branch_step(t), 5);
  EXPECT_FALSE(trains_as_branch(branch_run("x", "baseline", 0.5)));
  EXPECT_FALSE(trains_as_branch(branch_run("x", "sfvl", 0.5)));  // decodes the baseline's model
  EXPECT_FALSE(trains_as_branch(branch_run("x", "sfcl", 0)));
  EXPECT_TRUE(trains_as_branch(branch_run("x", "sfcl", 0.5)));
  EXPECT_TRUE(trains_as_branch(branch_run("x", "oet", 0.5)));  // sfcl's model
}

TEST(Branch, TheShareEntersTheBranchsIdentityOnly) {
  const RunConfig base0 = branch_run("x", "baseline", 0), base = branch_run("x", "baseline", 0.5);
  EXPECT_EQ(train_id(base0), train_id(base));
  EXPECT_EQ(run_id(base0), run_id(base));
  EXPECT_EQ(train_id(branch_run("x", "sfvl", 0.5)), train_id(base));
  EXPECT_NE(train_id(branch_run("x", "sfcl", 0)), train_id(branch_run("x", "sfcl", 0.5)));
  EXPECT_NE(train_id(branch_run("x", "sfcl", 0.25)), train_id(branch_run("x", "sfcl", 0.5)));
}

TEST(Branch, ABranchStartsWithTheBaselinesWeightsMomentsAndCurvesAtItsPoint) {
  TempDir dir("zl_branch");
  const RunConfig sfcl = branch_run(dir / "out", "sfcl", 0.5), base = branch_run(dir / "out", "baseline", 0.5);
  Dataset ds = prepare_data(sfcl);

  // Training the branch trains its baseline first, which keeps step 3.
  const TrainOutcome branch = train(sfcl, ds);
  const std::string point = identify(base).checkpoint_dir + "/branch-3";
  EXPECT_EQ(branch_point_dir(sfcl), point);
  ASSERT_TRUE(std::filesystem::exists(point + "/state.ini"));
  const TrainOutcome trunk = train(base, ds);
  EXPECT_TRUE(trunk.reused);  // the baseline's own run reuses what the branch trained

  // The branch's curve is the baseline's up to the point, then its own.
  const auto& ours = branch.state.curves.at("train/loss").value;
  const auto& theirs = trunk.state.curves.at("train/loss").value;
  ASSERT_EQ(ours.size(), 6u);
  ASSERT_EQ(theirs.size(), 6u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(ours[i], theirs[i]) << "step " << i + 1;
  EXPECT_NE(ours[3], theirs[3]);  // the module changes the fourth step's loss

  // The start itself: every baseline parameter with its value and moments at
  // step 3; the module's own parameters as initialised, without moments.
  Transformer at_point = fresh(base, ds);
  auto point_optim = make_optimizer(at_point, base.train);
  CheckpointDir(point).load(&at_point, &point_optim, "baseline");
  Transformer model = fresh(sfcl, ds), initial = fresh(sfcl, ds);
  auto optim = make_optimizer(model, sfcl.train);
  const CheckpointState s = start_from_branch(sfcl, model, optim, ds, torch::kCPU);
  EXPECT_EQ(s.step, 3);
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(s.timed_tokens, 0);
  const auto trunk_params = at_point->named_parameters();
  const auto initial_params = initial->named_parameters();
  size_t shared = 0, own = 0;
  for (const auto& p : model->named_parameters()) {
    const auto* t = trunk_params.find(p.key());
    if (!t) {
      ++own;
      EXPECT_TRUE(torch::equal(p.value(), initial_params[p.key()])) << p.key();
      EXPECT_EQ(param_state(optim, p.value()), nullptr) << p.key();
      continue;
    }
    ++shared;
    EXPECT_TRUE(torch::equal(p.value(), *t)) << p.key();
    ASSERT_NE(param_state(optim, p.value()), nullptr) << p.key();
    ASSERT_NE(param_state(point_optim, *t), nullptr) << p.key();
    const auto& mine = static_cast<const torch::optim::AdamWParamState&>(*param_state(optim, p.value()));
    const auto& kept = static_cast<const torch::optim::AdamWParamState&>(*param_state(point_optim, *t));
    EXPECT_EQ(mine.step(), 3) << p.key();
    EXPECT_TRUE(torch::equal(mine.exp_avg(), kept.exp_avg())) << p.key();
    EXPECT_TRUE(torch::equal(mine.exp_avg_sq(), kept.exp_avg_sq())) << p.key();
    EXPECT_NE(mine.exp_avg().data_ptr(), kept.exp_avg().data_ptr()) << p.key();  // a copy
  }
  EXPECT_EQ(shared, trunk_params.size());
  EXPECT_GT(own, 0u);
}

TEST(Branch, ABaselineTrainedWithoutTheBranchPointIsNamedWithTheKey) {
  TempDir dir("zl_branch_missing");
  const RunConfig base = branch_run(dir / "out", "baseline", 0), sfcl = branch_run(dir / "out", "sfcl", 0.5);
  Dataset ds = prepare_data(base);
  train(base, ds);  // from scratch: no branch point kept
  const std::string msg = message_of([&] { train(sfcl, ds); });
  EXPECT_NE(msg.find(identify(base).checkpoint_dir + ": the baseline is trained but keeps no branch point at step 3"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("train.branch"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zl
