#include "sim/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/variants.h"

namespace zl {
namespace {

constexpr double kFloat = 4;            // bytes of an fp32 value: weights, gradients, caches
constexpr double kRuntime = 200e6;      // LibTorch, the corpus and tokenizer: the smoke study's peak here
constexpr double kSerialiseCopies = 2;  // a file serialised in memory: the stream's buffer and the string out of it

// The network a run trains, as sim/model_options.cpp's model_config() and
// models/factory.cpp build it (tests compare the count with LibTorch's).
struct Shape {
  double V = 0, L = 0, C = 0, H = 0, T = 0, M = 0;
  bool dropout = false;
  bool positions = true;  // learned positions (wpe); alibi has none
  double correction = 0;  // sfcl / oet: the correction module's hidden width
  double gate = 0;        // gated_attn: gates per token (C, or H headwise)
  bool gate_bias = false;
  double latent = 0;  // latent_kv trained: the latent's rank r
  bool latent_norm = false;
  double value_rank = 0;         // fused value distillation: r per head
  bool fused_attention = false;  // fused's attention path (key weighting, value distillation, gate taps)
  bool key_weighting = false;
  bool attn_mass = false;  // key weighting by attention mass: per-query state in the cache
  double logits_gate_in = 0, logits_gate_hidden = 0, logits_gate_out = 0;  // fused logits gate
  // A registered network's parameters beyond the baseline's, as its row
  // counts them (VariantInfo::own_parameters; tests/cpp/test_toy_mechanism.cpp
  // compares them with LibTorch's).
  double own = 0;
  double D() const { return C / H; }
};

double vocab(const RunConfig& c) { return c.data.tokenizer == "byte" ? 257.0 : static_cast<double>(c.data.vocab_size); }

Shape plain_shape(const RunConfig& c, double V) {
  Shape s;
  s.V = V;
  s.L = static_cast<double>(c.model.layers);
  s.C = static_cast<double>(c.model.dim);
  s.H = static_cast<double>(c.model.heads);
  s.T = static_cast<double>(c.model.context);
  s.M = static_cast<double>(c.model.mlp_ratio) * s.C;
  s.dropout = c.model.dropout > 0;
  return s;
}

Shape shape_of(const RunConfig& c) {
  Shape s = plain_shape(c, vocab(c));
  const std::string family = trained_family(c);
  if (family == "alibi") s.positions = false;
  if (family == "sfcl") s.correction = static_cast<double>(c.sfcl.hidden);
  if (family == "gated_attn") {
    s.gate = c.gated_attn.granularity == "headwise" ? s.H : s.C;
    s.gate_bias = c.gated_attn.bias;
  }
  if (family == "latent_kv") {
    s.latent = static_cast<double>(latent_rank(c));
    s.latent_norm = c.latent.norm;
  }
  // A registered network (models/factory.h): its row counts what it adds.
  if (const VariantInfo* row = find_variant(family); row && row->own_parameters) s.own = row->own_parameters(c);
  if (c.variant == "fused") {  // fused_options(): the [fused] section shapes only variant fused
    const double r = std::stod(c.fused.value_rank), D = s.D();
    s.value_rank = r == 0 ? 0 : r <= 1 ? std::max(1.0, std::round(r * D)) : r;
    s.key_weighting = c.fused.key_weighting != "off";
    s.attn_mass = s.key_weighting && c.fused.importance == "attn_mass";
    if (c.fused.gate) {
      s.logits_gate_in = s.H * 3;  // FusedOptions::gate_keys: the 3 most-attended keys of each head
      s.logits_gate_hidden = static_cast<double>(c.fused.gate_hidden);
      s.logits_gate_out = static_cast<double>(c.fused.gate_top_k);
    }
    s.fused_attention = s.key_weighting || s.value_rank > 0 || c.fused.gate;
  }
  return s;
}

// Parameters of models/transformer.h for shape `s`: embeddings, blocks
// (two LayerNorms, attention, MLP without biases, the correction module),
// the final norm; the LM head is tied to the embedding.
double parameters(const Shape& s) {
  const double C = s.C;
  double attention = C * C;  // proj
  if (s.latent > 0)
    attention += (C + s.latent) * C + 2 * C * s.latent + (s.latent_norm ? s.latent : 0);  // [W^Q; W^DKV], kv_up, gain
  else
    attention += 3 * C * C;  // qkv
  attention += s.gate * C + (s.gate_bias ? s.gate : 0);
  attention += s.value_rank * s.D();
  const double correction = s.correction > 0 ? C * s.correction + s.correction + s.correction * C + C : 0;
  const double block = 4 * C + attention + 2 * s.M * C + correction;
  double p = s.V * C + (s.positions ? s.T * C : 0) + s.L * block + 2 * C + s.own;
  if (s.logits_gate_in > 0)
    p += s.logits_gate_in * s.logits_gate_hidden + s.logits_gate_hidden + s.logits_gate_hidden * s.logits_gate_out +
         s.logits_gate_out;
  return p;
}

// Bytes one training step keeps for backward (and its largest transient) at
// `B` sequences of s.T tokens; see the header for what is counted.
double training_activations(const Shape& s, double B, bool bf16) {
  const double C = s.C, M = s.M, HT = s.H * s.T;
  // Per layer and token. fp32: x, ln1(x), q, k, v (copied by the reshape
  // for the batched products), y, x + attn, ln2, fc's output, gelu's: 8C + 2M
  // floats, and the softmax's output H·T. bf16 (autocast): the residual
  // stream and the norms' inputs stay fp32, the products' inputs are saved
  // as bf16 copies, and the probabilities twice: fp32 out of the softmax,
  // bf16 into the product with v.
  double layer = bf16 ? 20 * C + 4 * M + 6 * HT : kFloat * (8 * C + 2 * M + HT);
  if (s.dropout) layer += kFloat * 3 * C;                              // the masks of three dropouts
  if (s.correction > 0) layer += kFloat * (2 * C + 2 * s.correction);  // c, its sigmoid, the module's hidden
  if (s.gate > 0) layer += kFloat * (C + 2 * s.gate);                  // y before the gate, z, σ(z)
  if (s.latent > 0) layer += kFloat * 2 * s.latent;                    // c, normalised c
  if (s.fused_attention) layer += kFloat * (HT + C);                   // the weighted attention, its values
  // Once per token: the embedding's output and the final norm; the
  // log-probabilities the loss keeps, their gradient and the logits' (3V);
  // the scores' gradient and the probabilities' of the layer in backward
  // (2·H·T). alibi (no learned positions) adds one layer's scores again,
  // H·T: its score hook (models/alibi.h) builds, in training, a layer's bias
  // [1,H,T,T] (every sequence has the same positions) and adds it to the
  // scores into a new [B,H,T,T] tensor beside them; neither is kept for
  // backward, so one layer's is held at a time, not one per layer. (In the
  // cached forward the bias is [B,H,T,L], each sequence at its own positions,
  // and is freed with the layer; the fast step subtracts the slopes from
  // each score in place and allocates nothing.)
  double once = kFloat * (3 * C + 3 * s.V + 2 * HT);
  if (!s.positions) once += kFloat * HT;
  return B * s.T * (s.L * layer + once);
}

// Bytes of a forward pass without gradients over `rows` sequences of `tokens`
// tokens: the logits, one layer's scores and probabilities, hidden states.
double inference_activations(const Shape& s, double rows, double tokens) {
  return kFloat * rows * tokens * (s.V + 2 * s.H * tokens + 6 * s.C + s.M);
}

// Values the KV cache holds per token and layer, as KVCache::allocate lays
// them out (models/kv_cache.cpp), each 4 bytes (fp32, the positions int32):
// K and V (H·r values of V with fused value distillation), or latent_kv's
// latent alone; fused key weighting's importance, or attn_mass's query and
// column sum per head; and `eviction_state` values per head of an evicting
// cache (each slot's position; h2o's accumulated score too).
double cache_width(const Shape& s, double eviction_state) {
  double width = s.latent > 0 ? s.latent : s.C + (s.value_rank > 0 ? s.H * s.value_rank : s.C);
  if (s.key_weighting) width += s.attn_mass ? s.C + s.H : 1;  // queries and column sums, or one importance
  return width + eviction_state * s.H;
}

// Bytes of the KV cache: `batch` sequences of `slots` tokens, every layer.
double kv_cache(const Shape& s, double batch, double slots, double eviction_state) {
  return kFloat * batch * slots * s.L * cache_width(s, eviction_state);
}

// Training a model of shape `s` (weights, gradients, AdamW, autocast copies, activations).
double training_footprint(const Shape& s, double B, bool bf16) {
  const double p = parameters(s);
  return p * (16 + (bf16 ? 2 : 0)) + training_activations(s, B, bf16);
}

std::string num(double v) {
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A parameter count for people: "2936", "25.6 million", "618.5 billion".
std::string count(double v) {
  char buf[48];
  if (v >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1f billion", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1f million", v / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string kv(const std::string& key, double v) { return key + " = " + num(v); }

// speculative's draft (sim/stages/speculative_stage.cpp's draft_config): one
// layer, 16-wide heads, the width (a multiple of 8 up to model.dim) whose
// count comes closest to speculative.draft_ratio of the model's. The count
// grows with the width: a bisection finds it.
Shape draft_shape(const RunConfig& c, double target) {
  Shape d = plain_shape(c, vocab(c));
  d.L = 1;
  auto params_at = [&](double dim) {
    Shape t = d;
    t.C = dim;
    t.M = static_cast<double>(c.model.mlp_ratio) * dim;
    return parameters(t);
  };
  double lo = 1, hi = std::max(1.0, std::floor(static_cast<double>(c.model.dim) / 8));  // widths 8·lo .. 8·hi
  while (hi - lo > 1) {
    const double mid = std::floor((lo + hi) / 2);
    (params_at(8 * mid) < target ? lo : hi) = mid;
  }
  const double best = std::fabs(params_at(8 * lo) - target) <= std::fabs(params_at(8 * hi) - target) ? lo : hi;
  d.C = 8 * best;
  d.M = static_cast<double>(c.model.mlp_ratio) * d.C;
  d.H = std::fmod(d.C, 16) == 0 ? d.C / 16 : 1;
  return d;
}

// sfvl's verifier (models/verifier.h): the width E in 4..1024 whose count
// comes closest to verify.params_ratio of the model's.
// Returns its width; `params` gets its count.
double verifier_width(double V, double target, double* params) {
  auto params_at = [&](double E) { return V * E + 2 * (3 * E * E + E) + (2 * E + 1); };  // embedding, two convs, head
  double best = 4;
  for (double E = 4; E <= 1024; ++E)
    if (std::fabs(params_at(E) - target) < std::fabs(params_at(best) - target)) best = E;
  *params = params_at(best);
  return best;
}

bool uses_verifier(const std::string& variant) { return variant == "sfvl" || variant == "sfvl_best_of_n"; }

// The values per head an evicting cache keeps beside each slot (models/kv_cache.h,
// LayerCache::order and score): streaming its position, h2o its position and score.
double eviction_state(const RunConfig& c) { return c.variant == "h2o" ? 2 : c.variant == "streaming" ? 1 : 0; }

// The network a run decodes: the one it trains, but latent_kv in svd mode
// decodes the baseline's factorised to the latent (sim/stages/latent_kv_stage.h).
Shape decoded_shape(const RunConfig& c) {
  Shape s = shape_of(c);
  if (c.variant == "latent_kv") s.latent = static_cast<double>(latent_rank(c));
  return s;
}

// Cached tokens per sequence: the context, or an evicting cache's budget + 1.
double cache_slots(const RunConfig& c) {
  const double T = static_cast<double>(c.model.context);
  if (c.variant == "streaming") return std::min(T, static_cast<double>(c.streaming.sinks + c.streaming.window) + 1);
  if (c.variant == "h2o") return std::min(T, std::max(2.0, std::round(c.h2o.budget * T)) + 1);
  return T;
}

void add(MemoryPhase& phase, const std::string& name, double bytes, const std::string& keys, const std::string& lower) {
  if (bytes > 0) phase.terms.push_back({name, bytes, keys, lower});
}

std::string gb(double bytes) { return format_bytes(bytes); }

}  // namespace

double MemoryPhase::bytes() const {
  double total = 0;
  for (const auto& t : terms) total += t.bytes;
  return total;
}

const MemoryPhase& MemoryEstimate::peak_phase() const {
  static const MemoryPhase none;
  const MemoryPhase* best = &none;
  for (const auto& p : phases)
    if (p.bytes() > best->bytes()) best = &p;
  return *best;
}

double MemoryEstimate::term(const std::string& phase, const std::string& name) const {
  for (const auto& p : phases)
    if (p.name == phase)
      for (const auto& t : p.terms)
        if (t.name == name) return t.bytes;
  return 0;
}

double model_parameters(const RunConfig& cfg) { return parameters(shape_of(cfg)); }

double kv_bytes_per_token(const RunConfig& cfg) { return kv_cache(decoded_shape(cfg), 1, 1, eviction_state(cfg)); }

MemoryEstimate estimate_memory(const RunConfig& c, MemoryUse use) {
  const Shape s = shape_of(c);
  const double P = parameters(s);
  const bool bf16 = c.train.precision == "bf16";
  const double B = static_cast<double>(c.train.batch);
  MemoryEstimate e;
  e.params = P;
  const std::string vocab_key =
      c.data.tokenizer == "byte" ? "data.tokenizer = byte (257 tokens)" : kv("data.vocab_size", c.data.vocab_size);
  e.param_keys = kv("model.dim", s.C) + ", " + kv("model.layers", s.L) + ", " +
                 kv("model.mlp_ratio", c.model.mlp_ratio) + ", " + vocab_key + ", " + kv("model.context", s.T);
  const std::string per_param = " per parameter", size = "model.dim or model.layers";

  // Training step, then the checkpoint save (sim/trainer.cpp, sim/checkpoint.cpp).
  if (use == MemoryUse::Run) {
    MemoryPhase step{"training step", {}};
    add(step, "runtime", kRuntime, "LibTorch, corpus, tokenizer", "");
    add(step, "weights", P * kFloat, "4 bytes" + per_param, size);
    add(step, "gradients", P * kFloat, "4 bytes" + per_param, size);
    add(step, "optimizer", P * 2 * kFloat, "AdamW's two moments, 8 bytes" + per_param, size);
    if (bf16) add(step, "autocast copies", P * 2, "train.precision = bf16: 2 bytes" + per_param, size);
    add(step, "activations", training_activations(s, B, bf16),
        kv("train.batch", B) + " x " + kv("model.context", s.T) + " tokens x " + kv("model.layers", s.L) + " x (" +
            kv("model.dim", s.C) + ", " + kv("model.mlp_ratio", c.model.mlp_ratio) + ", " + kv("model.heads", s.H) +
            " x model.context scores), " + vocab_key,
        "train.batch, model.context, model.layers or model.dim");
    e.phases.push_back(step);

    MemoryPhase save{"checkpoint save", {}};
    for (const auto& t : step.terms)
      if (t.name != "activations" && t.name != "autocast copies") save.terms.push_back(t);
    const bool optimizer_file = c.train.checkpoint_every < c.train.steps;  // the last save writes the model alone
    add(save, "serialised checkpoint", kSerialiseCopies * P * (optimizer_file ? 2 * kFloat : kFloat),
        std::string(optimizer_file
                        ? "the optimizer's file, 8 bytes per parameter (train.checkpoint_every < train.steps)"
                        : "the model's file, 4 bytes per parameter") +
            ", twice over while written",
        size);
    e.phases.push_back(save);
  }

  // Side models and decoding, beside the trained weights (and their gradients).
  MemoryPhase after{use == MemoryUse::Run ? "side models and decoding" : "decoding", {}};
  add(after, "runtime", kRuntime, "LibTorch, corpus, tokenizer", "");
  add(after, "weights", P * kFloat, "4 bytes" + per_param, size);
  if (use == MemoryUse::Run) add(after, "gradients", P * kFloat, "kept after the last step, 4 bytes" + per_param, size);

  double batch = static_cast<double>(c.decode.batch);
  std::string batch_keys = kv("decode.batch", batch);
  if (c.serve.enabled && static_cast<double>(c.serve.max_num_seqs) > batch) {
    batch = static_cast<double>(c.serve.max_num_seqs);
    batch_keys = kv("serve.max_num_seqs", batch);
  }
  if (c.variant == "contrastive") {
    batch *= 1 + static_cast<double>(std::min<int64_t>(c.contrastive.k, static_cast<int64_t>(s.V)));
    batch_keys += " x (1 + " + kv("contrastive.k", c.contrastive.k) + ")";
  }
  const double slots = cache_slots(c);
  const bool evicting = eviction_state(c) > 0;
  const Shape cached = decoded_shape(c);
  double cache = kv_cache(cached, batch, slots, eviction_state(c));
  std::string cache_keys = batch_keys + " x " + (evicting ? "the eviction budget" : kv("model.context", s.T)) + " x " +
                           kv("model.layers", s.L) + " x " +
                           (cached.latent > 0 ? "latent.rank (" + num(cached.latent) + ")" : "2 x model.dim") +
                           " x 4 bytes";
  if (c.serve.enabled && c.serve.kv_budget_mb > 0) {
    cache = std::max(cache, c.serve.kv_budget_mb * 1e6);
    cache_keys += ", or " + kv("serve.kv_budget_mb", c.serve.kv_budget_mb);
  }

  if (use == MemoryUse::Run) {
    if (uses_verifier(c.variant)) {
      double pv = 0;
      const double E = verifier_width(s.V, c.verify.params_ratio * P, &pv);
      const double W = static_cast<double>(c.verify.window);
      const double prefix = std::min(32.0, s.T - 2) + 2;  // an LM sample's context (sim/stages/verifier_training.cpp)
      const double bytes = pv * 16 + kFloat * 256 * W * 6 * E        // training at 256 windows
                           + inference_activations(s, 512, prefix);  // the LM's samples, 512 rows at a time
      add(after, "verifier", bytes,
          kv("verify.params_ratio", c.verify.params_ratio) + " (" + count(pv) +
              " parameters), its negative windows "
              "sampled from the model 512 at a time (" +
              vocab_key + ")",
          "verify.params_ratio");
    }
    if (c.variant == "speculative") {
      const Shape d = draft_shape(c, c.speculative.draft_ratio * P);
      add(after, "draft model", training_footprint(d, B, bf16) + kv_cache(d, batch, slots, 0),
          kv("speculative.draft_ratio", c.speculative.draft_ratio) + " (" + count(parameters(d)) +
              " parameters), trained at " + kv("train.batch", B) + " x model.context",
          "speculative.draft_ratio or train.batch");
    }
    if (c.variant == "fused") {
      Shape base = plain_shape(c, s.V);
      add(after, "baseline for kl", parameters(base) * kFloat + inference_activations(base, B, s.T),
          "the baseline's checkpoint loaded beside the model, scored at " + kv("train.batch", B), size);
    }
    if (c.variant == "latent_kv" && c.latent.mode == "svd") {
      add(after, "svd factorisation", s.L * s.C * s.C * 8 + P * kFloat + inference_activations(s, 8, s.T),
          "a Gram of model.dim^2 per layer and the factorised weights (" + kv("model.dim", s.C) + ")", "model.dim");
    }
    if (c.judge.enabled) {
      RunConfig j = c;
      j.variant = "baseline";
      j.model.layers = c.judge.layers;
      j.model.heads = c.judge.heads;
      j.model.dim = c.judge.dim;
      const Shape js = shape_of(j);
      add(after, "judge", training_footprint(js, B, c.judge.precision == "bf16") + inference_activations(js, 64, s.T),
          kv("judge.dim", c.judge.dim) + ", " + kv("judge.layers", c.judge.layers) + " (" + count(parameters(js)) +
              " parameters), trained at " + kv("train.batch", B) + " x model.context",
          "judge.dim, judge.layers or train.batch");
    }
  }
  add(after, "KV cache", cache, cache_keys,
      batch_keys.rfind("serve.", 0) == 0 ? "serve.max_num_seqs or model.context" : "decode.batch or model.context");
  add(after, "prefill", inference_activations(s, std::min(batch, static_cast<double>(c.decode.batch)), s.T),
      kv("decode.batch", c.decode.batch) + " x " + kv("model.context", s.T) + ": logits (" + vocab_key + "), " +
          kv("model.heads", s.H) + " x model.context scores",
      "decode.batch or model.context");
  e.phases.push_back(after);
  return e;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (std::fabs(bytes) >= 1000 && u < 6) {
    bytes /= 1000;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf,
                bytes >= 100 || u == 0 ? "%.0f %s"
                : bytes >= 10          ? "%.1f %s"
                                       : "%.2f %s",
                bytes, units[u]);
  return buf;
}

namespace {

// The first number in a file ("max" and absent files: negative).
double read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return -1;
  try {
    return std::stod(word);
  } catch (const std::exception&) {
    return -1;
  }
}

// `key value` lines (memory.stat) or `Key: value kB` (meminfo): the value of `key`, or -1.
double read_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string k;
    double v = 0;
    if (words >> k >> v && (k == key || k == key + ":")) return v;
  }
  return -1;
}

// This process's cgroup paths: v2's ("0::/path") and v1's memory controller's.
void own_cgroups(const std::string& root, std::string* v2, std::string* v1) {
  std::ifstream in(root + "/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) *v2 = path;
    std::istringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');)
      if (c == "memory") *v1 = path;
  }
}

}  // namespace

MachineMemory machine_memory(const std::string& root) {
  MachineMemory m;
  const double avail_kb = read_field(root + "/proc/meminfo", "MemAvailable");
  if (avail_kb >= 0) {
    m.available = avail_kb * 1024;
    m.source = "MemAvailable";
  }
  std::string v2, v1;
  own_cgroups(root, &v2, &v1);
  // Each group from this process's up to the hierarchy's root: the tightest
  // room left under a limit (what the group holds, less the page cache it
  // could drop, counts as used).
  auto consider = [&](const std::string& dir, const char* limit_file, const char* usage_file, const char* inactive) {
    const double limit = read_number(dir + "/" + limit_file);
    if (limit <= 0 || limit >= 9e18) return;  // "max" (v2) or the unlimited 2^63 - page (v1)
    double used = read_number(dir + "/" + usage_file);
    const double cache = read_field(dir + "/memory.stat", inactive);
    if (used < 0) used = 0;
    if (cache > 0) used = std::max(0.0, used - cache);
    const double room = std::max(0.0, limit - used);
    if (m.available < 0 || room < m.available) {
      m.available = room;
      m.source = "cgroup " + dir.substr(root.size()) + " (limit " + gb(limit) + ", " + gb(used) + " in use)";
    }
  };
  auto walk = [&](const std::string& base, std::string path, const char* limit_file, const char* usage_file,
                  const char* inactive) {
    for (;;) {
      consider(base + (path == "/" ? "" : path), limit_file, usage_file, inactive);
      if (path.empty() || path == "/") break;
      path = path.substr(0, path.rfind('/'));
      if (path.empty()) path = "/";
    }
  };
  walk(root + "/sys/fs/cgroup", v2.empty() ? "/" : v2, "memory.max", "memory.current", "inactive_file");
  walk(root + "/sys/fs/cgroup/memory", v1.empty() ? "/" : v1, "memory.limit_in_bytes", "memory.usage_in_bytes",
       "total_inactive_file");
  return m;
}

void check_memory(const RunConfig& cfg, const MemoryEstimate& e, const MachineMemory& m) {
  if (!cfg.train.memory_check || m.available < 0) return;
  const double usable = m.available * (1 - cfg.train.memory_margin);
  const MemoryPhase& peak = e.peak_phase();
  if (peak.bytes() <= usable) return;
  // Every phase, its terms largest first; a term's keys where it first appears.
  std::ostringstream out;
  out << "this " << cfg.variant << " run needs about " << gb(peak.bytes()) << " of memory at its peak (" << peak.name
      << "), and this machine has " << gb(usable) << " to give it (" << gb(m.available) << " available by " << m.source
      << ", less train.memory_margin = " << num(cfg.train.memory_margin) << "):\n"
      << "  parameters: " << count(e.params) << " (" << e.param_keys << ")\n";
  std::set<std::string> explained;
  for (const auto& phase : e.phases) {
    std::vector<MemoryTerm> terms = phase.terms;
    std::stable_sort(terms.begin(), terms.end(),
                     [](const MemoryTerm& a, const MemoryTerm& b) { return a.bytes > b.bytes; });
    out << "  " << phase.name << (&phase == &peak ? " (the peak)" : "") << ": " << gb(phase.bytes()) << " =";
    for (size_t i = 0; i < terms.size(); ++i) {
      out << (i ? " +" : "") << " " << terms[i].name << " " << gb(terms[i].bytes);
      if (explained.insert(terms[i].name).second) out << " (" << terms[i].keys << ")";
    }
    out << "\n";
  }
  const MemoryTerm& largest = *std::max_element(
      peak.terms.begin(), peak.terms.end(), [](const MemoryTerm& a, const MemoryTerm& b) { return a.bytes < b.bytes; });
  out << "The largest term is " << largest.name << (largest.lower.empty() ? "" : ": lower " + largest.lower)
      << "; or set train.memory_check = off "
      << "(--train.memory_check off) to run anyway if you know better.";
  throw ConfigError(out.str());
}

void check_memory(const RunConfig& cfg, MemoryUse use) {
  if (!cfg.train.memory_check) return;
  check_memory(cfg, estimate_memory(cfg, use), machine_memory());
}

void check_memory(const std::vector<RunConfig>& runs) {
  MachineMemory m;
  bool read = false;
  for (const auto& c : runs) {
    if (!c.train.memory_check) continue;
    if (!read) {
      m = machine_memory();
      read = true;
    }
    check_memory(c, estimate_memory(c), m);
  }
}

}  // namespace zl
