#include "models/factory.h"

#include <stdexcept>

namespace zl {

Transformer make_model(const std::string& variant, const ModelConfig& cfg) {
  if (variant == "baseline" || variant == "sfvl" || variant == "speculative" || variant == "sfvl_best_of_n" ||
      variant == "sfvl_oracle" || variant == "sfvl_random" || variant == "contrastive" || variant == "streaming" ||
      variant == "h2o") {
    // sfvl, speculative, sfvl's controls (sfvl_best_of_n, sfvl_oracle,
    // sfvl_random), contrastive search and KV cache eviction (streaming,
    // h2o; models/eviction.h) decode differently but share the baseline's
    // language model.
    if (cfg.fused.any()) throw std::invalid_argument("variant '" + variant + "' with fused options on: use variant 'fused'");
    ModelConfig plain = cfg;
    plain.correction_hidden = 0;  // sfcl.* options never shape a baseline
    plain.alibi = plain.attn_gate = false;  // nor alibi's or gated_attn's
    plain.latent_rank = 0;                  // nor latent_kv's
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
  // The published known methods trained as their own model (issue 13):
  // alibi (models/alibi.h) and gated_attn (models/attention.h), each the
  // baseline's network with its one change and nothing of another variant's.
  // latent_kv (models/latent_kv.h): with cfg.latent_rank > 0, MLA trained
  // from scratch (latent.mode = trained); with 0, the baseline's network,
  // factorised after loading its trained weights (latent.mode = svd, the run
  // stage calls fit_latent_svd).
  if (variant == "alibi" || variant == "gated_attn" || variant == "latent_kv") {
    if (cfg.fused.any()) throw std::invalid_argument("variant '" + variant + "' with fused options on: use variant 'fused'");
    ModelConfig own = cfg;
    own.correction_hidden = 0;
    own.alibi = variant == "alibi";
    own.attn_gate = variant == "gated_attn";
    if (variant != "latent_kv") own.latent_rank = 0;
    own.latent_norm = own.latent_norm && own.latent_rank > 0;
    return Transformer(own);
  }
  throw std::invalid_argument("variant '" + variant + "' is not implemented yet (available: baseline, sfvl, speculative, fused, sfcl, oet, alibi, gated_attn, sfvl_best_of_n, sfvl_oracle, sfvl_random, contrastive, streaming, h2o, latent_kv)");
}

}  // namespace zl
