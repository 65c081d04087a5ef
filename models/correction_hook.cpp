#include "models/correction_hook.h"

#include <algorithm>
#include <utility>

#include "models/blas.h"

namespace zl {
namespace {

// One fast-step call's correction: each layer's mode and, in Override, its
// coefficients as CPU float32 [B,T,C] (T = 1: every row; else the rows of
// each sequence), read by the team members.
struct CorrectionCall : CallPlan {
  struct Layer {
    CorrectionMode mode = CorrectionMode::Identity;
    torch::Tensor coefficients;
  };
  std::vector<Layer> layers;
};

// W [N,K] as models/blas.h's panels.
std::vector<float> panels_of(const torch::Tensor& weight) {
  auto w = weight.detach().to(torch::kCPU, torch::kFloat).contiguous();
  std::vector<float> p(panel_count(w.size(0)) * w.size(1) * kPanel);
  pack_panels(w.data_ptr<float>(), w.size(0), w.size(1), p.data());
  return p;
}

std::vector<float> values_of(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

}  // namespace

CorrectionHook::CorrectionHook(std::vector<Block> blocks) : blocks_(std::move(blocks)) {}

torch::Tensor CorrectionHook::before_mlp(const torch::Tensor& u, int64_t layer) const {
  BlockImpl& b = *blocks_.at(layer).ptr();  // its capture is written: the switches are the block's
  switch (b.correction_mode) {
    case CorrectionMode::Module: {
      auto c = b.correction->forward(u);  // [B,T,C]
      if (b.capture_correction) b.last_correction = c.detach();
      return u * c;
    }
    case CorrectionMode::Override: return u * b.correction_override.to(u.dtype());  // [B,T|1,C] broadcast
    case CorrectionMode::Identity: break;
  }
  return u;
}

std::unique_ptr<const CallPlan> CorrectionHook::plan_call(const StepRow* rows, int64_t M, int64_t batch) const {
  int64_t per_sequence = 1;  // rows of one sequence in this call (a prefill's prompt)
  for (int64_t m = 0; m < M; ++m) per_sequence = std::max(per_sequence, rows[m].offset + 1);
  auto plan = std::make_unique<CorrectionCall>();
  plan->layers.resize(blocks_.size());
  for (size_t l = 0; l < blocks_.size(); ++l) {
    const BlockImpl& b = *blocks_[l];
    auto& p = plan->layers[l];
    p.mode = b.correction_mode;
    if (p.mode != CorrectionMode::Override) continue;
    const torch::Tensor& c = b.correction_override;
    const int64_t C = b.correction->out->weight.size(0);
    TORCH_CHECK(c.defined() && c.dim() == 3 && c.size(0) == batch && c.size(2) == C, "DecodeStep: layer ", l,
                "'s correction coefficients are not [B,T,C] for this batch");
    TORCH_CHECK(c.size(1) == 1 || c.size(1) >= per_sequence, "DecodeStep: layer ", l,
                "'s correction coefficients cover ", c.size(1), " rows of a sequence, not ", per_sequence);
    p.coefficients = c.to(torch::kCPU, torch::kFloat).contiguous();
  }
  return plan;
}

void CorrectionHook::before_mlp_rows(float* u, int64_t M, int64_t C, const MlpRows& site) const {
  const auto& layer = static_cast<const CorrectionCall*>(site.plan)->layers[site.layer];
  if (layer.mode == CorrectionMode::Identity) return;
  if (layer.mode == CorrectionMode::Module)
    return apply_module(u, M, C, packed_.at(site.layer), *site.product);  // at: the model's own hook has none
  // Override: c given per sequence and row (oet's lookups).
  const int64_t T = layer.coefficients.size(1);
  const float* c = layer.coefficients.data_ptr<float>();
  for (int64_t m = 0; m < M; ++m) {
    const int64_t t = T == 1 ? 0 : site.rows[m].offset;  // in range: plan_call checked
    const float* cm = c + (site.rows[m].sequence * T + t) * C;
    for (int64_t i = 0; i < C; ++i) u[m * C + i] *= cm[i];
  }
}

void CorrectionHook::apply_module(float* u, int64_t M, int64_t C, const Packed& p, const RowsProduct& product) const {
  thread_local std::vector<float> hidden, z;  // per member: sequences of a batch run on several at once
  hidden.resize(M * p.hidden);
  z.resize(M * C);
  product(M, p.hidden, C, u, p.fc.data(), hidden.data(), /*gelu=*/true, p.fc_b.data());
  product(M, C, p.hidden, hidden.data(), p.out.data(), z.data(), /*gelu=*/false, p.out_b.data());
  scale_by_sigmoid(u, z.data(), M * C, p.scale);
}

std::shared_ptr<const AttentionHook> CorrectionHook::for_fast_step() const {
  torch::NoGradGuard no_grad;
  auto copy = std::make_shared<CorrectionHook>(blocks_);
  for (const auto& b : blocks_) {
    const auto& m = b->correction;
    Packed p;
    p.fc = panels_of(m->fc->weight);
    p.out = panels_of(m->out->weight);
    p.fc_b = values_of(m->fc->bias);
    p.out_b = values_of(m->out->bias);
    p.hidden = m->fc->weight.size(0);
    p.scale = static_cast<float>(m->scale);
    copy->packed_.push_back(std::move(p));
  }
  return copy;
}

std::vector<torch::Tensor> CorrectionHook::trained_parameters() const {
  std::vector<torch::Tensor> out;
  for (const auto& b : blocks_)
    for (const auto& p : b->correction->parameters()) out.push_back(p);
  return out;
}

}  // namespace zl
