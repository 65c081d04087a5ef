#include "sim/stages/fused_stage.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "datasets/batch_sampler.h"
#include "models/factory.h"
#include "sim/checkpoint.h"
#include "sim/runtime.h"
#include "sim/step_replay.h"
#include "sim/trainer.h"

namespace zl {
namespace fs = std::filesystem;

void add_drift(const torch::Tensor& z, MonitorAccumulator& acc) {
  const int64_t B = z.size(0), T = z.size(1);
  if (T < 2) return;
  auto step = (z.narrow(1, 1, T - 1) - z.narrow(1, 0, T - 1)).norm(2, -1);  // [B,T-1]
  for (int64_t s = 0; s < T - 1; s += 100) {
    auto block = step.narrow(1, s, std::min<int64_t>(100, T - 1 - s));
    if (block.size(1) < 2) continue;
    auto sd = block.std(1, /*unbiased=*/false);  // [B]
    acc.drift_sum += sd.sum().item<double>();
    acc.drift_cv_sum += (sd / block.mean(1).clamp_min(1e-12)).sum().item<double>();
    acc.drift_n += static_cast<double>(B);
  }
}

void accumulate_monitor(Transformer& model, const torch::Tensor& x, const torch::Tensor& y, MonitorAccumulator& acc) {
  torch::NoGradGuard no_grad;
  FusedTrace trace;
  auto logits = model->forward_traced(x, trace).to(torch::kFloat);  // [B,T,V]
  for (const auto& w : trace.key_weights) {
    auto wd = w.to(torch::kDouble);
    acc.w_sum += wd.sum().item<double>();
    acc.w_sq += (wd * wd).sum().item<double>();
    acc.w_n += static_cast<double>(wd.numel());
  }
  if (!trace.distilled.empty()) {
    // Drift in the distilled subspace: the last layer's z, heads concatenated.
    auto z = trace.distilled.back().to(torch::kFloat);  // [B,H,T,r]
    const int64_t B = z.size(0), T = z.size(2);
    add_drift(z.permute({0, 2, 1, 3}).reshape({B, T, -1}), acc);  // [B,T,H*r]
  }
  if (trace.logits_ungated.defined()) {
    auto before = trace.logits_ungated.to(torch::kFloat);  // [B,T,V]
    const int64_t k = std::min<int64_t>(5, before.size(-1));
    auto order_before = std::get<1>(before.topk(k, -1)), order_after = std::get<1>(logits.topk(k, -1));
    acc.reorder += (order_before != order_after).any(-1).sum().item<double>();
    auto target = y.unsqueeze(-1);
    auto lp_before = torch::log_softmax(before, -1).gather(-1, target).squeeze(-1);  // [B,T]
    auto lp_after = torch::log_softmax(logits, -1).gather(-1, target).squeeze(-1);
    acc.suppress += (lp_after < lp_before - 0.01).sum().item<double>();
    acc.nats += (lp_before - lp_after).sum().item<double>();
    acc.positions += static_cast<double>(y.numel());
    acc.factor_sum += trace.gate_log_factors.exp().sum().item<double>();
    acc.factor_n += static_cast<double>(trace.gate_log_factors.numel());
  }
}

FusedMonitor finish_monitor(Transformer& model, const MonitorAccumulator& acc) {
  FusedMonitor m;
  if (acc.w_n > 0) {
    double mean = acc.w_sum / acc.w_n;
    m.key_weight_stability = std::sqrt(std::max(0.0, acc.w_sq / acc.w_n - mean * mean));
  }
  if (acc.drift_n > 0) {
    m.semantic_drift_score = acc.drift_sum / acc.drift_n;
    m.semantic_drift_score_normalized = acc.drift_cv_sum / acc.drift_n;
  }
  if (acc.positions > 0) {
    m.logits_gate_effectiveness = acc.reorder / acc.positions;
    m.gate_suppress_true_rate = acc.suppress / acc.positions;
    m.gate_true_nats = acc.nats / acc.positions;
    m.gate_mean_factor = acc.factor_sum / acc.factor_n;
  }
  if (model->cfg.fused.value_rank > 0) {
    torch::NoGradGuard no_grad;
    double total = 0;
    for (const auto& b : *model->blocks) {
      auto p = b->as<Block>()->attn->value_projection().to(torch::kFloat);  // [r,D]
      const int64_t r = p.size(0);
      if (r < 2) {
        total += 1.0;  // one row: nothing to be oblique to
        continue;
      }
      auto u = p / p.norm(2, 1, true).clamp_min(1e-12);
      auto cos = torch::matmul(u, u.t()).abs();  // [r,r]
      double off = (cos.sum() - cos.diagonal().sum()).item<double>() / static_cast<double>(r * (r - 1));
      total += 1.0 - off;
    }
    m.value_distill_orthogonality = total / static_cast<double>(model->blocks->size());
  }
  return m;
}

double mean_kl(const torch::Tensor& logits_p, const torch::Tensor& logits_q) {
  auto lp = torch::log_softmax(logits_p.to(torch::kFloat), -1), lq = torch::log_softmax(logits_q.to(torch::kFloat), -1);
  return (lp.exp() * (lp - lq)).sum(-1).mean().item<double>();
}

void FusedStage::add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& f) {
  const ModelConfig& c = ctx.model->cfg;
  const FusedOptions& o = c.fused;
  const double C = c.dim, H = c.heads, D = c.head_dim(), L = c.layers, V = c.vocab, T = context;
  if (o.key_weighting_on()) {
    // Per layer, head and key: d * (1 - I), times alpha, exp, then scale or add.
    f["key_weighting"] = L * H * T * 4;
    switch (o.importance) {
      case FusedOptions::Importance::AttnMass:  // unweighted softmax (~5/key), running sum, division
        f["importance"] = L * H * T * 7;
        break;
      case FusedOptions::Importance::HiddenNorm:  // a norm per token and layer
        f["importance"] = L * (2 * C + 3);
        break;
      case FusedOptions::Importance::GradNorm:  // final norm + LM head forward and backward, per layer
        f["importance"] = L * (2 * C * V + 2 * C * V + 6 * V + 16 * C);
        break;
    }
  }
  if (o.value_rank > 0) {
    const double r = static_cast<double>(o.value_rank);
    f["value_distill"] = L * (2 * H * D * r + 2 * H * r * D);  // z = P v, then (A z) Pᵀ
    f["attention"] -= L * (2 * T * C - 2 * T * H * r);         // the mix runs over r, not D, values
  }
  if (o.gate) {
    const double n = static_cast<double>(o.gate_keys), F = H * n, Hd = static_cast<double>(o.gate_hidden),
                 K = static_cast<double>(o.gate_top_k);
    f["gate"] = H * T                 // top keys of the last layer's attention
                + H * n * (2 * D + 4)  // their cosines (norms, division)
                + 2 * F * Hd + 8 * Hd + 2 * Hd * K  // the two layers and GELU
                + V + 2 * K;           // top-k candidates by logit, log factors added
  }
}

namespace {

// Each part's share of a decode step's time on the fast step, beside its
// share of the analytic FLOPs (add_flops): the quality pass replayed with
// every part, and with each part left out (sim/step_replay.h), best of 3.
// The reference step cannot leave a part out: NaN there.
void time_shares(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) {
  auto& m = r.metrics;
  const FusedOptions& f = ctx.model->cfg.fused;
  using Part = DecodeStep::Part;
  std::vector<std::pair<std::string, Part>> parts;
  if (f.key_weighting_on()) parts.push_back({"key_weighting", Part::KeyWeighting});
  if (f.value_rank > 0) parts.push_back({"value_distill", Part::ValueDistillation});
  if (f.gate) parts.push_back({"gate", Part::Gate});
  auto flops = [&](const std::string& name) { return m.count("flops_" + name) ? m["flops_" + name] : 0.0; };
  for (const auto& [name, part] : parts) {
    const double own = flops(name) + (name == "key_weighting" ? flops("importance") : 0.0);
    m["flops_share_" + name] = own / m["flops_per_token"];
    m["time_share_" + name] = std::nan("");
  }
  if (parts.empty() || !quality.fast_step) return;
  auto ms = best_replay_step_ms(3, [&] {
    return replay_step_ms(ctx.model, prompts.tokens, quality.continuations, ctx.cfg.decode.batch,
                          ctx.cfg.decode.max_new_tokens, /*fast_step=*/true, static_cast<int>(parts.size()) + 1,
                          [&](int k, DecodeStep* step) { step->skip_for_timing(k == 0 ? Part::None : parts[k - 1].second); });
  });
  m["fused_step_ms"] = ms[0];
  for (size_t i = 0; i < parts.size(); ++i) m["time_share_" + parts[i].first] = 1.0 - ms[i + 1] / ms[0];
}

}  // namespace

void FusedStage::finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) {
  const RunConfig& cfg = ctx.cfg;
  auto& m = r.metrics;
  Transformer& model = ctx.model;
  model->eval();
  const bool bf16 = cfg.train.precision == "bf16";
  time_shares(ctx, prompts, quality, r);

  // Measured cache bytes per token of each part (K, V or z, key-weighting state).
  std::map<std::string, int64_t> parts;
  model->make_cache(1).bytes_per_token(&parts);
  m["kv_bytes_per_token_k"] = static_cast<double>(parts["k"]);
  m["kv_bytes_per_token_v"] = static_cast<double>(parts["v"]);
  m["kv_bytes_per_token_state"] = static_cast<double>(parts["fused_state"]);

  // The baseline this run is compared with: the checkpoint a run with the
  // same config and variant = baseline trains (same data, seed, shape).
  const std::string base_dir = checkpoint_path(as_baseline(cfg));
  Transformer base{nullptr};
  {
    CheckpointDir dir(base_dir);
    bool ready = false;
    if (dir.exists()) {
      ModelConfig bc = model->cfg;
      bc.fused = FusedOptions{};
      base = make_model("baseline", bc);
      const CheckpointState state = dir.load(&base, nullptr, "baseline");
      check_checkpoint_code(cfg, base_dir, state.code);
      ready = state.complete;
    }
    if (ready) {
      base->to(ctx.device);
      base->eval();
    } else {
      base = Transformer(nullptr);
      if (cfg.output.verbosity > 0)
        std::fprintf(stderr, "fused: no complete baseline checkpoint at %s; kl_from_baseline = NaN "
                             "(run variant = baseline with this config first)\n", base_dir.c_str());
    }
  }

  BatchSampler val(ctx.data.val.tokens, cfg.train.batch, cfg.model.context, static_cast<uint64_t>(cfg.seed));
  MonitorAccumulator acc;
  double kl = 0;
  for (int64_t i = 0; i < cfg.train.eval_batches; ++i) {
    auto [x, y] = val.eval_batch(i, cfg.train.eval_batches);
    x = x.to(ctx.device);
    y = y.to(ctx.device);
    AutocastGuard autocast(bf16, ctx.device);
    accumulate_monitor(model, x, y, acc);
    if (base) {
      torch::NoGradGuard no_grad;
      kl += mean_kl(model->forward(x), base->forward(x));
    }
  }
  FusedMonitor mon = finish_monitor(model, acc);
  m["semantic_drift_score"] = mon.semantic_drift_score;
  m["semantic_drift_score_normalized"] = mon.semantic_drift_score_normalized;
  m["key_weight_stability"] = mon.key_weight_stability;
  m["value_distill_orthogonality"] = mon.value_distill_orthogonality;
  m["logits_gate_effectiveness"] = mon.logits_gate_effectiveness;
  m["gate_suppress_true_rate"] = mon.gate_suppress_true_rate;
  m["gate_true_nats"] = mon.gate_true_nats;
  m["gate_mean_factor"] = mon.gate_mean_factor;
  m["kl_from_baseline"] = base ? kl / static_cast<double>(cfg.train.eval_batches) : std::nan("");
}

std::unique_ptr<VariantStage> make_fused_stage(const RunConfig&) { return std::make_unique<FusedStage>(); }

}  // namespace zl
