// The in-layer correction module of variant sfcl (seed 000 §2.1, docs/articles.md):
// between attention and the MLP of every block, coefficients computed from
// the post-attention hidden state multiply the MLP input, on every token of
// every layer ("全路径强耦合": it waits for attention, then feeds the MLP).
//
//   c = s · sigmoid(W2 · gelu(W1 · u + b1) + b2),  u = ln2(h) the MLP input
//
// Reading chosen: the module sees the *normalised* post-attention state (the
// tensor it multiplies), so its input scale does not drift with depth.
// s = 2 by default ("centered"): a zeroed module gives c = 2·sigmoid(0) = 1,
// the identity, so "skipping the correction" (oet without an event, sfcl with
// the module off at inference) means exactly c = 1, and a trained module's
// deviation |c − 1| measures how much it corrects. s = 1 (the literal formula,
// sfcl.form = literal) halves the MLP input at zero and keeps c in (0,1).
#pragma once
#include <torch/torch.h>

#include "models/model_config.h"

namespace zl {

struct CorrectionImpl : torch::nn::Module {
  CorrectionImpl(int64_t dim, int64_t hidden, bool centered);

  // u [B,T,C] -> c [B,T,C], each coefficient in (0, s).
  torch::Tensor forward(const torch::Tensor& u);

  // Analytic forward FLOPs per token of one module (a multiply-add = 2),
  // including the multiplication of the MLP input by c.
  static double flops(int64_t dim, int64_t hidden);

  torch::nn::Linear fc{nullptr}, out{nullptr};
  double scale = 2.0;  // s
};
TORCH_MODULE(Correction);

// How a block uses its correction module in a forward call (decode-time
// switches; training always runs the module).
enum class CorrectionMode {
  Module,    // c from the module (sfcl)
  Override,  // c given per sequence and position (oet's table lookups), the module is not run
  Identity,  // c = 1: the multiplication and the module are skipped (oet without event, sfcl off)
};

}  // namespace zl
