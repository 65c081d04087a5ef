// trainer → optimizer: the training loop's AdamW, its state, and one fused
// pass that clips and steps.
//
// LibTorch's AdamW and clip_grad_norm_ run about a dozen operators per
// parameter (norm, mul_, add_, addcmul_, sqrt, div, addcdiv_ ...), each a
// dispatch and a parallel region over a tensor of a few thousand floats. At
// the claims study's shape (0.94M parameters in 38 tensors, 2,048 tokens a
// step) that was about 5% of a step (docs/performance.md#training). clip_step
// does the same arithmetic in one pass per parameter over LibTorch's own
// AdamW state, so checkpoints, resumes and branches read and write what they
// always did.
#pragma once
#include <torch/torch.h>

#include <memory>

#include "models/transformer.h"
#include "sim/config.h"

namespace zl {

// AdamW with decoupled weight decay on matrices only (embeddings and linear
// weights); norms and biases are not decayed, as in GPT-2 and nanoGPT.
torch::optim::AdamW make_optimizer(Transformer& model, const TrainConfig& t);

// The optimizer's state of parameter `p` (nullptr: no step has touched it),
// whichever key type this LibTorch's optimizer uses.
torch::optim::OptimizerParamState* param_state(torch::optim::Optimizer& optim, const torch::Tensor& p);

// Sets the state of parameter `p` (the key as LibTorch's own step writes it).
void set_param_state(torch::optim::Optimizer& optim, const torch::Tensor& p,
                     std::unique_ptr<torch::optim::OptimizerParamState> state);

// One training step's update: scales the gradients to a total 2-norm of at
// most `max_norm` (no clipping when max_norm <= 0), then AdamW's step, both as
// LibTorch computes them (torch::nn::utils::clip_grad_norm_, then
// torch::optim::AdamW::step: decay, moments, bias correction, no amsgrad).
// Parameters without a gradient are left alone, as LibTorch's step leaves
// them. The gradients are read, not scaled in place. Returns the gradients'
// total norm before clipping. Parameters that are not contiguous float32 on
// the CPU go through LibTorch's own clip and step.
double clip_step(torch::optim::AdamW& optim, double max_norm);

// Drops every parameter's gradient (PyTorch's zero_grad(set_to_none=True)):
// the next backward writes fresh gradients instead of adding to zeros.
void drop_grads(torch::optim::Optimizer& optim);

}  // namespace zl
