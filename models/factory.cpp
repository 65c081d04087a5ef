#include "models/factory.h"

#include <stdexcept>

namespace zl {

Transformer make_model(const std::string& variant, const ModelConfig& cfg) {
  if (variant == "baseline") return Transformer(cfg);
  throw std::invalid_argument("variant '" + variant + "' is not implemented yet (available: baseline)");
}

}  // namespace zl
