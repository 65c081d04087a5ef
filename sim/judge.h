// The independent judge (docs/design.md#metrics-and-cost's reference model; issue 17 §7): a larger
// language model (at least kJudgeMinRatio times the study model's
// parameters), trained longer on the same corpus with the same tokenizer,
// that scores what the study's models generate. Without it a run's own LM
// grades its own alternatives.
//
// The judge is a baseline run of its own shape (judge.layers/heads/dim,
// judge.steps, judge.lr, judge.precision; seed 1), trained by the ordinary
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

constexpr double kJudgeMinRatio = 4;  // judge parameters / study model parameters, at least

// The run config the judge is trained as (its checkpoint is checkpoint_path() of it).
RunConfig judge_config(const RunConfig& cfg);

struct Judge {
  Transformer model{nullptr};
  double val_loss = 0;   // on the same validation windows as the study model
  int64_t params = 0;
  bool reused = false;   // loaded from a complete checkpoint (trained by an earlier run)
};

// Throws (naming judge.dim and judge.layers) when the judge would have fewer
// than kJudgeMinRatio times `model_params`; cheap, so a run checks it before
// training its own model.
void check_judge_size(const RunConfig& cfg, int64_t vocab, int64_t model_params);

// Trains the judge, or loads it.
Judge load_or_train_judge(const RunConfig& cfg, const Dataset& data, const torch::Device& device);

// Mean NLL (nats/token) under `model` of each `spans[i]` following
// `prefixes[i]` (NaN for an empty span); sequences longer than the model's
// context keep their last tokens.
std::vector<double> mean_nll(Transformer& model, const std::vector<std::vector<int32_t>>& prefixes,
                             const std::vector<std::vector<int32_t>>& spans);

}  // namespace zl
