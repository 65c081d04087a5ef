#include "models/gated_attention.h"

#include <cmath>
#include <utility>

#include "models/blas.h"
#include "models/split_linear.h"

namespace zl {

GatedAttentionHook::GatedAttentionHook(std::vector<Attention> layers, bool headwise)
    : layers_(std::move(layers)), headwise_(headwise) {}

torch::Tensor GatedAttentionHook::after_attention(const torch::Tensor& y, const torch::Tensor& x, int64_t layer) const {
  const auto& attn = layers_.at(layer);
  const int64_t B = y.size(0), T = y.size(1), C = y.size(2), H = attn->cfg.heads;
  auto z = split_linear(x, attn->gate_weight);  // [B,T,G]
  if (attn->gate_bias.defined()) z = z + attn->gate_bias;
  auto g = torch::sigmoid(z);
  return headwise_ ? (y.view({B, T, H, C / H}) * g.unsqueeze(-1)).view({B, T, C})  // [B,T,H,1] per head
                   : y * g;
}

std::shared_ptr<const AttentionHook> GatedAttentionHook::for_fast_step() const {
  auto copy = std::make_shared<GatedAttentionHook>(layers_, headwise_);
  for (const auto& attn : layers_) {
    torch::NoGradGuard no_grad;
    auto w = attn->gate_weight.detach().to(torch::kCPU, torch::kFloat).contiguous();  // [G,C]
    Packed p;
    p.panels.resize(panel_count(w.size(0)) * w.size(1) * kPanel);
    pack_panels(w.data_ptr<float>(), w.size(0), w.size(1), p.panels.data());
    if (attn->gate_bias.defined()) {
      auto b = attn->gate_bias.detach().to(torch::kCPU, torch::kFloat).contiguous();
      p.bias.assign(b.data_ptr<float>(), b.data_ptr<float>() + b.numel());
    }
    copy->packed_.push_back(std::move(p));
  }
  return copy;
}

void GatedAttentionHook::after_attention_rows(float* y, const float* x, int64_t M, int64_t C, int64_t layer) const {
  const Packed& p = packed_.at(layer);  // throws on the model's own hook: the step runs for_fast_step()'s copy
  const int64_t H = layers_[layer]->cfg.heads, G = headwise_ ? H : C, D = C / H;
  thread_local std::vector<float> z;  // per team member
  z.resize(M * G);
  panels_product(M, G, C, x, p.panels.data(), z.data(), 0, panel_count(G));  // z = x W_θᵀ [M,G]
  if (!p.bias.empty())
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < G; ++i) z[m * G + i] += p.bias[i];
  if (!headwise_) return scale_by_sigmoid(y, z.data(), M * C, 1.0f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t hd = 0; hd < H; ++hd) {
      const float g = 1.0f / (1.0f + std::exp(-z[m * H + hd]));
      for (float *o = y + m * C + hd * D, *e = o + D; o < e; ++o) *o *= g;
    }
}

}  // namespace zl
