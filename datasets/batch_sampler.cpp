#include "datasets/batch_sampler.h"

#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>
#include <string>

namespace zl {

BatchSampler::BatchSampler(torch::Tensor tokens, int64_t batch, int64_t context, uint64_t seed)
    : tokens_(tokens.to(torch::kLong)), batch_(batch), context_(context), seed_(seed) {
  if (tokens_.numel() <= context + 1)
    throw std::invalid_argument("token stream of " + std::to_string(tokens_.numel()) +
                                " tokens is too short for model.context " + std::to_string(context));
}

std::pair<torch::Tensor, torch::Tensor> BatchSampler::gather(const torch::Tensor& offsets) const {
  auto idx = offsets.unsqueeze(1) + torch::arange(context_ + 1, torch::kLong).unsqueeze(0);  // [B,T+1]
  auto win = tokens_.index({idx});                                                              // [B,T+1]
  return {win.narrow(1, 0, context_).contiguous(), win.narrow(1, 1, context_).contiguous()};
}

std::pair<torch::Tensor, torch::Tensor> BatchSampler::train_batch(int64_t step) const {
  // splitmix-style mixing of (seed, step) into one generator seed.
  uint64_t z = seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step) + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  auto gen = at::detail::createCPUGenerator(z ^ (z >> 31));
  auto offsets = torch::randint(windows(), {batch_}, gen, torch::kLong);
  return gather(offsets);
}

std::pair<torch::Tensor, torch::Tensor> BatchSampler::eval_batch(int64_t i, int64_t count) const {
  const int64_t total = batch_ * count;
  std::vector<int64_t> offsets(batch_);  // evenly spaced over the stream
  for (int64_t b = 0; b < batch_; ++b) offsets[b] = (i * batch_ + b) * windows() / total;
  return gather(torch::tensor(offsets, torch::kLong));
}

}  // namespace zl
