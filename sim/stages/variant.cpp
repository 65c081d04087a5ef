#include "sim/stages/variant.h"

#include <map>
#include <stdexcept>

#include "sim/variants.h"

namespace zl {

// Each row's factory, declared from the table itself: a stage's header need
// not be included here, so a new variant is its row and its stage's file.
#define VARIANT(name, family, stage, ...) std::unique_ptr<VariantStage> stage(const RunConfig& cfg);
#include "sim/variants.def"
#undef VARIANT

// Variants whose stage is the plain one: decoded as the baseline is. alibi
// and gated_attn are their trained model (models/alibi.h, models/attention.h);
// their FLOPs per module come with the model's (sim/cost.cpp).
std::unique_ptr<VariantStage> make_plain_stage(const RunConfig&) { return std::make_unique<VariantStage>(); }

namespace {
std::map<std::string, StageFactory>& added() {
  static std::map<std::string, StageFactory> factories;
  return factories;
}
}  // namespace

void add_variant(VariantInfo info, StageFactory make_stage) {
  const std::string name = info.name;
  register_variant(std::move(info));
  added()[name] = std::move(make_stage);
}

std::unique_ptr<VariantStage> make_variant_stage(const RunConfig& cfg) {
#define VARIANT(name, family, stage, ...) \
  if (cfg.variant == #name) return stage(cfg);
#include "sim/variants.def"
#undef VARIANT
  if (auto it = added().find(cfg.variant); it != added().end()) return it->second(cfg);
  throw std::invalid_argument("unknown variant '" + cfg.variant + "' (known: " + variant_names() + ")");
}

}  // namespace zl
