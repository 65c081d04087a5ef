// config → model: the one boundary where a run's config becomes the typed
// options the modules read: the shape, the vocabulary the
// tokenizer gives, and each variant's own parts, all off for other variants.
#pragma once
#include <cstdint>

#include "models/eviction.h"
#include "models/model_config.h"
#include "sim/config.h"

namespace zl {

// The [fused] section as typed model options; all off unless the run's
// variant is fused. fused.value_rank above 1 is a rank, at most 1 a ratio of
// the head width (rounded, at least 1), 0 off.
FusedOptions fused_options(const RunConfig& cfg);

// The KV cache eviction a run decodes with: streaming's sinks and window,
// h2o's budget (h2o.budget × model.context tokens, rounded, at least 2;
// recent ⌈budget/2⌉, heavy hitters the rest); off for other variants.
EvictionOptions eviction_options(const RunConfig& cfg);

// The keys with trains = yes that the row of the run's family declares
// (sim/variants.def: VARIANT_KEY; add_variant), by name, for a registered
// network's builder (models/factory.h): the keys its train_id holds, so a
// checkpoint is shared only by runs whose networks are built alike. Empty for
// the built-in families, whose sections are typed (sim/config.h).
NetworkOptions network_options(const RunConfig& cfg);

// The model a run trains, with `vocab` from its tokenizer (latent_kv in svd
// mode: the baseline's, factorised later by its stage, sim/stages/latent_kv_stage.h).
ModelConfig model_config(const RunConfig& cfg, int64_t vocab);

}  // namespace zl
