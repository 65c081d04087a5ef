// One factory from a network to a model. A variant trains the network of its
// family (sim/variants.def: sfvl and the other decode-time methods share the
// baseline's); a network not registered here is refused by name rather than
// silently trained as a baseline. Each network drops the options that belong
// to another (a baseline never carries sfcl's module or alibi's biases).
//
// The networks are a registry (docs/adding-a-mechanism.md#a-mechanism-with-trained-parameters):
// the built-in ones (baseline, fused, sfcl, alibi, gated_attn, latent_kv),
// then those the variant table names (sim/variants.def: VARIANT_NETWORK),
// then those added at runtime with add_network. A trained mechanism brings
// its network this way, without editing this file or sim/model_options.cpp.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "models/transformer.h"

namespace zl {

// Builds a network from its ModelConfig; a registered network's own trained
// keys are in cfg.network_options (models/model_config.h). A builder
//   - starts from the shared transformer, usually make_model("baseline", cfg),
//     whose constructor draws the shared weights first, so that they equal
//     the baseline's at the same seed (docs/design.md#runs-identity-and-checkpoints,
//     "Pairing by seed"); its own parameters come after, from its own draws
//     or none;
//   - registers its own modules on the Transformer (model->register_module:
//     public in torch::nn::Module), so that the optimizer, the checkpoints
//     (state-dict names "<module>.<parameter>") and parameter_count() see them;
//   - installs the attention hooks that read them (models/attention_hook.h),
//     which then run in training and in both decode paths.
// The variant's row counts the parameters the network adds to the baseline's
// (sim/variants.h: VariantInfo::own_parameters) for the memory estimate,
// which builds no model.
using NetworkBuilder = std::function<Transformer(const ModelConfig& cfg)>;

// Registers `name`'s builder (a variant's family: make_model is called with
// trained_family()). std::invalid_argument for a name registered already or
// an empty builder. Before any model of that name is built.
void add_network(const std::string& name, NetworkBuilder build);

// Every registered name, in registration order.
std::vector<std::string> network_names();

// The network `network` built from `cfg`; std::invalid_argument naming the
// registered networks when it is none of them.
Transformer make_model(const std::string& network, const ModelConfig& cfg);

}  // namespace zl
