// Training the sfvl verifier (docs/articles.md, seed 002 §2.1) as a classifier over
// token windows: positives are real windows of the corpus; negatives are
// real windows whose last 1 or 2 tokens were replaced, half by samples of the
// trained LM at a high temperature (plausible but unlikely continuations),
// half by uniformly random tokens (gross errors). A replacement that happens
// to reproduce the real token leaves a real window, labelled positive.
#pragma once
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <string>

#include "models/transformer.h"
#include "models/verifier.h"
#include "sim/config.h"
#include "sim/data.h"

namespace zl {

struct VerifierWindows {
  torch::Tensor tokens;  // [N,W] int64
  torch::Tensor labels;  // [N] float: 1 real, 0 corrupted
};

// `count` windows ending at seeded offsets of `stream` ([N] int32): half real,
// a quarter corrupted by LM samples at `temperature` (given up to
// `lm_context` real tokens before them), a quarter by random tokens.
VerifierWindows make_verifier_windows(Transformer& lm, const torch::Tensor& stream, int64_t count, int64_t window,
                                      int64_t lm_context, double temperature, uint64_t seed);

// Area under the ROC curve of `scores` for `labels` (1 positive), by ranks
// (ties count half), and the expected calibration error over 10 equal bins.
double auroc(const torch::Tensor& scores, const torch::Tensor& labels);
double calibration_error(const torch::Tensor& scores, const torch::Tensor& labels, int bins = 10);

// Trains a fresh verifier of shape `vc` on `windows` (binary cross-entropy,
// AdamW, batches of 256 drawn with `seed`).
Verifier train_verifier(const VerifierConfig& vc, const VerifierWindows& windows, int64_t steps, uint64_t seed);

struct VerifierReport {
  int64_t params = 0;
  double auroc = 0, ece = 0;                // held-out windows of the training corpus
  double auroc_ood = NAN, ece_ood = NAN;    // held-out windows of data.eval_corpus
  double train_seconds = 0;
};

// The report as run metrics: verifier_params, verifier_params_ratio (to the
// LM's `lm_params`), verifier_auroc, verifier_ece, and their _ood twins.
void record_verifier_report(const VerifierReport& rep, int64_t lm_params, std::map<std::string, double>& m);

// Loads the verifier cached in `checkpoint_dir` for this config (its own
// training keys hashed into the file name), or trains and caches it.
Verifier load_or_train_verifier(const RunConfig& cfg, Transformer& lm, const Dataset& ds,
                                const std::string& checkpoint_dir, VerifierReport& report);

}  // namespace zl
