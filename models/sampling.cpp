#include "models/sampling.h"

#include <ATen/CPUGeneratorImpl.h>

#include "models/blas.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

namespace zl {

namespace {

bool cpu_float_rows(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == torch::kFloat && t.dim() == 2;
}

// A token and its probability, for ordering the head of a distribution.
struct Ranked {
  float p;
  int32_t index;
};

// The nucleus (Holtzman et al. 2020, §3.1): the tokens in order of
// probability, the more probable first and ties by index (a stable sort),
// until their mass reaches top_p; the token that crosses the line is kept.
// Only the head of the order matters, so it is sorted alone: the tokens at or
// above a threshold θ are a prefix of the order, and when that prefix holds a
// token past the line, the rest of the vocabulary is past it too. θ starts at
// the largest probability / 2^8 and falls by 2^8 until the prefix holds one
// (at last every token with mass: a full sort of those). A trained model's
// nucleus is a few dozen tokens, and the sort of V = 1,024 indices it
// replaces was most of a decode step at top_p 0.95 (issue 38: 13.6k tokens/s
// against 49.5k at top_p 1 for oet). The masses are summed in the order's
// order, as the sorted walk did, so the kept set and its mass are the same.
void nucleus(float* p, int64_t V, float top_p, std::vector<Ranked>& head) {
  float largest = 0, smallest = std::numeric_limits<float>::infinity();  // over the tokens with mass
  for (int64_t j = 0; j < V; ++j)
    if (p[j] > 0) {
      largest = std::max(largest, p[j]);
      smallest = std::min(smallest, p[j]);
    }
  float theta = largest / 256.0f;
  for (;;) {
    head.clear();
    for (int64_t j = 0; j < V; ++j)
      if (p[j] >= theta) head.push_back({p[j], static_cast<int32_t>(j)});
    std::sort(head.begin(), head.end(), [](const Ranked& a, const Ranked& c) {
      return a.p > c.p || (a.p == c.p && a.index < c.index);
    });
    double cum = 0;
    size_t keep = head.size();
    for (size_t i = 0; i < head.size(); ++i) {
      const float before = static_cast<float>(cum + head[i].p) - head[i].p;  // as cumsum - sp
      cum += head[i].p;
      if (before >= top_p) {
        keep = i;
        break;
      }
    }
    // Every token with mass is in the head: the rest (none, or zeros a
    // top-k cut left) adds nothing to any mass.
    const bool whole = theta <= smallest || static_cast<int64_t>(head.size()) == V;
    if (keep < head.size() || whole) {
      float mass = 0;
      for (size_t i = 0; i < keep; ++i) mass += head[i].p;
      std::fill(p, p + V, 0.0f);
      for (size_t i = 0; i < keep; ++i) p[head[i].index] = head[i].p / mass;
      return;
    }
    theta = std::max(theta / 256.0f, smallest);  // reaches every token with mass, so the loop ends
  }
}

}  // namespace

// The masses only grow, so the count is the first one above u; summed in
// double and compared in float, as ATen's CPU cumsum of floats.
int64_t inverse_cdf(const float* p, int64_t V, float u) {
  double cum = 0;
  int64_t j = 0;
  for (; j < V; ++j) {
    cum += p[j];
    if (static_cast<float>(cum) > u) break;
  }
  return std::min(j, V - 1);
}

// The tensor form's arithmetic in loops over the rows, the softmax by the
// decode step's kernel (models/blas.h; its exp is within 2e-7 of ATen's). A
// decode step at batch 8 takes under 0.2 ms, and the tensor form's dispatched
// operators were a measurable share of it; ATen's softmax would also wake
// LibTorch's threads between steps (models/spin_team.h).
void sampling_probs_rows(const float* in, int64_t B, int64_t V, const SamplingOptions& opt, float* probs) {
  const float t = static_cast<float>(std::max(opt.temperature, 1e-6));
  for (int64_t i = 0; i < B * V; ++i) probs[i] = in[i] / t;
  if (opt.top_k > 0 && opt.top_k < V) {
    std::vector<float> row(V);
    for (int64_t b = 0; b < B; ++b) {
      float* r = probs + b * V;
      row.assign(r, r + V);
      std::nth_element(row.begin(), row.begin() + (opt.top_k - 1), row.end(), std::greater<float>());
      const float kth = row[opt.top_k - 1];
      for (int64_t j = 0; j < V; ++j)
        if (r[j] < kth) r[j] = -std::numeric_limits<float>::infinity();
    }
  }
  for (int64_t b = 0; b < B; ++b) softmax_inplace(probs + b * V, V);
  if (opt.top_p >= 1.0) return;
  std::vector<Ranked> head;
  for (int64_t b = 0; b < B; ++b) nucleus(probs + b * V, V, static_cast<float>(opt.top_p), head);
}

torch::Tensor sampling_probs(const torch::Tensor& logits, const SamplingOptions& opt) {
  if (cpu_float_rows(logits)) {
    auto x = logits.contiguous();
    auto probs = torch::empty_like(x);
    sampling_probs_rows(x.data_ptr<float>(), x.size(0), x.size(1), opt, probs.data_ptr<float>());
    return probs;
  }
  auto scaled = logits.to(torch::kFloat) / std::max(opt.temperature, 1e-6);  // [B,V]
  const int64_t V = scaled.size(-1);
  if (opt.top_k > 0 && opt.top_k < V) {
    auto kth = std::get<0>(scaled.topk(opt.top_k, -1)).narrow(-1, opt.top_k - 1, 1);  // [B,1]
    scaled = scaled.masked_fill(scaled < kth, -std::numeric_limits<float>::infinity());
  }
  auto probs = torch::softmax(scaled, -1);
  if (opt.top_p < 1.0) {
    // Keep the smallest prefix of the sorted distribution whose mass reaches
    // top_p (the token that crosses the line is kept, as in Holtzman et al.).
    auto sorted = probs.sort(/*stable=*/true, -1, /*descending=*/true);  // ties by index, as nucleus()
    auto sp = std::get<0>(sorted), idx = std::get<1>(sorted);
    auto before = sp.cumsum(-1) - sp;  // mass strictly before each token
    auto drop_sorted = before >= opt.top_p;
    auto drop = torch::zeros_like(drop_sorted).scatter(-1, idx, drop_sorted);
    probs = probs.masked_fill(drop, 0.0);
    probs = probs / probs.sum(-1, true);
  }
  return probs;
}

torch::Tensor draw(const torch::Tensor& probs, at::Generator& gen) {
  const int64_t B = probs.size(0), V = probs.size(1);
  auto u = torch::rand({B, 1}, gen, torch::TensorOptions().dtype(torch::kFloat)).to(probs.device());
  if (cpu_float_rows(probs)) {  // the same draw in a loop over the rows
    auto p = probs.contiguous();
    auto out = torch::empty({B}, torch::kLong);
    for (int64_t b = 0; b < B; ++b)
      out.data_ptr<int64_t>()[b] = inverse_cdf(p.data_ptr<float>() + b * V, V, u.data_ptr<float>()[b]);
    return out;
  }
  // Inverse CDF: the first index whose cumulative mass exceeds u.
  auto cdf = probs.cumsum(-1);
  return (cdf <= u).sum(-1).clamp_max(V - 1);
}

namespace {

// sample_next on the CPU for float logits: greedy by the first maximum (as
// argmax), else sampling_probs_rows and draw's loop. A draw differs from the tensor
// form's only when u falls within the exps' 2e-7 of a cumulative boundary.
torch::Tensor sample_cpu(const torch::Tensor& logits, const SamplingOptions& opt, at::Generator& gen) {
  auto x = logits.contiguous();
  const int64_t B = x.size(0), V = x.size(1);
  if (opt.temperature > 0) return draw(sampling_probs(x, opt), gen);
  auto out = torch::empty({B}, torch::kLong);
  const float* in = x.data_ptr<float>();
  for (int64_t b = 0; b < B; ++b) out.data_ptr<int64_t>()[b] = std::max_element(in + b * V, in + (b + 1) * V) - (in + b * V);
  return out;
}

}  // namespace

torch::Tensor sample_next(const torch::Tensor& logits, const SamplingOptions& opt, at::Generator& gen) {
  if (logits.device().is_cpu() && logits.scalar_type() == torch::kFloat && logits.dim() == 2)
    return sample_cpu(logits, opt, gen);
  if (opt.temperature <= 0) return logits.argmax(-1);
  return draw(sampling_probs(logits, opt), gen);
}

int64_t draw_one(const float* p, int64_t V, at::Generator& gen) {
  return inverse_cdf(p, V, torch::rand({1, 1}, gen, torch::TensorOptions().dtype(torch::kFloat)).item<float>());
}

at::Generator make_generator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

}  // namespace zl
