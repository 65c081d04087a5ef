#include "models/verifier.h"

#include <cmath>

#include "models/blas.h"

namespace zl {

int64_t VerifierConfig::parameter_count() const {
  const int64_t E = width;
  return vocab * E + 2 * (3 * E * E + E) + (2 * E + 1);  // embedding, two convs, head
}

double VerifierConfig::flops_per_check() const {
  const double E = static_cast<double>(width);
  return 2.0 * (2 * window * 3 * E * E + 2 * E);
}

VerifierConfig VerifierConfig::sized_for(int64_t vocab, int64_t window, int64_t target_params) {
  VerifierConfig best{vocab, window, 4};
  for (int64_t e = 4; e <= 1024; ++e) {
    VerifierConfig c{vocab, window, e};
    if (std::llabs(c.parameter_count() - target_params) < std::llabs(best.parameter_count() - target_params)) best = c;
  }
  return best;
}

VerifierImpl::VerifierImpl(const VerifierConfig& c) : cfg(c) {
  const int64_t E = c.width;
  embed = register_module("embed", torch::nn::Embedding(c.vocab, E));
  conv1 = register_module("conv1", torch::nn::Conv1d(torch::nn::Conv1dOptions(E, E, 3).padding(1)));
  conv2 = register_module("conv2", torch::nn::Conv1d(torch::nn::Conv1dOptions(E, E, 3).padding(1)));
  out = register_module("out", torch::nn::Linear(2 * E, 1));
}

torch::Tensor VerifierImpl::forward(const torch::Tensor& tokens) {
  auto x = embed(tokens).transpose(1, 2);                   // [N,E,W]
  x = torch::gelu(conv1(x));                                // [N,E,W]
  x = torch::gelu(conv2(x));                                // [N,E,W]
  auto pooled = torch::cat({x.mean(-1), std::get<0>(x.max(-1))}, -1);  // [N,2E]
  return out(pooled).squeeze(-1);                           // [N]
}

namespace {

// out[N·W, E] = conv1d(x[N, W, E] as channels E, kernel 3, padding 1) by
// im2col: column (i·3 + k) of row (n, w) holds x[n][w + k − 1][i], the order
// of a Conv1d weight [E_out, E_in, 3] flattened to [E_out, 3·E_in].
void conv3(const float* x, int64_t N, int64_t W, int64_t E, const float* weight, const float* bias, float* cols,
           float* out) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t w = 0; w < W; ++w) {
      float* row = cols + (n * W + w) * 3 * E;
      for (int64_t i = 0; i < E; ++i)
        for (int64_t k = 0; k < 3; ++k) {
          const int64_t at = w + k - 1;
          row[i * 3 + k] = (at < 0 || at >= W) ? 0.0f : x[(n * W + at) * E + i];
        }
    }
  // One dot product per (row, output channel) against the weight's own rows:
  // no transposed copy of the weight per call.
  for (int64_t r = 0; r < N * W; ++r)
    for (int64_t o = 0; o < E; ++o) out[r * E + o] = dot(cols + r * 3 * E, weight + o * 3 * E, 3 * E) + bias[o];
}

}  // namespace

torch::Tensor VerifierImpl::score(const torch::Tensor& tokens) {
  torch::NoGradGuard no_grad;
  const auto& emb = embed->weight;
  if (is_training() || !emb.device().is_cpu() || emb.scalar_type() != torch::kFloat) return confidence(tokens);
  const int64_t N = tokens.size(0), W = tokens.size(1), E = cfg.width;
  auto tok = tokens.to(torch::kLong).contiguous();
  const int64_t* t = tok.data_ptr<int64_t>();
  auto opts = torch::TensorOptions().dtype(torch::kFloat);
  auto x_t = torch::empty({N * W, E}, opts), cols_t = torch::empty({N * W, 3 * E}, opts),
       h_t = torch::empty({N * W, E}, opts), g_t = torch::empty({N * W, E}, opts);
  float *x = x_t.data_ptr<float>(), *cols = cols_t.data_ptr<float>(), *h = h_t.data_ptr<float>(),
        *g = g_t.data_ptr<float>();
  const float* e = emb.data_ptr<float>();
  for (int64_t r = 0; r < N * W; ++r) std::copy(e + t[r] * E, e + t[r] * E + E, x + r * E);
  conv3(x, N, W, E, conv1->weight.data_ptr<float>(), conv1->bias.data_ptr<float>(), cols, h);
  at::gelu_(h_t);
  conv3(h, N, W, E, conv2->weight.data_ptr<float>(), conv2->bias.data_ptr<float>(), cols, g);
  at::gelu_(g_t);
  auto result = torch::empty({N}, opts);
  float* res = result.data_ptr<float>();
  const float *ow = out->weight.data_ptr<float>(), ob = out->bias.data_ptr<float>()[0];
  for (int64_t n = 0; n < N; ++n) {
    double logit = ob;
    for (int64_t o = 0; o < E; ++o) {  // mean and max over the window, then the head
      float sum = 0, mx = -INFINITY;
      for (int64_t w = 0; w < W; ++w) {
        const float v = g[(n * W + w) * E + o];
        sum += v;
        mx = std::max(mx, v);
      }
      logit += ow[o] * (sum / W) + ow[E + o] * mx;
    }
    res[n] = static_cast<float>(1.0 / (1.0 + std::exp(-logit)));
  }
  return result;
}

}  // namespace zl
