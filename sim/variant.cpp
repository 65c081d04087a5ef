#include "sim/variant.h"

#include <stdexcept>

#include "sim/sfvl_stage.h"
#include "sim/speculative_stage.h"
#include "sim/fused_stage.h"

namespace zl {

std::unique_ptr<VariantStage> make_variant_stage(const RunConfig& cfg) {
  if (cfg.variant == "baseline") return std::make_unique<VariantStage>();
  if (cfg.variant == "sfvl") return make_sfvl_stage(cfg);
  if (cfg.variant == "speculative") return make_speculative_stage(cfg);
  if (cfg.variant == "fused") return std::make_unique<FusedStage>();
  throw std::invalid_argument("variant '" + cfg.variant + "' is not implemented yet: no run stage (available: baseline, sfvl, speculative, fused)");
}

}  // namespace zl
