#include "models/factory.h"

#include <stdexcept>
#include <utility>

namespace zl {

// The builders the variant table names (sim/variants.def: VARIANT_NETWORK),
// declared from the table itself, as sim/stages/variant.cpp declares the
// stages: a mechanism's network is its row and its own file in models/.
#define VARIANT_NETWORK(variant, builder, parameters) Transformer builder(const ModelConfig& cfg);
#include "sim/variants.def"
#undef VARIANT_NETWORK

namespace {

// Every variant that decodes the baseline's checkpoint (sfvl, its controls,
// speculative, contrastive, eviction: sim/variants.def) builds this network.
Transformer baseline_network(const ModelConfig& cfg) {
  if (cfg.fused.any()) throw std::invalid_argument("network 'baseline' with fused options on: use variant 'fused'");
  ModelConfig plain = cfg;
  plain.correction_hidden = 0;  // sfcl.* options never shape a baseline
  plain.alibi = plain.attn_gate = false;  // nor alibi's or gated_attn's
  plain.latent_rank = 0;                  // nor latent_kv's
  plain.network_options = {};             // nor a registered network's keys
  return Transformer(plain);
}

// fused: the shared transformer with the parts cfg.fused switches on
// (attention: key weighting, value distillation; head: logits gate).
Transformer fused_network(const ModelConfig& cfg) { return Transformer(cfg); }

// sfcl's network (oet decodes its checkpoint, docs/articles.md).
Transformer sfcl_network(const ModelConfig& cfg) {
  if (cfg.correction_hidden <= 0)
    throw std::invalid_argument("network 'sfcl' needs a correction module: sfcl.hidden must be >= 1");
  return Transformer(cfg);
}

// The published known methods trained as their own model (issue 13):
// alibi (models/alibi.h) and gated_attn (models/attention.h), each the
// baseline's network with its one change and nothing of another variant's.
// latent_kv (models/latent_kv.h): with cfg.latent_rank > 0, MLA trained
// from scratch (latent.mode = trained); with 0, the baseline's network,
// factorised after loading its trained weights (latent.mode = svd, the run
// stage calls fit_latent_svd).
NetworkBuilder known_method(const std::string& network) {
  return [network](const ModelConfig& cfg) {
    if (cfg.fused.any()) throw std::invalid_argument("network '" + network + "' with fused options on: use variant 'fused'");
    ModelConfig own = cfg;
    own.correction_hidden = 0;
    own.alibi = network == "alibi";
    own.attn_gate = network == "gated_attn";
    if (network != "latent_kv") own.latent_rank = 0;
    own.latent_norm = own.latent_norm && own.latent_rank > 0;
    own.network_options = {};
    return Transformer(own);
  };
}

struct Network {
  std::string name;
  NetworkBuilder build;
};

void add_to(std::vector<Network>& networks, const std::string& name, NetworkBuilder build) {
  if (!build) throw std::invalid_argument("add_network: network '" + name + "' without a builder");
  for (const auto& n : networks)
    if (n.name == name) throw std::invalid_argument("add_network: network '" + name + "' exists already");
  networks.push_back({name, std::move(build)});
}

// The built-in networks, then the table's, in that order (the order
// network_names() and the error for an unknown one list them).
std::vector<Network>& registry() {
  static std::vector<Network> networks = [] {
    std::vector<Network> n;
    add_to(n, "baseline", baseline_network);
    add_to(n, "fused", fused_network);
    add_to(n, "sfcl", sfcl_network);
    for (const char* known : {"alibi", "gated_attn", "latent_kv"}) add_to(n, known, known_method(known));
#define VARIANT_NETWORK(variant, builder, parameters) add_to(n, #variant, builder);
#include "sim/variants.def"
#undef VARIANT_NETWORK
    return n;
  }();
  return networks;
}

}  // namespace

void add_network(const std::string& name, NetworkBuilder build) { add_to(registry(), name, std::move(build)); }

std::vector<std::string> network_names() {
  std::vector<std::string> names;
  for (const auto& n : registry()) names.push_back(n.name);
  return names;
}

Transformer make_model(const std::string& network, const ModelConfig& cfg) {
  for (const auto& n : registry())
    if (n.name == network) return n.build(cfg);
  std::string names;
  for (const auto& name : network_names()) names += (names.empty() ? "" : ", ") + name;
  throw std::invalid_argument("no network '" + network + "' (networks: " + names + ")");
}

}  // namespace zl
