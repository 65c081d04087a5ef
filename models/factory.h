// One factory from a variant name to a model (SPEC §7). Variants that are not
// built yet are refused by name rather than silently trained as a baseline.
#pragma once
#include <string>

#include "models/transformer.h"

namespace zl {

Transformer make_model(const std::string& variant, const ModelConfig& cfg);

}  // namespace zl
