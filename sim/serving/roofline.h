// The projected step cost (issue 14): a roofline per named accelerator and
// model shape (sim/serving/hardware.h). A step takes the longer of its FLOPs
// at the achievable compute rate and its memory traffic at the sustained
// bandwidth: decode steps are bound by reading the weights and the KV cache,
// long prefills by FLOPs. Figures from it are projections ("projected"),
// never measurements; sim/serving/calibration.h is the measured model.
//
// Also here: how many GPUs a model needs (tensor_parallel_for), how many KV
// blocks fit beside it (kv_blocks, vLLM's sizing), and the energy of a run
// under Splitwise's constant power per phase (PowerModel, energy_j).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/serving/cost_model.h"
#include "sim/serving/hardware.h"

namespace zl {

// How a variant measured at small scale here is carried to a named shape.
// Each figure is a ratio to the baseline (or a share of the model), taken
// where the project can measure or count it, and applied to the named
// model's own figures:
//   - flops_ratio: the variant's forward FLOPs per token over the baseline's,
//     from the project's cost model (sim/cost.h) at the run's model and
//     context (gated attention, latent KV > or < 1);
//   - kv_bytes_ratio: its KV-cache bytes per token over the baseline's
//     (latent KV, Palu's low-rank KV: < 1); scales KV reads, KV writes, and
//     the tokens a block of KV memory holds;
//   - extra_weight_ratio: weights held and read every step beside the model
//     (a verifier, a gate), as a share of the model's parameters;
//   - kv_token_budget: an evicting cache's held tokens per request
//     (StreamingLLM's sink + window, H2O's heavy hitters + recent); 0 = every
//     token is held. It caps the KV a step reads, not its FLOPs (those
//     methods score the whole prompt before they evict, and a decode step is
//     bound by bytes, where the cap applies);
//   - extra_step_fraction: re-sampling's extra decode steps per sampled
//     token (sfvl's re-samples over its checks). RooflineCost charges them
//     inside step_ns, as an expected cost (see RooflineTerms::resample_ns),
//     so a simulator using it schedules no extra steps for them.
struct VariantScaling {
  double flops_ratio = 1;          // > 0
  double kv_bytes_ratio = 1;       // > 0
  double extra_weight_ratio = 0;   // >= 0
  int64_t kv_token_budget = 0;     // >= 0; 0 = every token held
  double extra_step_fraction = 0;  // >= 0
  std::string note;                // where the ratios came from
};

// Throws std::invalid_argument naming the field out of range.
void check_scaling(const VariantScaling& s);

// One step's roofline, for inspection (RooflineCost::terms).
struct RooflineTerms {
  double flops = 0;       // over the whole tensor-parallel group
  double bytes = 0;       // read and written in device memory, over the group
  double compute_ns = 0;  // flops / (peak · flops_efficiency · tensor_parallel)
  double memory_ns = 0;   // bytes / (bandwidth · bandwidth_efficiency · tensor_parallel)
  // Re-sampling's expected extra: extra_step_fraction times the roofline of
  // a step that decodes one token for each part that samples (a re-sample is
  // a new step: the weights are read again).
  double resample_ns = 0;
  double overhead_ns = 0;  // the fixed per-step overhead
  bool memory_bound() const { return memory_ns >= compute_ns; }
  double total_ns() const { return (memory_ns > compute_ns ? memory_ns : compute_ns) + resample_ns + overhead_ns; }
};

class RooflineCost : public StepCostModel {
 public:
  // tensor_parallel GPUs share each step evenly (its FLOPs and bytes divided
  // among them); their communication (all-reduces over NVLink) is not
  // modelled, so projections at tensor_parallel > 1 are optimistic.
  // overhead_ns is a fixed cost added to every step: kernel launches,
  // scheduling, sampling, which the roofline leaves out (DistServe's and
  // Vidur's fits carry such a constant). 0 by default: a pure roofline.
  RooflineCost(Accelerator accelerator, ModelShape model, VariantScaling scaling, int tensor_parallel = 1,
               int64_t overhead_ns = 0);

  // Per step: FLOPs = Σ over parts of tokens · flops_per_token(context +
  // tokens / 2) · flops_ratio (the chunk's mean context: its i-th token
  // attends over context + i keys); bytes = the weights · (1 +
  // extra_weight_ratio), read once per step, + Σ over parts of the KV held
  // (min(context, kv_token_budget if set) tokens) read and the tokens' KV
  // written, both at kv_bytes_per_token · kv_bytes_ratio. The duration is
  // RooflineTerms::total_ns, at least 1 ns. A step with no parts costs its
  // overhead alone.
  int64_t step_ns(const StepShape& step) const override;
  std::string kind() const override { return "projected"; }

  RooflineTerms terms(const StepShape& step) const;

  const Accelerator& accelerator() const { return acc_; }
  const ModelShape& model() const { return model_; }
  const VariantScaling& scaling() const { return scaling_; }
  int tensor_parallel() const { return tp_; }

 private:
  // The roofline (compute_ns, memory_ns, flops, bytes) of `parts`, weights included.
  RooflineTerms roofline(const std::vector<StepShape::Part>& parts) const;

  Accelerator acc_;
  ModelShape model_;
  VariantScaling scaling_;
  int tp_ = 1;
  int64_t overhead_ns_ = 0;
};

// The smallest power of two of GPUs (1, 2, 4, 8) whose memory ·
// memory_utilization holds the model's weights with at least 10% of it left
// for the KV cache: weight_bytes <= 0.9 · memory · memory_utilization · n.
// Throws std::runtime_error naming both when 8 do not suffice.
int64_t tensor_parallel_for(const Accelerator& accelerator, const ModelShape& model, double memory_utilization = 0.9);

// KV-cache blocks that fit, as vLLM sizes them: (memory ·
// memory_utilization · tensor_parallel − weights · (1 + extra_weight_ratio))
// / (block_size · kv_bytes_per_token · kv_bytes_ratio), floored (vLLM's
// gpu_memory_utilization default 0.9, block size 16). vLLM also takes the
// activations' peak from a profiling run; that is not modelled, so this is an
// upper bound. An evicting cache's kv_token_budget does not change the count
// (it changes how many blocks a request holds: the scheduler's concern).
// Throws std::runtime_error naming the accelerator and model when not one
// block fits.
int64_t kv_blocks(const Accelerator& accelerator, const ModelShape& model, const VariantScaling& scaling,
                  int64_t tensor_parallel, int64_t block_size = 16, double memory_utilization = 0.9);

// Splitwise's constant power per phase (Patel et al., ISCA 2024; its
// simulator's configs/power_model/constant.yaml): each GPU draws a fixed
// power while its step holds prompt tokens, another while it only decodes,
// and a third while idle, whatever the batch. A step that mixes prompt
// tokens and decodes (chunked prefill) counts as a prefill step. Measured
// power grows with batch size (the ML.ENERGY leaderboard's logistic fit in
// log2(batch)); the constant model ignores that, and is the simple reference.
struct PowerModel {
  double prefill_w = 0, decode_w = 0;  // the whole tensor-parallel group's, while busy
  double idle_w = 0;                   // the group's, while idle

  PowerModel() = default;
  PowerModel(const Accelerator& accelerator, int64_t tensor_parallel);
  double watts(bool prefill_in_step) const { return prefill_in_step ? prefill_w : decode_w; }
  double idle() const { return idle_w; }
};

// Joules a tensor-parallel group of `accelerator` spends busy on prefill
// steps, busy on decode-only steps and idle for the given times (ns), under
// PowerModel. Throws std::invalid_argument on a negative time or
// tensor_parallel < 1.
double energy_j(const Accelerator& accelerator, int64_t tensor_parallel, int64_t prefill_busy_ns,
                int64_t decode_busy_ns, int64_t idle_ns);

}  // namespace zl
