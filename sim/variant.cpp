#include "sim/variant.h"

#include <stdexcept>

#include "sim/fused_stage.h"

namespace zl {

std::unique_ptr<VariantStage> make_variant_stage(const RunConfig& cfg) {
  if (cfg.variant == "baseline") return std::make_unique<VariantStage>();
  if (cfg.variant == "fused") return std::make_unique<FusedStage>();
  throw std::invalid_argument("variant '" + cfg.variant + "' is not implemented yet: no run stage (available: baseline, fused)");
}

}  // namespace zl
