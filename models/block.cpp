#include "models/block.h"

#include "models/split_linear.h"

namespace zl {

MlpImpl::MlpImpl(const ModelConfig& c) {
  fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(c.dim, c.mlp_ratio * c.dim).bias(false)));
  proj = register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(c.mlp_ratio * c.dim, c.dim).bias(false)));
  drop = register_module("drop", torch::nn::Dropout(c.dropout));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return drop(split_linear(torch::gelu(split_linear(x, fc->weight)), proj->weight));
}

BlockImpl::BlockImpl(const ModelConfig& c) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  attn = register_module("attn", Attention(c));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  mlp = register_module("mlp", Mlp(c));
  if (c.correction_hidden > 0)
    correction = register_module("correction", Correction(c.dim, c.correction_hidden, c.correction_centered));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const AttentionContext& ctx, LayerCache* cache) {
  auto a = ln1(x);  // [B,T,C] attention's input
  if (capture_attn_input) last_attn_input = a.detach();
  auto h = x + attn->forward(a, ctx, cache);
  if (!correction) return h + mlp->forward(ln2(h));  // the baseline path
  auto u = ln2(h);                                    // [B,T,C] the MLP input
  switch (correction_mode) {
    case CorrectionMode::Module: {
      auto c = correction->forward(u);  // [B,T,C]
      if (capture_correction) last_correction = c.detach();
      u = u * c;
      break;
    }
    case CorrectionMode::Override: u = u * correction_override.to(u.dtype()); break;  // [B,T|1,C] broadcast
    case CorrectionMode::Identity: break;
  }
  return h + mlp->forward(u);
}

}  // namespace zl
