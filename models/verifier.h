// The post-hoc verifier of variant sfvl (seed 002 §2.1): a small 1-D CNN that
// reads the last `window` tokens (the newest and the ones before it) and
// outputs a "semantic confidence" in [0,1]. The article gives its size only
// as a share of the main model (about 1/20); VerifierConfig::sized_for picks
// the width that meets that share, and the actual count is reported.
//
// Shape: tokens [N,W] -> embedding [N,W,E] -> conv(k=3) + GELU -> conv(k=3) +
// GELU over the window -> mean and max pool [N,2E] -> linear -> logit [N].
// Two convolutions of width 3 see all 5 positions from the newest one.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace zl {

struct VerifierConfig {
  int64_t vocab = 257;
  int64_t window = 5;  // W: tokens scored
  int64_t width = 32;  // E: embedding and channel width

  // The width whose parameter count comes closest to `target_params`.
  static VerifierConfig sized_for(int64_t vocab, int64_t window, int64_t target_params);
  int64_t parameter_count() const;
  // Forward multiply-adds ×2 per scored window (embedding lookups are free).
  double flops_per_check() const;
};

struct VerifierImpl : torch::nn::Module {
  explicit VerifierImpl(const VerifierConfig& cfg);

  // tokens [N,W] int64 -> confidence logits [N] (sigmoid gives the confidence).
  torch::Tensor forward(const torch::Tensor& tokens);
  torch::Tensor confidence(const torch::Tensor& tokens) { return torch::sigmoid(forward(tokens)); }
  // The same confidences for decoding (no gradient): on the CPU in eval mode
  // a hand-written pass (each convolution as one product by its three taps, the
  // decode step's GELU, no ATen call on the way), whose cost stays in
  // proportion to its FLOPs at batch 8; elsewhere confidence().
  torch::Tensor score(const torch::Tensor& tokens);

  VerifierConfig cfg;
  torch::nn::Embedding embed{nullptr};
  torch::nn::Conv1d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear out{nullptr};

 private:
  void refresh_taps();
  std::vector<float> taps_[2];                        // conv1, conv2 as packed taps (verifier.cpp)
  std::pair<const void*, int64_t> taps_key_[2] = {};  // the weights (storage, version) they came from
  std::vector<float> scratch_;
};
TORCH_MODULE(Verifier);

}  // namespace zl
