#include "sim/variant.h"

#include <stdexcept>

namespace zl {

std::unique_ptr<VariantStage> make_variant_stage(const RunConfig& cfg) {
  if (cfg.variant == "baseline") return std::make_unique<VariantStage>();
  throw std::invalid_argument("variant '" + cfg.variant + "' has no run stage yet (available: baseline)");
}

}  // namespace zl
