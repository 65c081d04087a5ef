#include "models/block.h"

namespace zl {

MlpImpl::MlpImpl(const ModelConfig& c) {
  fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(c.dim, c.mlp_ratio * c.dim).bias(false)));
  proj = register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(c.mlp_ratio * c.dim, c.dim).bias(false)));
  drop = register_module("drop", torch::nn::Dropout(c.dropout));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) { return drop(proj(torch::gelu(fc(x)))); }

BlockImpl::BlockImpl(const ModelConfig& c) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  attn = register_module("attn", Attention(c));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  mlp = register_module("mlp", Mlp(c));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const AttentionContext& ctx, LayerCache* cache) {
  auto h = x + attn->forward(ln1(x), ctx, cache);
  return h + mlp->forward(ln2(h));
}

}  // namespace zl
