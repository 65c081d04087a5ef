#include "sim/stages/eviction_stage.h"

#include <algorithm>

#include "sim/cost.h"
#include "sim/model_options.h"

namespace zl {
namespace {

class EvictionStage : public VariantStage {
 public:
  explicit EvictionStage(const RunConfig& cfg) : eviction_(eviction_options(cfg)) {}

  DecodeOutput decode(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts, const DecodeOptions& opt,
                      at::Generator& gen, bool logged) override {
    DecodeOptions evicting = opt;
    evicting.eviction = eviction_;
    return zl::decode(ctx.model, prompts, evicting, gen);
  }

  Serving serving(const StageContext& ctx, const DecodeOptions& opt, uint64_t seed) override {
    Serving s{opt, nullptr, ""};
    s.opt.eviction = eviction_;
    return s;
  }

  void add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) override {
    // A token attends over at most budget + 1 keys: the held ones and itself.
    const int64_t keys = std::min<int64_t>(context, eviction_.budget + 1);
    per_module["attention"] = flops_per_token(ctx.model->cfg, keys)["attention"];
    const double per_key = eviction_.policy == EvictionOptions::Policy::H2O ? 2 : 1;  // (score add) + victim compare
    per_module["eviction"] = ctx.model->cfg.layers * ctx.model->cfg.heads * per_key * keys;
  }

  void finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) override {
    auto cache = ctx.model->make_cache(1, 0, eviction_);
    std::map<std::string, int64_t> parts;
    cache.bytes_per_token(&parts);
    r.metrics["kv_bytes_per_token_eviction"] = static_cast<double>(parts["eviction_state"]);
    r.metrics["eviction_budget"] = static_cast<double>(eviction_.budget);
  }

 private:
  EvictionOptions eviction_;
};

}  // namespace

std::unique_ptr<VariantStage> make_eviction_stage(const RunConfig& cfg) { return std::make_unique<EvictionStage>(cfg); }

}  // namespace zl
