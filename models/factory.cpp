#include "models/factory.h"

#include <stdexcept>

namespace zl {

Transformer make_model(const std::string& variant, const ModelConfig& cfg) {
  // sfvl and speculative decode differently but share the baseline's language model.
  if (variant == "baseline" || variant == "sfvl" || variant == "speculative") return Transformer(cfg);
  throw std::invalid_argument("variant '" + variant + "' is not implemented yet (available: baseline)");
}

}  // namespace zl
