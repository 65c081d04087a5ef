#include "models/factory.h"

#include <stdexcept>

namespace zl {

Transformer make_model(const std::string& variant, const ModelConfig& cfg) {
  if (variant == "baseline" || variant == "sfvl" || variant == "speculative") {
    // sfvl and speculative decode differently but share the baseline's language model.
    if (cfg.fused.any()) throw std::invalid_argument("variant '" + variant + "' with fused options on: use variant 'fused'");
    return Transformer(cfg);
  }
  // fused: the shared transformer with the parts cfg.fused switches on
  // (attention: key weighting, value distillation; head: logits gate).
  if (variant == "fused") return Transformer(cfg);
  throw std::invalid_argument("variant '" + variant + "' is not implemented yet (available: baseline, sfvl, speculative, fused)");
}

}  // namespace zl
