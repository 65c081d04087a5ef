#include "sim/serving/projection.h"

#include <algorithm>
#include <cmath>

#include "models/factory.h"
#include "sim/cost.h"
#include "sim/model_options.h"
#include "sim/serving/roofline.h"
#include "sim/serving/serving_checks.h"
#include "sim/serving/simulator.h"

namespace zl {
namespace {

// vLLM's V1 defaults on a large GPU (SERVING-ANCHORS.md: max_num_seqs 256
// up to 1024 on >= 70 GiB, max_num_batched_tokens 2048-16384, blocks of 16):
// the middle of the documented range, the same on every accelerator.
SchedulerOptions projected_scheduler(int64_t blocks, int64_t held_cap) {
  SchedulerOptions o;
  o.block_size = 16;
  o.num_blocks = blocks;
  o.max_num_seqs = 256;
  o.max_num_batched_tokens = 8192;
  o.held_token_cap = held_cap;
  return o;
}

// The variant as measured here, carried to a named shape as ratios to the
// baseline of the same small shape (VariantScaling, sim/serving/roofline.h);
// the same for every shape but an evicting cache's budget (kv_budget_for).
VariantScaling scaling_of(OpenRun& run, double kv_bytes_per_token, const EvictionOptions& eviction,
                          const RunRecord& r) {
  const ModelConfig& mc = run.model->cfg;
  const int64_t context = mean_decode_context(mc.context, run.cfg.decode.max_new_tokens);
  auto flops = flops_per_token(mc, context);
  const double base = total_flops(flops);
  run.stage->add_flops(*run.ctx, context, flops);
  VariantScaling s;
  // An evicting cache's attention is capped by its budget, not here.
  s.flops_ratio = eviction.on() ? 1.0 : total_flops(flops) / base;
  s.kv_bytes_ratio = kv_bytes_per_token / (2.0 * mc.layers * mc.dim * sizeof(float));
  RunConfig plain = run.cfg;  // the same shape with none of the variants' parts
  plain.variant = "baseline";
  const double baseline_params = make_model("baseline", model_config(plain, mc.vocab))->parameter_count();
  double extra = run.model->parameter_count() - baseline_params;
  auto side = r.metrics.find("verifier_params");
  if (side != r.metrics.end() && std::isfinite(side->second)) extra += side->second;
  s.extra_weight_ratio = std::max(0.0, extra / baseline_params);
  s.note = "ratios to the baseline at " + std::to_string(mc.layers) + "x" + std::to_string(mc.dim) + ", context " +
           std::to_string(mc.context);
  return s;
}

// An evicting cache holds the same share of the shape's context as here.
int64_t kv_budget_for(const EvictionOptions& eviction, const ModelShape& shape, int64_t context) {
  return eviction.on() ? std::max<int64_t>(1, eviction.budget * shape.context / context) : 0;
}

// The run's workload scaled to the shape: prompts and outputs the same share
// of its context as here (token ids do not matter to a cost model).
std::vector<ServeRequest> scaled_workload(const std::vector<std::vector<int32_t>>& prompts, int64_t output_len,
                                          double factor, const ArrivalOptions& a) {
  std::vector<std::vector<int32_t>> scaled;
  for (const auto& p : prompts) scaled.emplace_back(std::max<int64_t>(1, std::llround(p.size() * factor)), 0);
  return synthetic_workload(scaled, std::max<int64_t>(1, std::llround(output_len * factor)), a);
}

struct Rows {
  std::vector<std::string> accelerator, shape, label;
  std::vector<double> load, rate;
  std::vector<int64_t> tensor_parallel, kv_blocks;
  std::vector<std::map<std::string, double>> figures;  // per row; a figure a row lacks is NaN
  void add(const std::string& acc, const std::string& sh, int64_t tp, int64_t blocks, double l, double rt,
           std::map<std::string, double> named) {
    accelerator.push_back(acc);
    shape.push_back(sh);
    label.push_back("projected");
    tensor_parallel.push_back(tp);
    kv_blocks.push_back(blocks);
    load.push_back(l);
    rate.push_back(rt);
    figures.push_back(std::move(named));
  }
  Table table() const {
    Table t;
    t.add("accelerator", accelerator);
    t.add("shape", shape);
    t.add("label", label);
    t.add("tensor_parallel", tensor_parallel);
    t.add("kv_blocks", kv_blocks);
    t.add("load", load);
    t.add("rate", rate);
    std::map<std::string, std::vector<double>> columns;
    for (const auto& row : figures)
      for (const auto& [k, v] : row) columns[k];
    for (auto& [k, column] : columns)
      for (const auto& row : figures) {
        auto it = row.find(k);
        column.push_back(it == row.end() ? NAN : it->second);
      }
    for (auto& [k, column] : columns) t.add(k, column);
    return t;
  }
};

}  // namespace

std::string hardware_catalog_path() { return std::string(ZL_SOURCE_DIR) + "/ablations/hardware.ini"; }

void project(OpenRun& run, const ResampleModel& resample, double kv_bytes_per_token, const EvictionOptions& eviction,
             RunRecord& r) {
  const ServeConfig& s = run.cfg.serve;
  if (!projected(run.cfg)) return;
  const auto accelerators = name_list(s.hardware), shapes = name_list(s.shapes);
  const HardwareCatalog catalog = read_hardware(hardware_catalog_path());
  const ModelConfig& mc = run.model->cfg;
  const uint64_t seed = sampling_seed(run.cfg, 4051);
  const Slo slo{s.projected_slo_ttft_ms, s.projected_slo_tpot_ms, 0};
  const auto loads = s.rates.empty() ? number_list(s.loads) : std::vector<double>{0.3, 0.8, 1.5};
  const int64_t output_len = s.output_len > 0 ? s.output_len : run.cfg.decode.max_new_tokens;
  std::vector<std::vector<int32_t>> prompts;
  {
    DecodeOptions cut = run.opt;
    cut.max_new_tokens = output_len;
    for (const auto& p : run.prompts.tokens) prompts.emplace_back(kept_prompt_tokens(p.size(), mc.context, cut), 0);
  }
  const VariantScaling measured = scaling_of(run, kv_bytes_per_token, eviction, r);
  Rows rows;
  bool headline = true;
  for (const auto& acc_name : accelerators) {
    const Accelerator& acc = catalog.accelerator(acc_name);
    for (const auto& shape_name : shapes) {
      const ModelShape& shape = catalog.model_shape(shape_name);
      const double factor = static_cast<double>(shape.context) / mc.context;
      VariantScaling scaling = measured;
      scaling.kv_token_budget = kv_budget_for(eviction, shape, mc.context);
      const int64_t tp = tensor_parallel_for(acc, shape);
      const int64_t blocks = kv_blocks(acc, shape, scaling, tp);
      const SchedulerOptions sched = projected_scheduler(blocks, scaling.kv_token_budget);
      const RooflineCost cost(acc, shape, scaling, static_cast<int>(tp));
      auto workload = [&](double rate) {
        ArrivalOptions a;
        a.rate = rate;
        a.burstiness = s.burstiness;
        a.requests = s.requests;
        a.seed = seed;
        return scaled_workload(prompts, output_len, factor, a);
      };
      const double cap = simulated_capacity(cost, resample, workload(INFINITY), sched, seed);
      for (double l : loads) {
        auto res = simulate(cost, resample, workload(l * cap), sched, seed);
        auto named = serving_metrics(res.requests, slo).named();
        named["capacity_rps"] = cap;
        rows.add(acc_name, shape_name, tp, blocks, l, l * cap, named);
      }
      // One rate for every variant on this accelerator and shape, so that
      // their latency, memory and power compare: a fifth of the plain
      // baseline's capacity there, which a variant several times slower
      // (sfvl re-sampling often) still sustains.
      const VariantScaling plain;
      const RooflineCost plain_cost(acc, shape, plain, static_cast<int>(tp));
      const double reference_rate =
          0.2 * simulated_capacity(plain_cost, {}, workload(INFINITY),
                                   projected_scheduler(kv_blocks(acc, shape, plain, tp), 0), seed);
      auto res = simulate(cost, resample, workload(reference_rate), sched, seed);
      ServingMetrics at_ref = serving_metrics(res.requests, slo);
      int64_t prefill_ns = 0, decode_ns = 0, peak_blocks = 0;
      for (const auto& st : res.steps) {
        (st.shape.prefill_tokens() > 0 ? prefill_ns : decode_ns) += st.end_ns - st.start_ns;
        peak_blocks = std::max(peak_blocks, blocks - st.free_blocks);
      }
      const int64_t span = res.steps.empty() ? 0 : res.steps.back().end_ns;
      const double joules = energy_j(acc, tp, prefill_ns, decode_ns, std::max<int64_t>(0, span - prefill_ns - decode_ns));
      const double kv_gb = peak_blocks * 16.0 * shape.kv_bytes_per_token() * scaling.kv_bytes_ratio / 1e9;
      const double weights_gb = shape.weight_bytes() * (1 + scaling.extra_weight_ratio) / 1e9;
      auto named = at_ref.named();
      named["capacity_rps"] = cap;
      named["kv_peak_gb"] = kv_gb;
      named["memory_gb"] = weights_gb + kv_gb;
      named["power_w"] = span > 0 ? joules / (span * 1e-9) / tp : NAN;  // per GPU, as the article's watts
      named["max_rate_slo"] = max_rate_meeting(cost, resample, workload, sched, slo, 0.9, cap, seed);
      rows.add(acc_name, shape_name, tp, blocks, reference_rate / cap, reference_rate, named);
      if (headline) {  // the first accelerator and shape: the claims' projected rows
        auto& m = r.metrics;
        m["projected_capacity_rps"] = cap;
        m["projected_reference_rate"] = reference_rate;
        m["projected_max_rate_slo"] = named["max_rate_slo"];
        m["projected_ttft_p50_ms"] = at_ref.ttft_ms.median;
        m["projected_tpot_p50_ms"] = at_ref.tpot_ms.median;
        m["projected_kv_peak_gb"] = kv_gb;
        m["projected_memory_gb"] = named["memory_gb"];
        m["projected_power_w"] = named["power_w"];
        headline = false;
      }
    }
  }
  r.tables["serve/projected"] = rows.table();
}

}  // namespace zl
