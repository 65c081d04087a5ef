#include "sim/variant.h"

#include <stdexcept>

#include "sim/fused_stage.h"

namespace zl {

std::unique_ptr<VariantStage> make_variant_stage(const RunConfig& cfg) {
  if (cfg.variant == "baseline") return std::make_unique<VariantStage>();
  if (cfg.variant == "fused") return std::make_unique<FusedStage>();
  throw std::invalid_argument("variant '" + cfg.variant + "' has no run stage yet (available: baseline, fused)");
}

}  // namespace zl
