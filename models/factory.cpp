#include "models/factory.h"

#include <stdexcept>

namespace zl {

Transformer make_model(const std::string& network, const ModelConfig& cfg) {
  if (network == "baseline") {
    // Every variant that decodes the baseline's checkpoint (sfvl, its
    // controls, speculative, contrastive, eviction: sim/variants.def) builds
    // this network.
    if (cfg.fused.any()) throw std::invalid_argument("network '" + network + "' with fused options on: use variant 'fused'");
    ModelConfig plain = cfg;
    plain.correction_hidden = 0;  // sfcl.* options never shape a baseline
    plain.alibi = plain.attn_gate = false;  // nor alibi's or gated_attn's
    plain.latent_rank = 0;                  // nor latent_kv's
    return Transformer(plain);
  }
  // fused: the shared transformer with the parts cfg.fused switches on
  // (attention: key weighting, value distillation; head: logits gate).
  if (network == "fused") return Transformer(cfg);
  // sfcl's network (oet decodes its checkpoint, docs/articles.md).
  if (network == "sfcl") {
    if (cfg.correction_hidden <= 0)
      throw std::invalid_argument("network '" + network + "' needs a correction module: sfcl.hidden must be >= 1");
    return Transformer(cfg);
  }
  // The published known methods trained as their own model (issue 13):
  // alibi (models/alibi.h) and gated_attn (models/attention.h), each the
  // baseline's network with its one change and nothing of another variant's.
  // latent_kv (models/latent_kv.h): with cfg.latent_rank > 0, MLA trained
  // from scratch (latent.mode = trained); with 0, the baseline's network,
  // factorised after loading its trained weights (latent.mode = svd, the run
  // stage calls fit_latent_svd).
  if (network == "alibi" || network == "gated_attn" || network == "latent_kv") {
    if (cfg.fused.any()) throw std::invalid_argument("network '" + network + "' with fused options on: use variant 'fused'");
    ModelConfig own = cfg;
    own.correction_hidden = 0;
    own.alibi = network == "alibi";
    own.attn_gate = network == "gated_attn";
    if (network != "latent_kv") own.latent_rank = 0;
    own.latent_norm = own.latent_norm && own.latent_rank > 0;
    return Transformer(own);
  }
  throw std::invalid_argument("no network '" + network + "' (networks: baseline, fused, sfcl, alibi, gated_attn, latent_kv)");
}

}  // namespace zl
