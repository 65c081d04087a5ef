#include "sim/stages/latent_kv_stage.h"

#include <cmath>
#include <vector>

#include "datasets/batch_sampler.h"
#include "models/latent_kv.h"
#include "sim/metrics.h"
#include "sim/trainer.h"

namespace zl {

double fit_latent_for_run(const RunConfig& cfg, Transformer& model, const torch::Tensor& train_tokens) {
  if (cfg.variant != "latent_kv" || cfg.latent.mode != "svd") return std::nan("");
  LatentSvdOptions o = latent_svd_options(cfg);
  if (!train_tokens.defined()) {
    o.whiten = false;
    return fit_latent_svd(model, o);
  }
  // Evenly spaced training windows, the same for every seed and arm (as the
  // oet table's), in batches of at most 8.
  const int64_t n = cfg.latent.svd_calib_windows, B = std::min<int64_t>(8, n), count = (n + B - 1) / B;
  BatchSampler sampler(train_tokens, B, cfg.model.context, /*seed=*/0);
  std::vector<torch::Tensor> windows;
  for (int64_t i = 0; i < count; ++i) windows.push_back(sampler.eval_batch(i, count).first);  // [B,T]
  return fit_latent_svd(model, o, attention_input_grams(model, windows));
}

namespace {

class LatentKvStage : public VariantStage {
 public:
  void prepare(const StageContext& ctx, RunRecord& r) override {
    const RunConfig& cfg = ctx.cfg;
    auto& m = r.metrics;
    m["latent_rank"] = static_cast<double>(latent_rank(cfg));
    m["latent_svd_rel_error"] = std::nan("");
    if (cfg.latent.mode != "svd") return;
    // Palu: the trained baseline, factorised; its quality is measured again
    // on the same validation windows the trainer used.
    m["latent_svd_rel_error"] = fit_latent_for_run(cfg, ctx.model, ctx.data.train.tokens);
    m["params"] = static_cast<double>(ctx.model->parameter_count());
    const TrainConfig& t = cfg.train;
    BatchSampler val(ctx.data.val.tokens, t.batch, cfg.model.context, static_cast<uint64_t>(cfg.seed));
    const double loss = evaluate_loss(ctx.model, val, t.eval_batches, ctx.device, t.precision == "bf16");
    ctx.model->eval();  // evaluate_loss leaves the model in training mode
    m["val_loss_trained"] = m["val_loss"];
    m["val_loss"] = loss;
    m["val_ppl"] = std::exp(loss);
    m["bpb"] = bits_per_byte(loss, ctx.data.val.tokens.numel(), ctx.data.val.text_bytes);
  }
};

}  // namespace

std::unique_ptr<VariantStage> make_latent_kv_stage(const RunConfig&) { return std::make_unique<LatentKvStage>(); }

}  // namespace zl
