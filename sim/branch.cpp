#include "sim/branch.h"

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "models/factory.h"
#include "sim/model_options.h"
#include "sim/rng_scope.h"
#include "sim/run_identity.h"
#include "sim/trainer.h"

namespace zl {
namespace fs = std::filesystem;

int64_t branch_step(const TrainConfig& t) {
  if (t.branch <= 0) return -1;
  const int64_t own = std::max<int64_t>(1, std::llround(t.branch * static_cast<double>(t.steps)));
  return std::max<int64_t>(0, t.steps - own);
}

bool trains_as_branch(const RunConfig& cfg) { return cfg.train.branch > 0 && trained_family(cfg) != "baseline"; }

std::string branch_point_dir(const RunConfig& cfg) {
  return (fs::path(identify(as_baseline(cfg)).checkpoint_dir) / ("branch-" + std::to_string(branch_step(cfg.train))))
      .string();
}

CheckpointState start_from_branch(const RunConfig& cfg, Transformer& model, torch::optim::AdamW& optim,
                                  const Dataset& data, const torch::Device& device) {
  const RunConfig base_cfg = as_baseline(cfg);
  const RunIdentity base_id = identify(base_cfg);
  const std::string dir = branch_point_dir(cfg);
  GlobalRngScope keep;  // the branch's own initialisation is drawn already; the trunk's draws leave no trace
  const ModelConfig mc = model_config(base_cfg, data.tokenizer->vocab_size());
  const CheckpointDir point(dir);
  if (!point.exists()) {
    // The baseline's own run trains the same model (same seed, same first
    // draws) and saves the branch point on its way; a complete baseline
    // without one was trained with another share.
    torch::manual_seed(static_cast<uint64_t>(base_cfg.seed));
    Transformer trunk = make_model("baseline", mc);
    train_model(base_cfg, base_id, trunk, data, device);
    if (!point.exists())
      throw std::runtime_error(base_id.checkpoint_dir + ": the baseline is trained but keeps no branch point at step " +
                               std::to_string(branch_step(cfg.train)) + " (it was trained with another train.branch, "
                               "or from scratch before branches existed); move it away to train it again, or set "
                               "train.branch to the share it was trained with");
  }

  Transformer trunk = make_model("baseline", mc);
  auto trunk_optim = make_optimizer(trunk, base_cfg.train);
  CheckpointState state = point.load(&trunk, &trunk_optim, "baseline");
  check_checkpoint_code(cfg, dir, state.code);
  trunk->to(device);

  torch::NoGradGuard no_grad;
  const auto ours = model->named_parameters();
  for (const auto& p : trunk->named_parameters()) {
    const auto* mine = ours.find(p.key());
    if (!mine || mine->sizes() != p.value().sizes())
      throw std::runtime_error(dir + ": the baseline's parameter " + p.key() + " is " +
                               (mine ? "shaped otherwise" : "missing") + " in the " + trained_family(cfg) +
                               " model; this family cannot branch from the baseline (set train.branch = 0)");
    mine->copy_(p.value());
    const auto* kept = param_state(trunk_optim, p.value());
    if (!kept) continue;  // a parameter no step has touched yet
    auto moments =
        std::make_unique<torch::optim::AdamWParamState>(static_cast<const torch::optim::AdamWParamState&>(*kept));
    moments->exp_avg(moments->exp_avg().clone());
    moments->exp_avg_sq(moments->exp_avg_sq().clone());
    set_param_state(optim, *mine, std::move(moments));
  }
  state.complete = false;
  state.train_seconds = 0;  // the branch's speed is its own steps'
  state.timed_tokens = 0;
  state.code = {};
  return state;
}

}  // namespace zl
