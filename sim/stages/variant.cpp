#include "sim/stages/variant.h"

#include <stdexcept>

#include "sim/stages/best_of_n_stage.h"
#include "sim/stages/contrastive_stage.h"
#include "sim/stages/eviction_stage.h"
#include "sim/stages/fused_stage.h"
#include "sim/stages/latent_kv_stage.h"
#include "sim/stages/oet_stage.h"
#include "sim/stages/sfcl_stage.h"
#include "sim/stages/sfvl_stage.h"
#include "sim/stages/speculative_stage.h"

namespace zl {

std::unique_ptr<VariantStage> make_variant_stage(const RunConfig& cfg) {
  if (cfg.variant == "baseline") return std::make_unique<VariantStage>();
  // alibi and gated_attn are their trained model (models/alibi.h,
  // models/attention.h): decoded as the baseline is; their FLOPs per module
  // come with the model's (sim/cost.cpp).
  if (cfg.variant == "alibi" || cfg.variant == "gated_attn") return std::make_unique<VariantStage>();
  // latent_kv: MLA trained, or the baseline's checkpoint factorised (svd) in prepare().
  if (cfg.variant == "latent_kv") return make_latent_kv_stage(cfg);
  if (cfg.variant == "sfvl") return make_sfvl_stage(cfg);
  // sfvl's controls (issue 13 §7) and contrastive search, on the baseline's checkpoint.
  if (cfg.variant == "sfvl_oracle" || cfg.variant == "sfvl_random") return make_sfvl_stage(cfg);
  if (cfg.variant == "sfvl_best_of_n") return make_best_of_n_stage(cfg);
  if (cfg.variant == "contrastive") return make_contrastive_stage(cfg);
  // KV cache eviction on the baseline's checkpoint (models/eviction.h).
  if (cfg.variant == "streaming" || cfg.variant == "h2o") return make_eviction_stage(cfg);
  if (cfg.variant == "speculative") return make_speculative_stage(cfg);
  if (cfg.variant == "fused") return std::make_unique<FusedStage>();
  if (cfg.variant == "sfcl") return std::make_unique<SfclStage>();
  if (cfg.variant == "oet") return std::make_unique<OetStage>();
  throw std::invalid_argument("variant '" + cfg.variant + "' is not implemented yet: no run stage");
}

}  // namespace zl
