// The run stage of variant fused (seed 002 §2.1, §4.2; docs/articles.md): the
// model's parts live in models/ (attention: key weighting and value
// distillation; logits_gate); this stage turns the run config into their
// typed options, counts their FLOPs, and computes the monitoring metrics of
// seed 002 §4.2 plus the KL divergence from the baseline trained on the same
// config, on the run's validation windows.
#pragma once
#include <cmath>
#include <map>
#include <string>

#include "models/fused_options.h"
#include "sim/model_options.h"
#include "sim/stages/variant.h"

namespace zl {


// Monitoring figures over validation windows (NaN for a part that is off).
struct FusedMonitor {
  double semantic_drift_score = NAN;         // std of |z_t − z_{t−1}| (last layer, heads concatenated) per 100-token block, mean
  // The same std divided by the block's mean step: scale-free, so it does not
  // grow with the width as the raw score does (0.57 at 2x64 to 2.75 at 6x192).
  double semantic_drift_score_normalized = NAN;
  double key_weight_stability = NAN;         // std of the key weights of all visible (query, key) pairs
  double value_distill_orthogonality = NAN;  // 1 − mean |cos| between distinct rows of P, mean over layers
  double logits_gate_effectiveness = NAN;    // share of positions whose top-5 order the gate changes
  double gate_suppress_true_rate = NAN;      // share of positions where the gate lowers the true token's log-prob (> 0.01 nats)
  double gate_true_nats = NAN;               // mean log-prob the true token loses to the gate (nats; < 0: gains)
  double gate_mean_factor = NAN;             // mean factor over the gate's candidates
};

// Runs the model over inputs x [B,T] with targets y [B,T]; accumulates into
// `acc` (call finish_monitor to get the figures).
struct MonitorAccumulator {
  double w_sum = 0, w_sq = 0, w_n = 0;
  double drift_sum = 0, drift_n = 0, drift_cv_sum = 0;
  double reorder = 0, suppress = 0, nats = 0, positions = 0, factor_sum = 0, factor_n = 0;
};
void accumulate_monitor(Transformer& model, const torch::Tensor& x, const torch::Tensor& y, MonitorAccumulator& acc);
FusedMonitor finish_monitor(Transformer& model, const MonitorAccumulator& acc);
// Semantic drift of distilled states z [B,T,D] into `acc`: per sequence and
// 100-token block the std of the step lengths |z_t − z_{t−1}| (and that std
// over the block's mean step), summed; finish_monitor takes their means.
void add_drift(const torch::Tensor& z, MonitorAccumulator& acc);

// Mean over positions of KL(p || q) of next-token distributions, logits [.., V].
double mean_kl(const torch::Tensor& logits_p, const torch::Tensor& logits_q);

class FusedStage : public VariantStage {
 public:
  void add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) override;
  void finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) override;
};

}  // namespace zl
