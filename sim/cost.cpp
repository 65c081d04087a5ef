#include "sim/cost.h"

namespace zl {

std::map<std::string, double> flops_per_token(const ModelConfig& c, int64_t context) {
  const double C = c.dim, L = c.layers, V = c.vocab, T = context, F = c.mlp_ratio * c.dim;
  std::map<std::string, double> f;
  f["embedding"] = C;                                   // the position add; the lookup is a gather
  f["attention"] = L * (2 * C * 3 * C                   // q, k, v projections
                        + 2 * T * C                     // q·kᵀ over T keys
                        + 2 * T * C                     // weights · v
                        + 2 * C * C);                   // output projection
  f["mlp"] = L * (2 * C * F * 2);                       // up and down projections
  f["lm_head"] = 2 * C * V;
  const double H = c.heads;
  if (c.alibi) {
    f["embedding"] = 0;      // no position embedding to add (models/alibi.h)
    f["alibi"] = L * H * T;  // one add per score: −m_h (i − j) is part of the mask
  }
  if (c.latent_rank > 0) {
    // latent_kv (models/latent_kv.h), per layer, in the absorbed form the
    // decoder runs (DeepSeek-V2 §2.1.2): attention keeps q (C → C), the
    // output projection, and per head the score and the mix, now over the r
    // values of each cached latent instead of D; latent_kv counts the
    // compression c = W^DKV x (C → r), the RMSNorm on c if any (~4 per value),
    // and the two up-projections, absorbed per head: W^UK_hᵀ q_h (D → r) and
    // W^UV_h o_h (r → D), C·r multiply-adds each over the heads.
    const double r = c.latent_rank;
    f["attention"] = L * (2 * C * C + 2 * H * T * r + 2 * H * T * r + 2 * C * C);
    f["latent_kv"] = L * (2 * C * r + (c.latent_norm ? 4 * r : 0) + 2 * C * r + 2 * C * r);
  }
  if (c.attn_gate) {
    // gated_attn (models/attention.h), per layer: z = x W_θᵀ (C → G, plus G
    // bias adds if any), σ(z) (~4 per gate: negate, exp, add, divide), and the
    // product of each of the C attention outputs with its gate.
    const double G = c.attn_gate_headwise ? H : C;
    f["attn_gate"] = L * (2 * C * G + (c.attn_gate_bias ? G : 0) + 4 * G + C);
  }
  return f;
}

double total_flops(const std::map<std::string, double>& per_module) {
  double t = 0;
  for (const auto& [k, v] : per_module) t += v;
  return t;
}

}  // namespace zl
