#include "sim/serving/roofline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace zl {

namespace {

void at_least(double v, double lo, bool inclusive, const std::string& field) {
  if (std::isnan(v) || (inclusive ? v < lo : v <= lo) || std::isinf(v))
    throw std::invalid_argument("VariantScaling." + field + " = " + std::to_string(v) + ": must be " +
                                (inclusive ? ">= " : "> ") + std::to_string(lo));
}

void check_tp(int64_t tensor_parallel) {
  if (tensor_parallel < 1)
    throw std::invalid_argument("tensor_parallel = " + std::to_string(tensor_parallel) + ": must be >= 1");
}

void check_utilization(double u) {
  if (!(u > 0 && u <= 1))
    throw std::invalid_argument("memory_utilization = " + std::to_string(u) + ": must be in (0, 1]");
}

}  // namespace

void check_scaling(const VariantScaling& s) {
  at_least(s.flops_ratio, 0, false, "flops_ratio");
  at_least(s.kv_bytes_ratio, 0, false, "kv_bytes_ratio");
  at_least(s.extra_weight_ratio, 0, true, "extra_weight_ratio");
  at_least(s.extra_step_fraction, 0, true, "extra_step_fraction");
  if (s.kv_token_budget < 0)
    throw std::invalid_argument("VariantScaling.kv_token_budget = " + std::to_string(s.kv_token_budget) +
                                ": must be >= 0 (0: every token held)");
}

RooflineCost::RooflineCost(Accelerator accelerator, ModelShape model, VariantScaling scaling, int tensor_parallel,
                           int64_t overhead_ns)
    : acc_(std::move(accelerator)),
      model_(std::move(model)),
      scaling_(std::move(scaling)),
      tp_(tensor_parallel),
      overhead_ns_(overhead_ns) {
  check_scaling(scaling_);
  check_tp(tp_);
  if (overhead_ns_ < 0) throw std::invalid_argument("overhead_ns = " + std::to_string(overhead_ns_) + ": must be >= 0");
}

RooflineTerms RooflineCost::roofline(const std::vector<StepShape::Part>& parts) const {
  RooflineTerms t;
  const double kv_token = static_cast<double>(model_.kv_bytes_per_token()) * scaling_.kv_bytes_ratio;
  t.bytes = static_cast<double>(model_.weight_bytes()) * (1 + scaling_.extra_weight_ratio);  // read once per step
  for (const auto& p : parts) {
    const double tokens = static_cast<double>(p.tokens), context = static_cast<double>(p.context);
    // The chunk's i-th token attends over context + i keys: its mean is context + tokens / 2.
    t.flops += tokens * model_.flops_per_token(context + tokens / 2) * scaling_.flops_ratio;
    const double held =
        scaling_.kv_token_budget > 0 ? std::min(context, static_cast<double>(scaling_.kv_token_budget)) : context;
    t.bytes += held * kv_token       // the cached keys and values the step reads
               + tokens * kv_token;  // the new tokens' keys and values it writes
  }
  t.compute_ns = t.flops / (acc_.peak_flops_s() * acc_.flops_efficiency * tp_) * 1e9;
  t.memory_ns = t.bytes / (acc_.peak_bytes_s() * acc_.bandwidth_efficiency * tp_) * 1e9;
  return t;
}

RooflineTerms RooflineCost::terms(const StepShape& step) const {
  RooflineTerms t;
  if (!step.parts.empty()) t = roofline(step.parts);
  if (scaling_.extra_step_fraction > 0) {
    // The re-sample steps: one more token for each part that sampled, at the
    // context the step leaves it with.
    std::vector<StepShape::Part> again;
    for (const auto& p : step.parts)
      if (p.samples) again.push_back({1, p.context + p.tokens, true});
    if (!again.empty()) {
      const RooflineTerms r = roofline(again);
      t.resample_ns = scaling_.extra_step_fraction * std::max(r.compute_ns, r.memory_ns);
    }
  }
  t.overhead_ns = static_cast<double>(overhead_ns_);
  return t;
}

int64_t RooflineCost::step_ns(const StepShape& step) const {
  return std::max<int64_t>(1, std::llround(terms(step).total_ns()));
}

int64_t tensor_parallel_for(const Accelerator& accelerator, const ModelShape& model, double memory_utilization) {
  check_utilization(memory_utilization);
  const double weights = static_cast<double>(model.weight_bytes());
  for (int64_t n = 1; n <= 8; n *= 2) {
    const double usable = accelerator.memory_bytes() * memory_utilization * static_cast<double>(n);
    if (weights <= 0.9 * usable) return n;  // at least 10% of the usable memory left for the KV cache
  }
  throw std::runtime_error("model " + model.name + " (" + std::to_string(weights / 1e9) +
                           " GB of weights) does not fit 8 x " + accelerator.name + " (" +
                           std::to_string(accelerator.memory_gb) + " GB each at utilization " +
                           std::to_string(memory_utilization) + ") with 10% left for the KV cache");
}

int64_t kv_blocks(const Accelerator& accelerator, const ModelShape& model, const VariantScaling& scaling,
                  int64_t tensor_parallel, int64_t block_size, double memory_utilization) {
  check_scaling(scaling);
  check_tp(tensor_parallel);
  check_utilization(memory_utilization);
  if (block_size < 1) throw std::invalid_argument("block_size = " + std::to_string(block_size) + ": must be >= 1");
  const double free_bytes = accelerator.memory_bytes() * memory_utilization * static_cast<double>(tensor_parallel) -
                            static_cast<double>(model.weight_bytes()) * (1 + scaling.extra_weight_ratio);
  const double block_bytes =
      static_cast<double>(block_size) * static_cast<double>(model.kv_bytes_per_token()) * scaling.kv_bytes_ratio;
  const double blocks = std::floor(free_bytes / block_bytes);
  if (!(blocks >= 1))
    throw std::runtime_error("no KV block fits: model " + model.name + " on " + std::to_string(tensor_parallel) +
                             " x " + accelerator.name + " leaves " + std::to_string(free_bytes / 1e9) +
                             " GB after its weights, a block of " + std::to_string(block_size) + " tokens needs " +
                             std::to_string(block_bytes / 1e9) + " GB");
  return static_cast<int64_t>(blocks);
}

PowerModel::PowerModel(const Accelerator& accelerator, int64_t tensor_parallel) {
  check_tp(tensor_parallel);
  const double n = static_cast<double>(tensor_parallel);
  prefill_w = accelerator.power_prefill_w * n;
  decode_w = accelerator.power_decode_w * n;
  idle_w = accelerator.power_idle_w * n;
}

double energy_j(const Accelerator& accelerator, int64_t tensor_parallel, int64_t prefill_busy_ns,
                int64_t decode_busy_ns, int64_t idle_ns) {
  if (prefill_busy_ns < 0 || decode_busy_ns < 0 || idle_ns < 0)
    throw std::invalid_argument("energy_j: times must be >= 0 (prefill " + std::to_string(prefill_busy_ns) +
                                ", decode " + std::to_string(decode_busy_ns) + ", idle " + std::to_string(idle_ns) +
                                " ns)");
  const PowerModel p(accelerator, tensor_parallel);
  return (p.watts(true) * static_cast<double>(prefill_busy_ns) + p.watts(false) * static_cast<double>(decode_busy_ns) +
          p.idle() * static_cast<double>(idle_ns)) *
         1e-9;
}

}  // namespace zl
