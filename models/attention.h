// Causal multi-head self-attention, the seam where key weighting and value
// distillation (variant fused) will plug in.
#pragma once
#include <torch/torch.h>

#include "models/kv_cache.h"
#include "models/model_config.h"

namespace zl {

struct AttentionImpl : torch::nn::Module {
  explicit AttentionImpl(const ModelConfig& cfg);

  // x [B,T,C] -> [B,T,C]. Without a cache: full causal attention over x
  // (training). With one: x holds the new tokens, whose keys and values are
  // written at ctx.positions before attending over the first ctx.span slots.
  torch::Tensor forward(const torch::Tensor& x, const AttentionContext& ctx, LayerCache* cache = nullptr);

  ModelConfig cfg;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Attention);

}  // namespace zl
