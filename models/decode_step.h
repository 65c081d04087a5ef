// The baseline transformer's one-token decode step, hand-written for the CPU
// (SPEC §7 "fast path beside a slow, obvious reference", STYLE §7): at batch
// 8 a LibTorch step is some 130 dispatched operators, each costing more
// than its arithmetic. Here the step is plain loops over the weights and the
// KV cache, the matrix products go straight to BLAS (models/blas.h), and the
// only ATen calls are the vectorised softmax and GELU kernels. It reads and
// writes the same KVCache as TransformerImpl::forward(tokens, cache), so the
// two paths can be mixed within one decode (prefill and re-feeds after a
// rollback go through the reference path) and are tested against each other.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "models/transformer.h"

namespace zl {

class DecodeStep {
 public:
  // Whether `model` can take this path: CPU float32, eval mode, and nothing
  // but the baseline's parameters (a variant's extra parts use the reference).
  static bool supports(const Transformer& model);

  explicit DecodeStep(Transformer model);

  // Appends one token per sequence (tokens[b] at position cache.lengths[b]),
  // advances the lengths, and returns the logits [B,V].
  torch::Tensor forward(const std::vector<int64_t>& tokens, KVCache& cache);

 private:
  struct Layer {
    const float *ln1_w, *ln1_b, *qkv, *proj, *ln2_w, *ln2_b, *fc, *mlp_proj;
  };
  Transformer model_;
  std::vector<Layer> layers_;            // matrices transposed ([in,out]) for models/blas.h
  std::vector<torch::Tensor> transposed_;  // owns those copies
  const float *wte_, *wte_t_, *wpe_, *lnf_w_, *lnf_b_;
  double eps_ = 1e-5;
};

}  // namespace zl
