#include "models/verifier.h"

#include <cmath>
#include <utility>
#include <vector>

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

// out[N·W, E] = conv1d(x[N, W, E] as channels E, kernel 3, padding 1) as one
// product Y[N·W, 3E] = x · T, whose columns are the three taps side by side
// (Y_k = x · W_kᵀ, W_k = weight[:, :, k]), T packed as panels
// (models/blas.h), then out[n, w] = bias + Y_0[w−1] + Y_1[w] + Y_2[w+1]
// inside each window (the convolution's zero padding adds nothing).
void conv3(const float* x, int64_t N, int64_t W, int64_t E, const float* taps, const float* bias, float* y,
           float* out) {
  const int64_t M = N * W, L = 3 * E;
  panels_product(M, L, E, x, taps, y, 0, panel_count(L));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t w = 0; w < W; ++w) {
      const int64_t r = n * W + w;
      float* o = out + r * E;
      const float* mid = y + r * L + E;
      for (int64_t c = 0; c < E; ++c) o[c] = bias[c] + mid[c];
      if (w > 0)
        for (int64_t c = 0; c < E; ++c) o[c] += y[(r - 1) * L + c];
      if (w + 1 < W)
        for (int64_t c = 0; c < E; ++c) o[c] += y[(r + 1) * L + 2 * E + c];
    }
}

// A Conv1d weight [E_out, E_in, 3] as conv3's right-hand side: the rows
// k·E + o of T's transpose are weight[o][:][k], packed as panels.
void taps_as_panels(const torch::Tensor& weight, std::vector<float>& taps) {
  const int64_t E = weight.size(0), I = weight.size(1), L = 3 * E;
  auto w = weight.contiguous();
  const float* src = w.data_ptr<float>();
  std::vector<float> rows(L * I);  // [3E, E_in]
  for (int64_t o = 0; o < E; ++o)
    for (int64_t i = 0; i < I; ++i)
      for (int64_t k = 0; k < 3; ++k) rows[(k * E + o) * I + i] = src[(o * I + i) * 3 + k];
  taps.resize(panel_count(L) * I * kPanel);
  pack_panels(rows.data(), L, I, taps.data());
}

}  // namespace

void VerifierImpl::refresh_taps() {
  // Rebuilt only when a weight changed: an optimiser step or a load bumps the
  // tensor's version counter.
  const torch::Tensor* weights[2] = {&conv1->weight, &conv2->weight};
  for (int c = 0; c < 2; ++c) {
    const std::pair<const void*, int64_t> key{weights[c]->data_ptr(), weights[c]->_version()};
    if (taps_[c].empty() || taps_key_[c] != key) {
      taps_as_panels(*weights[c], taps_[c]);
      taps_key_[c] = key;
    }
  }
}

torch::Tensor VerifierImpl::score(const torch::Tensor& tokens) {
  torch::NoGradGuard no_grad;
  const auto& emb = embed->weight;
  if (is_training() || !emb.device().is_cpu() || emb.scalar_type() != torch::kFloat) return confidence(tokens);
  refresh_taps();
  const int64_t N = tokens.size(0), W = tokens.size(1), E = cfg.width, M = N * W;
  const bool ready = tokens.scalar_type() == torch::kLong && tokens.is_contiguous();  // the hook's windows are
  auto tok = ready ? tokens : tokens.to(torch::kLong).contiguous();
  const int64_t* t = tok.data_ptr<int64_t>();
  scratch_.resize(3 * M * E + M * 3 * E);  // x | h | g | conv products, reused between checks
  float *x = scratch_.data(), *h = x + M * E, *g = h + M * E, *y = g + M * E;
  const float* e = emb.data_ptr<float>();
  for (int64_t r = 0; r < M; ++r) std::copy(e + t[r] * E, e + t[r] * E + E, x + r * E);
  conv3(x, N, W, E, taps_[0].data(), conv1->bias.data_ptr<float>(), y, h);
  gelu_inplace(h, M * E);
  conv3(h, N, W, E, taps_[1].data(), conv2->bias.data_ptr<float>(), y, g);
  gelu_inplace(g, M * E);
  auto result = torch::empty({N}, torch::TensorOptions().dtype(torch::kFloat));
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
