#include "models/block.h"

#include "models/attention_hook.h"
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
  return h + mlp->forward(before_mlp(ln2(h), ctx));
}

torch::Tensor BlockImpl::before_mlp(torch::Tensor u, const AttentionContext& ctx) const {
  if (!ctx.hooks) return u;
  for (const auto& hook : *ctx.hooks)
    if (hook->uses_mlp_input()) u = hook->before_mlp(u, ctx.layer);
  return u;
}

}  // namespace zl
