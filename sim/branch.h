// Uptraining: a model of another family than the baseline's (sfcl, fused)
// trained as a branch of the baseline of its seed
// (docs/design.md#branches-uptraining-from-the-baseline).
//
// With train.branch = f > 0 the baseline keeps a copy of its checkpoint at
// step S = steps − round(f·steps) (output.dir/checkpoints/<baseline>/branch-S).
// A branch run starts there: every parameter the baseline has takes the
// baseline's value and its AdamW moments, the new module's parameters start
// from their initialisation with no moments, and training goes on from step
// S with the baseline's schedule and batches (the sampler is a function of
// the seed and the step). The branch and its baseline then differ only in
// the module and what it changed over the last f of training, and both read
// the same tokens. Ainslie et al. 2023 (GQA) §2.1 convert trained checkpoints
// to another attention form the same way ("uptraining", 5% of the original
// steps); the claims study trains its branches for the last fifth of them.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "models/transformer.h"
#include "sim/checkpoint.h"
#include "sim/config.h"
#include "sim/data.h"

namespace zl {

// The step the branch starts from: steps − max(1, round(branch·steps)); -1
// when train.branch is 0 (trained from scratch).
int64_t branch_step(const TrainConfig& t);

// Whether `cfg`'s model trains as a branch of its baseline: train.branch > 0
// and a trained family other than the baseline's.
bool trains_as_branch(const RunConfig& cfg);

// Where the baseline of `cfg` (its config with variant = baseline) keeps
// its checkpoint at branch_step.
std::string branch_point_dir(const RunConfig& cfg);

// Starts `model` (and `optim`, built over it) at the baseline's branch point,
// training that baseline first when no process has (its run then reuses it).
// Returns the branch point's state: its step, its curves (the trunk's),
// no timed tokens. Throws std::runtime_error, naming the checkpoint and the
// key, when the baseline is complete without a branch point at this step
// (trained with another train.branch), or when the baseline has a parameter
// the model lacks or shapes otherwise (a family that reshapes the
// baseline's network cannot branch from it).
CheckpointState start_from_branch(const RunConfig& cfg, Transformer& model, torch::optim::AdamW& optim,
                                  const Dataset& data, const torch::Device& device);

}  // namespace zl
