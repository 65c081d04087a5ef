#include "models/factory.h"

#include <stdexcept>

namespace zl {

Transformer make_model(const std::string& variant, const ModelConfig& cfg) {
  if (variant == "baseline" || variant == "sfvl" || variant == "speculative") {
    // sfvl and speculative decode differently but share the baseline's language model.
    if (cfg.fused.any()) throw std::invalid_argument("variant '" + variant + "' with fused options on: use variant 'fused'");
    ModelConfig plain = cfg;
    plain.correction_hidden = 0;  // sfcl.* options never shape a baseline
    return Transformer(plain);
  }
  // fused: the shared transformer with the parts cfg.fused switches on
  // (attention: key weighting, value distillation; head: logits gate).
  if (variant == "fused") return Transformer(cfg);
  // oet starts from a trained sfcl model (SPEC §1): the same network.
  if (variant == "sfcl" || variant == "oet") {
    if (cfg.correction_hidden <= 0)
      throw std::invalid_argument("variant '" + variant + "' needs a correction module: sfcl.hidden must be >= 1");
    return Transformer(cfg);
  }
  throw std::invalid_argument("variant '" + variant + "' is not implemented yet (available: baseline, sfvl, speculative, fused, sfcl, oet)");
}

}  // namespace zl
