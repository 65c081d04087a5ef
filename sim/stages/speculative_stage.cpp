#include "sim/stages/speculative_stage.h"

#include <cmath>

#include "models/factory.h"
#include "sim/cost.h"
#include "sim/stages/speculative.h"
#include "sim/trainer.h"

namespace zl {

RunConfig draft_config(const RunConfig& cfg, int64_t vocab, int64_t target_params) {
  RunConfig d = cfg;
  d.variant = "baseline";
  d.model.layers = 1;
  d.train.branch = 0;  // a side model: it keeps no branch point
  int64_t best = 8;
  double best_gap = INFINITY;
  for (int64_t dim = 8; dim <= cfg.model.dim; dim += 8) {
    ModelConfig m = d.model;
    m.vocab = vocab;
    m.dim = dim;
    m.heads = dim % 16 == 0 ? dim / 16 : 1;  // 16-wide heads
    torch::NoGradGuard no_grad;
    double gap = std::abs(static_cast<double>(Transformer(m)->parameter_count() - target_params));
    if (gap < best_gap) {
      best_gap = gap;
      best = dim;
    }
  }
  d.model.dim = best;
  d.model.heads = best % 16 == 0 ? best / 16 : 1;
  return d;
}

namespace {

class SpeculativeStage : public VariantStage {
 public:
  void prepare(const StageContext& ctx, RunRecord& r) override {
    const int64_t vocab = ctx.model->cfg.vocab;
    const auto target = static_cast<int64_t>(ctx.cfg.speculative.draft_ratio * ctx.model->parameter_count());
    draft_cfg_ = draft_config(ctx.cfg, vocab, target);
    ModelConfig mc = draft_cfg_.model;
    mc.vocab = vocab;
    torch::manual_seed(static_cast<uint64_t>(ctx.cfg.seed) + 101);
    draft_ = make_model("baseline", mc);
    TrainOutcome trained = train_model(draft_cfg_, identify(draft_cfg_), draft_, ctx.data, ctx.device);
    r.metrics["draft_params"] = static_cast<double>(draft_->parameter_count());
    r.metrics["draft_params_ratio"] = static_cast<double>(draft_->parameter_count()) / ctx.model->parameter_count();
    r.metrics["draft_val_loss"] = trained.val_loss;
  }

  Serving serving(const StageContext& ctx, const DecodeOptions& opt, uint64_t seed) override {
    return {opt, nullptr, "speculative decoding is a loop of its own (draft, then one check of its proposals), not a step a server can batch"};
  }

  DecodeOutput decode(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts,
                      const DecodeOptions& opt, at::Generator& gen, bool logged) override {
    SpeculativeStats s;
    DecodeOutput out = speculative_decode(ctx.model, draft_, prompts, opt, ctx.cfg.speculative.lookahead, gen, s);
    stats_.drafted += s.drafted;
    stats_.accepted += s.accepted;
    stats_.target_calls += s.target_calls;
    stats_.emitted += s.emitted;
    return out;
  }

  void add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) override {
    // Per emitted token the draft runs drafted/emitted times; the model's own
    // cost per token is counted as usual (its verification pass costs what
    // decoding those positions would).
    ModelConfig mc = draft_->cfg;
    const double per_draft = total_flops(flops_per_token(mc, std::min<int64_t>(context, mc.context)));
    const double drafts_per_token = stats_.emitted > 0 ? static_cast<double>(stats_.drafted) / stats_.emitted : 0;
    per_module["draft"] = per_draft * drafts_per_token;
  }

  void finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) override {
    auto share = [](int64_t a, int64_t b) { return b > 0 ? static_cast<double>(a) / b : NAN; };
    r.metrics["spec_acceptance_rate"] = share(stats_.accepted, stats_.drafted);
    r.metrics["spec_tokens_per_target_step"] = share(stats_.emitted, stats_.target_calls);
  }

 private:
  RunConfig draft_cfg_;
  Transformer draft_{nullptr};
  SpeculativeStats stats_;
};

}  // namespace

std::unique_ptr<VariantStage> make_speculative_stage(const RunConfig& cfg) {
  return std::make_unique<SpeculativeStage>();
}

}  // namespace zl
