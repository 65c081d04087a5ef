// The sampling step: temperature, top-k and top-p (nucleus) filtering, and a
// draw. The draw uses uniforms from a CPU generator and the inverse CDF, so
// that a seed gives the same tokens on CPU and CUDA.
#pragma once
#include <torch/torch.h>

namespace zl {

struct SamplingOptions {
  double temperature = 1.0;  // 0 = greedy
  int64_t top_k = 0;         // 0 = off
  double top_p = 1.0;        // 1 = off
};

// logits [B,V] -> the filtered, renormalised distribution [B,V] (float32).
torch::Tensor sampling_probs(const torch::Tensor& logits, const SamplingOptions& opt);

// sampling_probs on CPU float rows, without ATen: logits [B,V] row-major
// into probs [B,V] (for loops that sample row by row: speculative decoding).
void sampling_probs_rows(const float* logits, int64_t B, int64_t V, const SamplingOptions& opt, float* probs);

// draw's rule for one distribution p[V] and one uniform u in [0, 1): the
// count of cumulative masses <= u, clamped to V − 1.
int64_t inverse_cdf(const float* p, int64_t V, float u);

// Draws one token per row of probs [B,V] -> [B] int64. Greedy when temperature is 0.
torch::Tensor sample_next(const torch::Tensor& logits, const SamplingOptions& opt, at::Generator& gen);

// Draws from given distributions probs [B,V] -> [B] int64.
torch::Tensor draw(const torch::Tensor& probs, at::Generator& gen);

// One draw from the distribution p[V] on the CPU: draw()'s uniform and
// inverse CDF (the count of cumulative masses <= u, clamped to V − 1).
int64_t draw_one(const float* p, int64_t V, at::Generator& gen);

at::Generator make_generator(uint64_t seed);

}  // namespace zl
