// model → trainer: AdamW with warm-up + cosine, gradient clipping, periodic
// validation, checkpoints with resume, and a clear failure on a non-finite
// loss. The loop reads top to bottom; the learning rate is a pure
// function of the step, never restored from the optimizer.
#pragma once
#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "datasets/batch_sampler.h"
#include "models/transformer.h"
#include "sim/checkpoint.h"
#include "sim/config.h"
#include "sim/data.h"
#include "sim/optimizer.h"
#include "sim/run_identity.h"

namespace zl {

class NonFiniteLoss : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A checkpoint trained by other code than this build's (sim/training_code.h),
// refused under train.stale_checkpoints = refuse (the default).
class StaleCheckpoint : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Refuses (StaleCheckpoint) or, under train.stale_checkpoints = reuse, warns
// about a checkpoint at `checkpoint` that `recorded` trained, when that is not
// this build's training code.
void check_checkpoint_code(const RunConfig& cfg, const std::string& checkpoint, const TrainingCode& recorded);

struct TrainOutcome {
  CheckpointState state;   // curves, steps, timing
  double train_tok_s = 0;  // tokens per second over timed training steps
  double val_loss = 0;     // at the end of training
  bool reused = false;     // a complete checkpoint was found (trained by an earlier run)
};

double learning_rate(const TrainConfig& t, int64_t step);

// Mean validation loss over the fixed validation windows.
double evaluate_loss(Transformer& model, const BatchSampler& val, int64_t batches, const torch::Device& device,
                     bool bf16);

// Trains (resuming from, or reusing, id.checkpoint_dir); `id` is identify(cfg).
TrainOutcome train_model(const RunConfig& cfg, const RunIdentity& id, Transformer& model, const Dataset& data,
                         const torch::Device& device);

// identify(cfg).checkpoint_dir, for a side model's config (a draft, a judge).
std::string checkpoint_path(const RunConfig& cfg);

}  // namespace zl
