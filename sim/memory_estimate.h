// What a run will hold in memory at its peak, from its config alone, and
// whether this machine has that much (issue 30 §6: refuse up front what
// cannot work). Pure arithmetic on the RunConfig, no LibTorch: a 620-billion-
// parameter config is refused in microseconds instead of growing towards the
// OOM killer.
//
// Dimension letters as in models/kv_cache.h: B batch, T model.context, L
// layers, H heads, D head width, C model.dim, M the MLP width
// (model.mlp_ratio·C), V the vocabulary (data.vocab_size, or 257 bytes).
//
// What is counted (bytes), in phases; the largest phase is the peak:
//   training step:
//     weights      P·4 (fp32 parameters; bf16 is autocast, the master copy fp32)
//     gradients    P·4
//     optimizer    P·8: AdamW's two moments (sim/trainer.cpp; no amsgrad)
//     autocast     P·2 with train.precision = bf16: the bf16 copies of the weights
//     activations  what one step keeps for backward at train.batch × T: per
//                  layer and token the block input, both norms' outputs, the
//                  q, k, v copies, the attention output, the MLP's two M-wide
//                  tensors and the softmax probabilities H·T (B·H·T·T per
//                  layer: the term that grows with the square of the
//                  context); the variant's own tensors (sfcl's coefficients,
//                  gated_attn's gate, latent_kv's latent, fused's weights,
//                  alibi's biased copy of one layer's scores, dropout's
//                  masks); then the log-probabilities
//                  and their gradient (B·T·V) and the scores' gradient of the
//                  layer in backward
//   checkpoint save: weights, gradients and optimizer, beside the file being
//     serialised in memory (sim/torch_bytes.h): 2× its bytes, the stream's
//     buffer and the string copied out of it (measured: 2.2-2.5×). The
//     optimizer's file (P·8) when a checkpoint falls before the last step,
//     else the model's (P·4).
//   side models and decoding, beside the model's weights and gradients:
//     side models  the variant's own: sfvl's verifier (trained, with the LM
//                  samples of its negative windows), speculative's draft
//                  (trained as a one-layer model), fused's baseline (loaded
//                  for kl_from_baseline), latent_kv svd's Grams and factors,
//                  and the judge (trained) when judge.enabled
//     KV cache     decode.batch (serve.max_num_seqs when serving, ×(1 +
//                  contrastive.k) for contrastive search) × cached tokens
//                  (T, or the eviction budget + 1) × L × the cache width per
//                  token and layer: 2C, latent_kv's rank r, fused's C + H·r
//                  with value distillation (+ C + H for key weighting's
//                  queries and mass, or 1 for its importance), + H for an
//                  evicting cache's positions (+ H for h2o's scores), ×4
//                  bytes: kv_bytes_per_token below, times the rest
//     prefill      decode.batch × T at once, without gradients: logits
//                  B·T·V, scores B·H·T·T, hidden states
//   and in every phase a fixed runtime (LibTorch, the corpus, the tokenizer:
//   200 MB, the peak of the smoke study's tiny model here).
// Not counted: allocator fragmentation, LibTorch's per-thread scratch, the
// evaluation passes (no gradients: below the training step). Checked against
// LibTorch's parameter count for every variant and against peaks measured
// here (tests/cpp/test_memory_estimate.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/config.h"

namespace zl {

// One term of the estimate: what it is, its bytes, and the keys (with their
// values) that drive it, for the refusal's message.
struct MemoryTerm {
  std::string name;  // "weights", "activations", ...
  double bytes = 0;
  std::string keys;   // "train.batch = 32 x model.context = 128, ..."
  std::string lower;  // what to lower for a smaller term: "model.dim or model.layers" ("" for the runtime)
};

// A stretch of the run whose terms are held at once; the run's peak is
// its largest phase.
struct MemoryPhase {
  std::string name;  // "training step", "checkpoint save", "side models and decoding", "decoding"
  std::vector<MemoryTerm> terms;
  double bytes() const;
};

struct MemoryEstimate {
  double params = 0;       // the model's parameters (double: a config can ask for more than int64 holds)
  std::string param_keys;  // the keys that give params, with their values
  std::vector<MemoryPhase> phases;
  const MemoryPhase& peak_phase() const;
  double peak() const { return peak_phase().bytes(); }
  // The bytes of the term `name` in phase `phase` (0 when absent): for tests.
  double term(const std::string& phase, const std::string& name) const;
};

// What the run will decode or train: Run (a study's run: training, side
// models, decoding); Decode (a trained model only sampled: `generate`,
// `bench-decode`): no gradients, optimizer, training activations or side
// model training.
enum class MemoryUse { Run, Decode };

// The parameter count of the model a run trains (its variant's network,
// sim/model_options.h's model_config), and the estimate of its peak.
double model_parameters(const RunConfig& cfg);
MemoryEstimate estimate_memory(const RunConfig& cfg, MemoryUse use = MemoryUse::Run);

// The bytes the KV cache of the model a run decodes holds per token, over
// every layer: what KVCache::bytes_per_token measures on the built cache
// (models/kv_cache.h), from the config alone (the cache width above). Eviction
// changes how many tokens are held, not what one costs, but for its
// bookkeeping per slot. A served run's KV budget buys blocks at this price
// (sim/serving/serving_checks.h), so it is checked before anything trains.
double kv_bytes_per_token(const RunConfig& cfg);

// The memory this process may still take, in bytes: MemAvailable from
// /proc/meminfo, lowered to the room left under a cgroup's limit (v2
// memory.max, v1 memory.limit_in_bytes, less what the group uses other than
// reclaimable page cache) where there is one. `root` is prepended to every
// path (tests give a folder of fake files). available < 0: nothing readable.
struct MachineMemory {
  double available = -1;
  std::string source;  // "MemAvailable" or "cgroup /sys/fs/cgroup/...: limit 8.0 GB"
};
MachineMemory machine_memory(const std::string& root = "");

// Throws ConfigError when `e` exceeds (1 − train.memory_margin) × m.available: the
// message names the peak's terms with the keys that drive each, the
// parameter count, the GB available and how to override (train.memory_check =
// off). Does nothing when train.memory_check is off or m.available is unknown.
void check_memory(const RunConfig& cfg, const MemoryEstimate& e, const MachineMemory& m);
// The same for this machine, reading machine_memory() once per call.
void check_memory(const RunConfig& cfg, MemoryUse use = MemoryUse::Run);
// Every run of a study slice, reading the machine once; the first that
// cannot fit throws.
void check_memory(const std::vector<RunConfig>& runs);

// "1.5 GB", "9.93 TB", "512 MB": bytes in decimal units, 3 significant digits.
std::string format_bytes(double bytes);

}  // namespace zl
