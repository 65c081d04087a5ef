// Batches of (input, target) windows from a token stream. The window offsets
// of step s are drawn from a generator seeded by (seed, s) alone, so the data
// order is a function of the seed: a resumed run sees the very batches an
// uninterrupted one would, and two variants with one seed see the same data
// (paired comparisons, docs/results_schema.md).
#pragma once
#include <torch/torch.h>

#include <utility>

namespace zl {

class BatchSampler {
 public:
  BatchSampler(torch::Tensor tokens, int64_t batch, int64_t context, uint64_t seed);

  // Training batch of step `step`: inputs and targets, each [B,T] int64.
  std::pair<torch::Tensor, torch::Tensor> train_batch(int64_t step) const;
  // The i-th of a fixed, evenly spaced set of validation windows (the same
  // for every seed, so validation losses are comparable across runs).
  std::pair<torch::Tensor, torch::Tensor> eval_batch(int64_t i, int64_t count) const;

  int64_t windows() const { return tokens_.numel() - context_ - 1; }

 private:
  std::pair<torch::Tensor, torch::Tensor> gather(const torch::Tensor& offsets) const;
  torch::Tensor tokens_;  // [N] int64
  int64_t batch_, context_;
  uint64_t seed_;
};

}  // namespace zl
