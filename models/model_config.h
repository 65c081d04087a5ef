// The shape of the shared decoder-only transformer (docs/articles.md). Filled once from
// the run config at the boundary; modules read these typed fields, never an
// option by name. The one exception is a registered network's builder
// (models/factory.h), which reads its own trained keys by name from
// network_options, since no typed field here may name them.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include "models/fused_options.h"

namespace zl {

// A registered network's own trained keys (models/factory.h: add_network),
// by their dotted names: the keys its variant declares with trains = yes
// (sim/variants.def: VARIANT_KEY; add_variant), which enter its train_id.
// model_config() (sim/model_options.h) copies them in without naming any, so
// that a trained mechanism edits neither that file nor this struct
// (docs/adding-a-mechanism.md#a-mechanism-with-trained-parameters). Empty
// for the built-in networks, whose options are ModelConfig's typed fields.
struct NetworkOptions {
  std::map<std::string, double> numbers;     // int, float and bool (1 or 0) keys
  std::map<std::string, std::string> texts;  // string keys

  bool empty() const { return numbers.empty() && texts.empty(); }
  // The value of `key`; std::invalid_argument naming the key and those
  // there are when it is not one of them (a builder asking for a key its
  // row does not declare, or does not declare with trains = yes).
  double number(const std::string& key) const { return find(numbers, key); }
  bool flag(const std::string& key) const { return number(key) != 0; }
  const std::string& text(const std::string& key) const { return find(texts, key); }

 private:
  template <class Value>
  const Value& find(const std::map<std::string, Value>& in, const std::string& key) const {
    auto it = in.find(key);
    if (it != in.end()) return it->second;
    std::string known;
    auto list = [&known](const auto& keys) {
      for (const auto& entry : keys) known += (known.empty() ? "" : ", ") + entry.first;
    };
    list(numbers);
    list(texts);
    throw std::invalid_argument("the network has no trained option '" + key + "' (it has: " +
                                (known.empty() ? "none" : known) +
                                "); declare it as a key of the variant, with trains = yes");
  }
};

struct ModelConfig {
  int64_t vocab = 257;      // V: set from the tokenizer (257 for bytes + eos)
  int64_t layers = 4;       // L: number of pre-norm blocks
  int64_t heads = 4;        // H: attention heads; must divide dim
  int64_t dim = 128;        // C: residual width
  int64_t context = 128;    // T_max: learned positions, and the KV cache capacity
  int64_t mlp_ratio = 4;    // MLP hidden width = mlp_ratio * dim
  double dropout = 0.0;     // on attention output and MLP output (training only)
  FusedOptions fused;       // variant fused: all off by default
  // sfcl / oet (seed 000 §2.1): the in-layer correction module between
  // attention and the MLP. Filled from sfcl.* at the boundary; the factory
  // sets 0 (no module) for the variants without one.
  int64_t correction_hidden = 0;    // its hidden width; 0 = no module
  bool correction_centered = true;  // c = 2·sigmoid(z) (zero module = identity) or sigmoid(z) (docs/articles.md)
  // alibi (Press et al., ICLR 2022; models/alibi.h): no position embeddings;
  // each head adds −m_h·(i − j) to the score of query i on key j. Filled
  // from alibi.* at the boundary; false for every other variant.
  bool alibi = false;
  double alibi_max_bias = 8;        // head h of n (1-based) gets m_h = 2^(−max_bias·h/n) (§3: 8)
  // gated_attn (Qiu et al., 2025; models/attention.h): y ← y ⊙ σ(x W_θ (+ b))
  // after SDPA, before the output projection, x the block's normalised input.
  bool attn_gate = false;
  bool attn_gate_headwise = false;  // one gate per head (C→H) instead of per element (C→C, the paper's best)
  bool attn_gate_bias = false;      // a bias b in the gate (the paper's σ(x W_θ) has none)
  // latent_kv (issue 13 §3; models/latent_kv.h): keys and values up-projected
  // per head from one latent c of latent_rank values per token and layer,
  // the only thing the KV cache holds. 0 = off. Mode trained (MLA) builds it
  // in; mode svd trains the baseline's network and sets it when it factorises
  // the trained K/V projections (fit_latent_svd), after loading.
  int64_t latent_rank = 0;          // r
  bool latent_norm = false;         // trained: RMSNorm on c (DeepSeek-V2 §3.1.2 adds one after each latent)
  // A registered network's own trained keys (above); empty for the built-in ones.
  NetworkOptions network_options;

  int64_t head_dim() const { return dim / heads; }  // D
};

}  // namespace zl
