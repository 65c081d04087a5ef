// The run stage of variant sfcl (seed 000 §2.1): the correction module is
// trained with the model; this stage measures what it costs and does.
//  - add_flops: the module's analytic FLOPs ("correction").
//  - finish: its measured time share per decoded token, on the step the
//    decode used (sim/step_replay.h): each replayed step timed with the
//    module and with it skipped (c = 1) back to back; best of 3 replays;
//    time_share_correction = 1 − t(skipped) / t(module).
//  - prepare: sfcl_off_val_loss, the validation loss with the module skipped
//    (the "naive removal" of docs/design.md#claims-and-statistics, S002-naive-removal), and the misfire
//    rates below. sfcl.at_inference = off decodes with the module skipped.
//
// Misfires (seed 000 §2.1: "当输入文本偏离预训练语料统计特征 ... 校验环的误触发率
// 飙升至34%"). A position's deviation is the mean of |c − 1| over every
// layer and channel: how far the correction moves the MLP input from
// identity. It "deviates strongly" above a threshold τ: sfcl.misfire_threshold
// if set, else the sfcl.misfire_quantile (0.95) quantile of the deviations on
// the training split. sfcl_misfire_rate is the share of positions above τ on
// the held-out split of the training corpus (near 1 − quantile when
// calibrated: the in-distribution reference), sfcl_ood_misfire_rate the share
// on data.eval_corpus (NaN without one). The absolute level follows τ; the
// comparison of the two is the measurement.
#pragma once
#include "sim/stages/variant.h"

namespace zl {

class SfclStage : public VariantStage {
 public:
  void prepare(const StageContext& ctx, RunRecord& r) override;
  DecodeOutput decode(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts,
                      const DecodeOptions& opt, at::Generator& gen, bool logged) override;
  void add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) override;
  void finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) override;
};

// Per-position deviation (mean |c − 1| over layers and channels) of the
// model's correction over `windows` evenly spaced windows of `tokens`.
std::vector<double> correction_deviations(Transformer& model, const torch::Tensor& tokens, int64_t windows,
                                          const torch::Device& device);

// Milliseconds per decode step with the correction module and with it
// skipped: `continuations` replayed after `prompts`, every step timed both
// ways back to back, the best of 3 replays (sim/step_replay.h). A step's
// time follows its shapes, so an untrained model gives the trained one's.
// The correction module's share of a decoded token's forward FLOPs (sim/cost.h)
// in a model of shape `mc` at the mean context a decoded token attends over
// (sim/run/run.cpp's): flops_share_correction, computed from shapes alone.
double correction_flops_share(const ModelConfig& mc, int64_t mean_context);

std::pair<double, double> correction_step_ms(Transformer& model, const std::vector<std::vector<int32_t>>& prompts,
                                             const std::vector<std::vector<int32_t>>& continuations, int64_t batch,
                                             int64_t max_new_tokens, bool fast_step);

// Tokens [N] int32 of the held-out documents of `corpus` (encoded with `tok`,
// eos between documents), only as many documents as give `enough` tokens.
torch::Tensor held_out_tokens(const RunConfig& cfg, const Tokenizer& tok, const std::string& corpus, int64_t enough);

}  // namespace zl
