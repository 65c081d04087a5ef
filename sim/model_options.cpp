#include "sim/model_options.h"

#include <algorithm>
#include <cmath>

#include "sim/variants.h"

namespace zl {

FusedOptions fused_options(const RunConfig& cfg) {
  FusedOptions o;
  if (cfg.variant != "fused") return o;
  const FusedConfig& f = cfg.fused;
  using KW = FusedOptions::KeyWeighting;
  using Imp = FusedOptions::Importance;
  o.key_weighting = f.key_weighting == "scale" ? KW::Scale : f.key_weighting == "bias" ? KW::Bias : KW::Off;
  o.importance = f.importance == "grad_norm" ? Imp::GradNorm : f.importance == "hidden_norm" ? Imp::HiddenNorm : Imp::AttnMass;
  o.alpha = f.alpha;
  const double r = std::stod(f.value_rank);
  const int64_t D = cfg.model.head_dim();
  o.value_rank = r == 0 ? 0 : r <= 1 ? std::max<int64_t>(1, std::llround(r * D)) : static_cast<int64_t>(r);
  o.hard_orthogonal = f.orthogonal == "hard";
  o.ortho_weight = f.ortho_weight;
  o.gate = f.gate;
  o.gate_top_k = f.gate_top_k;
  o.gate_hidden = f.gate_hidden;
  return o;
}

EvictionOptions eviction_options(const RunConfig& cfg) {
  EvictionOptions e;
  using P = EvictionOptions::Policy;
  if (cfg.variant == "streaming") {
    // StreamingLLM (§3.2): the sinks and the window, sinks + window held.
    e.policy = P::Streaming;
    e.sinks = cfg.streaming.sinks;
    e.budget = cfg.streaming.sinks + cfg.streaming.window;
    e.cache_positions = cfg.streaming.positions == "cache";
  } else if (cfg.variant == "h2o") {
    // H2O: a share of the context (the paper's 20%), half recent tokens, half heavy hitters (models/eviction.h).
    e.policy = P::H2O;
    e.budget = std::min<int64_t>(cfg.model.context, std::max<int64_t>(2, std::llround(cfg.h2o.budget * cfg.model.context)));
    e.recent = e.budget - e.budget / 2;
  }
  return e;
}

NetworkOptions network_options(const RunConfig& cfg) {
  NetworkOptions o;
  const VariantInfo* family = find_variant(trained_family(cfg));
  if (!family) return o;
  for (const VariantKey& k : family->keys) {
    if (!k.trains) continue;  // a decode-time key: its stage reads it (option_number), the network never does
    if (k.type == "string")
      o.texts[k.name] = option_text(cfg, k.name);
    else
      o.numbers[k.name] = k.type == "bool" ? (option_flag(cfg, k.name) ? 1.0 : 0.0) : option_number(cfg, k.name);
  }
  return o;
}

ModelConfig model_config(const RunConfig& cfg, int64_t vocab) {
  ModelConfig mc = cfg.model;
  mc.vocab = vocab;
  mc.fused = fused_options(cfg);
  // sfcl / oet only: other variants get no correction module.
  if (trained_family(cfg.variant) == "sfcl") mc.correction_hidden = cfg.sfcl.hidden;
  mc.correction_centered = cfg.sfcl.form == "centered";
  // alibi / gated_attn only (models/alibi.h, models/attention.h).
  mc.alibi = trained_family(cfg.variant) == "alibi";
  mc.alibi_max_bias = cfg.alibi.max_bias;
  mc.attn_gate = trained_family(cfg.variant) == "gated_attn";
  mc.attn_gate_headwise = cfg.gated_attn.granularity == "headwise";
  mc.attn_gate_bias = cfg.gated_attn.bias;
  // latent_kv trained only (models/latent_kv.h); an svd run trains (or
  // reuses) the baseline's network and is factorised by its stage.
  mc.latent_rank = trained_family(cfg) == "latent_kv" ? latent_rank(cfg) : 0;
  mc.latent_norm = mc.latent_rank > 0 && cfg.latent.norm;
  // A registered network's own keys, whatever they are (models/factory.h).
  mc.network_options = network_options(cfg);
  return mc;
}

}  // namespace zl
