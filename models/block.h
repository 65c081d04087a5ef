// One pre-norm transformer block: x + attn(ln1(x)), then + mlp(ln2(x)).
// The point between attention and the MLP is where sfcl's correction loop
// will sit (seed 000 §2.1).
#pragma once
#include <torch/torch.h>

#include "models/attention.h"

namespace zl {

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);  // [B,T,C] -> [B,T,C]
  torch::nn::Linear fc{nullptr}, proj{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Mlp);

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx, LayerCache* cache = nullptr);
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  Attention attn{nullptr};
  Mlp mlp{nullptr};
};
TORCH_MODULE(Block);

}  // namespace zl
