// One factory from a network to a model. A variant trains the network of its
// family (sim/variants.def: sfvl and the other decode-time methods share the
// baseline's); a network not built here is refused by name rather than
// silently trained as a baseline. Each network drops the options that belong
// to another (a baseline never carries sfcl's module or alibi's biases).
#pragma once
#include <string>

#include "models/transformer.h"

namespace zl {

// `network`: baseline | fused | sfcl | alibi | gated_attn | latent_kv.
Transformer make_model(const std::string& network, const ModelConfig& cfg);

}  // namespace zl
