#include "sim/stages/sfcl_stage.h"

#include <algorithm>
#include <cmath>

#include "datasets/batch_sampler.h"
#include "datasets/corpus.h"
#include "sim/cost.h"
#include "sim/metrics.h"
#include "sim/step_replay.h"
#include "sim/trainer.h"

namespace zl {
namespace {

// Restores every block's correction mode when it goes out of scope.
struct ModeGuard {
  Transformer& model;
  explicit ModeGuard(Transformer& m, CorrectionMode mode) : model(m) { model->set_correction_mode(mode); }
  ~ModeGuard() { model->set_correction_mode(CorrectionMode::Module); }
};

}  // namespace

std::vector<double> correction_deviations(Transformer& model, const torch::Tensor& tokens, int64_t windows,
                                          const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model->eval();
  const int64_t B = std::min<int64_t>(8, windows), count = (windows + B - 1) / B;
  BatchSampler sampler(tokens, B, model->cfg.context, /*seed=*/0);
  std::vector<double> out;
  for (int64_t i = 0; i < count; ++i) {
    auto x = sampler.eval_batch(i, count).first.to(device);  // [B,T]
    auto cs = model->corrections(x);                        // L x [B,T,C]
    auto dev = torch::stack(cs, 0).sub(1.0).abs().mean(std::vector<int64_t>{0, 3}).to(torch::kCPU, torch::kDouble).contiguous();  // [B,T]
    out.insert(out.end(), dev.data_ptr<double>(), dev.data_ptr<double>() + dev.numel());
  }
  return out;
}

torch::Tensor held_out_tokens(const RunConfig& cfg, const Tokenizer& tok, const std::string& corpus, int64_t enough) {
  // The split of sim/data.cpp (fixed corpus seed 1234, data.val_fraction), but
  // only as many held-out documents are encoded as the probes need: encoding
  // all of a large corpus (the license texts: minutes here) for 16 windows
  // would dominate a study.
  const uint64_t corpus_seed = 1234;
  auto docs = split_corpus(load_corpus(corpus_options(cfg.data, corpus), corpus_seed), cfg.data.val_fraction, corpus_seed).val;
  std::vector<int32_t> ids;
  for (const auto& d : docs) {
    auto part = tok.encode(d.text);
    ids.insert(ids.end(), part.begin(), part.end());
    ids.push_back(tok.eos_id());
    if (static_cast<int64_t>(ids.size()) >= enough) break;
  }
  if (static_cast<int64_t>(ids.size()) <= cfg.model.context + 1)
    throw std::runtime_error("data.eval_corpus '" + corpus + "': its held-out documents hold " +
                             std::to_string(ids.size()) + " tokens, too few for one window of model.context");
  return torch::tensor(ids, torch::kInt);
}

void SfclStage::prepare(const StageContext& ctx, RunRecord& r) {
  auto& model = ctx.model;
  auto& m = r.metrics;
  const auto& s = ctx.cfg.sfcl;

  // The naive removal: the trained model with its module skipped.
  {
    ModeGuard off(model, CorrectionMode::Identity);
    BatchSampler val(ctx.data.val.tokens, ctx.cfg.train.batch, ctx.cfg.model.context, static_cast<uint64_t>(ctx.cfg.seed));
    m["sfcl_off_val_loss"] = evaluate_loss(model, val, ctx.cfg.train.eval_batches, ctx.device,
                                           ctx.cfg.train.precision == "bf16");
  }
  model->set_correction_mode(CorrectionMode::Module);

  // Misfire rates: calibrate τ on the training split, measure on held-out
  // in-distribution text and on the out-of-distribution corpus.
  const auto train_dev = correction_deviations(model, ctx.data.train.tokens, s.probe_windows, ctx.device);
  const double tau = s.misfire_threshold > 0 ? s.misfire_threshold : percentile(train_dev, 100.0 * s.misfire_quantile);
  auto rate = [tau](const std::vector<double>& d) {
    if (d.empty()) return std::nan("");
    return static_cast<double>(std::count_if(d.begin(), d.end(), [tau](double v) { return v > tau; })) / d.size();
  };
  const auto val_dev = correction_deviations(model, ctx.data.val.tokens, s.probe_windows, ctx.device);
  m["sfcl_misfire_threshold"] = tau;
  m["sfcl_deviation_mean"] = mean(val_dev);
  m["sfcl_misfire_rate"] = rate(val_dev);
  m["sfcl_ood_misfire_rate"] = std::nan("");
  m["sfcl_ood_deviation_mean"] = std::nan("");
  if (!ctx.cfg.data.eval_corpus.empty()) {
    const auto ood = held_out_tokens(ctx.cfg, *ctx.data.tokenizer, ctx.cfg.data.eval_corpus,
                                     4 * s.probe_windows * ctx.cfg.model.context);
    const auto ood_dev = correction_deviations(model, ood, s.probe_windows, ctx.device);
    m["sfcl_ood_deviation_mean"] = mean(ood_dev);
    m["sfcl_ood_misfire_rate"] = rate(ood_dev);
  }
}

DecodeOutput SfclStage::decode(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts,
                               const DecodeOptions& opt, at::Generator& gen, bool logged) {
  ModeGuard mode(ctx.model, ctx.cfg.sfcl.at_inference ? CorrectionMode::Module : CorrectionMode::Identity);
  return zl::decode(ctx.model, prompts, opt, gen);
}

void SfclStage::add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) {
  const auto& mc = ctx.model->cfg;
  per_module["correction"] = ctx.cfg.sfcl.at_inference ? mc.layers * CorrectionImpl::flops(mc.dim, mc.correction_hidden) : 0.0;
}

double correction_flops_share(const ModelConfig& mc, int64_t mean_context) {
  const double module_flops = mc.layers * CorrectionImpl::flops(mc.dim, mc.correction_hidden);
  return module_flops / (total_flops(flops_per_token(mc, mean_context)) + module_flops);
}

void SfclStage::finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) {
  auto& m = r.metrics;
  const auto& mc = ctx.model->cfg;
  // The share the module has (or would have) in a decoded token's FLOPs: what the width is solved for.
  m["flops_share_correction"] = correction_flops_share(mc, mean_decode_context(mc.context, ctx.cfg.decode.max_new_tokens));

  // On the step the decode used.
  const auto [with, without] = correction_step_ms(ctx.model, prompts.tokens, quality.continuations, ctx.cfg.decode.batch,
                                                  ctx.cfg.decode.max_new_tokens, quality.fast_step);
  m["sfcl_step_ms_module"] = with;
  m["sfcl_step_ms_identity"] = without;
  m["time_share_correction"] = 1.0 - without / with;
}

std::pair<double, double> correction_step_ms(Transformer& model, const std::vector<std::vector<int32_t>>& prompts,
                                             const std::vector<std::vector<int32_t>>& continuations, int64_t batch,
                                             int64_t max_new_tokens, bool fast_step) {
  const CorrectionMode modes[2] = {CorrectionMode::Module, CorrectionMode::Identity};
  auto ms = best_replay_step_ms(3, [&] {
    return replay_step_ms(model, prompts, continuations, batch, max_new_tokens, fast_step, 2,
                          [&](int k, DecodeStep*) { model->set_correction_mode(modes[k]); });
  });
  return {ms[0], ms[1]};
}

std::unique_ptr<VariantStage> make_sfcl_stage(const RunConfig&) { return std::make_unique<SfclStage>(); }

}  // namespace zl
