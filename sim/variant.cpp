#include "sim/variant.h"

#include <stdexcept>

#include "sim/oet_stage.h"
#include "sim/sfcl_stage.h"

namespace zl {

std::unique_ptr<VariantStage> make_variant_stage(const RunConfig& cfg) {
  if (cfg.variant == "baseline") return std::make_unique<VariantStage>();
  if (cfg.variant == "sfcl") return std::make_unique<SfclStage>();
  if (cfg.variant == "oet") return std::make_unique<OetStage>();
  throw std::invalid_argument("variant '" + cfg.variant + "' is not implemented yet: it has no run stage (available: baseline, sfcl, oet)");
}

}  // namespace zl
