// One pre-norm transformer block: x + attn(ln1(x)), then + mlp(ln2(x)).
// The model's before-MLP hooks (models/attention_hook.h, point c) transform
// the MLP input ln2(x) between the two: sfcl's correction loop sits there
// (seed 000 §2.1), as a hook (models/correction_hook.h).
#pragma once
#include <torch/torch.h>

#include "models/attention.h"
#include "models/correction.h"

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
  // The MLP input u [B,T,C] through ctx's before-MLP hooks, in the order installed.
  torch::Tensor before_mlp(torch::Tensor u, const AttentionContext& ctx) const;
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  Attention attn{nullptr};
  Mlp mlp{nullptr};

  // sfcl / oet only (cfg.correction_hidden > 0): c multiplies the MLP input
  // (models/correction.h), applied by the model's CorrectionHook
  // (models/correction_hook.h), which reads the module and the fields below
  // from here. Without a module the block is the baseline's, untouched. The
  // fields below are decode-time switches, set between forward calls by the
  // variant's stage (TransformerImpl::set_correction_*).
  Correction correction{nullptr};
  CorrectionMode correction_mode = CorrectionMode::Module;
  torch::Tensor correction_override;  // Override mode: [B,T,C] or [B,1,C] coefficients
  bool capture_correction = false;    // keep the module's c of the last call in last_correction
  torch::Tensor last_correction;      // [B,T,C]
  // latent_kv svd (models/latent_kv.h): keep attention's input ln1(x) of the
  // last call, the calibration data of Palu's whitening.
  bool capture_attn_input = false;
  torch::Tensor last_attn_input;      // [B,T,C]
};
TORCH_MODULE(Block);

}  // namespace zl
