#include "sim/variant.h"

#include <stdexcept>

#include "sim/sfvl_stage.h"
#include "sim/speculative_stage.h"

namespace zl {

std::unique_ptr<VariantStage> make_variant_stage(const RunConfig& cfg) {
  if (cfg.variant == "baseline") return std::make_unique<VariantStage>();
  if (cfg.variant == "sfvl") return make_sfvl_stage(cfg);
  if (cfg.variant == "speculative") return make_speculative_stage(cfg);
  throw std::invalid_argument("variant '" + cfg.variant + "' has no run stage yet (available: baseline, sfvl, speculative)");
}

}  // namespace zl
