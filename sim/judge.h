// The independent judge (docs/design.md#metrics-and-cost's reference model; issue 17 §7): a
// language model at least the study model's size, trained from its own seed
// on more tokens of the same corpus with the same tokenizer, that scores what
// the study's models generate. Without it a run's own LM grades its own
// alternatives. What makes it a judge is its validation loss below the
// models' (judge_val_loss beside val_loss): on the contracts corpus a model
// five times larger learned no faster per token (docs/notes/claims-2026-12.md),
// so the claims study's judge is the models' shape trained twice as long.
//
// The judge is a baseline run of its own shape (judge.layers/heads/dim,
// judge.steps, judge.lr, judge.precision; seed kJudgeSeed), trained by the ordinary
// trainer into output.dir/checkpoints/<its train_id>. Its train_id hashes the
// data and tokenizer keys with its own shape, so every run of a study on one
// corpus and tokenizer shares it: the first run trains it (under the
// checkpoint's lock, so concurrent shards wait), every later one loads it.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "models/transformer.h"
#include "sim/config.h"
#include "sim/data.h"

namespace zl {

constexpr double kJudgeMinRatio = 1;  // judge parameters / study model parameters, at least
// No study's seed: the judge shares neither initialisation nor batch order
// with a model it judges (with seed 1 it had seed 1's batches).
constexpr int64_t kJudgeSeed = 104729;

// The run config the judge is trained as (its checkpoint is checkpoint_path() of it).
RunConfig judge_config(const RunConfig& cfg);

struct Judge {
  Transformer model{nullptr};
  double val_loss = 0;   // on the same validation windows as the study model
  int64_t params = 0;
  bool reused = false;   // loaded from a complete checkpoint (trained by an earlier run)
};

// Throws (naming judge.dim and judge.layers) when the judge would have fewer
// parameters than `cfg`'s language model (its shape as a baseline: a
// variant's module is not the model the judge is compared with); cheap, so a
// run checks it before training its own model.
void check_judge_size(const RunConfig& cfg, int64_t vocab);

// Trains the judge, or loads it.
Judge load_or_train_judge(const RunConfig& cfg, const Dataset& data, const torch::Device& device);

// Mean NLL (nats/token) under `model` of each `spans[i]` following
// `prefixes[i]` (NaN for an empty span); sequences longer than the model's
// context keep their last tokens.
std::vector<double> mean_nll(Transformer& model, const std::vector<std::vector<int32_t>>& prefixes,
                             const std::vector<std::vector<int32_t>>& spans);

}  // namespace zl
