#include "sim/latent_kv_stage.h"

#include <cmath>

#include "models/latent_kv.h"
#include "sim/metrics.h"
#include "sim/trainer.h"

namespace zl {

double fit_latent_for_run(const RunConfig& cfg, Transformer& model) {
  if (cfg.variant != "latent_kv" || cfg.latent.mode != "svd") return std::nan("");
  return fit_latent_svd(model, latent_rank(cfg), cfg.latent.svd_factor == "separate");
}

namespace {

class LatentKvStage : public VariantStage {
 public:
  void prepare(const StageContext& ctx, RunRecord& r) override {
    const RunConfig& cfg = ctx.cfg;
    auto& m = r.metrics;
    m["latent_rank"] = static_cast<double>(latent_rank(cfg));
    if (cfg.latent.mode != "svd") return;
    // Palu: the trained baseline, factorised; its quality is measured again
    // on the same validation windows the trainer used.
    m["latent_svd_rel_error"] = fit_latent_for_run(cfg, ctx.model);
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

std::unique_ptr<VariantStage> make_latent_kv_stage(const RunConfig& cfg) { return std::make_unique<LatentKvStage>(); }

}  // namespace zl
