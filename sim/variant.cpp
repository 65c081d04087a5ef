#include "sim/variant.h"

#include <stdexcept>

#include "sim/sfvl_stage.h"
#include "sim/speculative_stage.h"
#include "sim/fused_stage.h"
#include "sim/oet_stage.h"
#include "sim/sfcl_stage.h"

namespace zl {

std::unique_ptr<VariantStage> make_variant_stage(const RunConfig& cfg) {
  if (cfg.variant == "baseline") return std::make_unique<VariantStage>();
  if (cfg.variant == "sfvl") return make_sfvl_stage(cfg);
  if (cfg.variant == "speculative") return make_speculative_stage(cfg);
  if (cfg.variant == "fused") return std::make_unique<FusedStage>();
  if (cfg.variant == "sfcl") return std::make_unique<SfclStage>();
  if (cfg.variant == "oet") return std::make_unique<OetStage>();
  throw std::invalid_argument("variant '" + cfg.variant + "' is not implemented yet: no run stage");
}

}  // namespace zl
