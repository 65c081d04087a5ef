#include "models/decode_step.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "models/blas.h"

namespace zl {
namespace {

const float* ptr(const torch::Tensor& t) { return t.data_ptr<float>(); }

// y[C] = LayerNorm(x[C]) with weight and bias (biased variance, as torch).
void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t C, double eps) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < C; ++i) mean += x[i];
  mean /= C;
  for (int64_t i = 0; i < C; ++i) var += (x[i] - mean) * (x[i] - mean);
  const float inv = static_cast<float>(1.0 / std::sqrt(var / C + eps)), m = static_cast<float>(mean);
  for (int64_t i = 0; i < C; ++i) y[i] = (x[i] - m) * inv * w[i] + b[i];
}

}  // namespace

bool DecodeStep::supports(const Transformer& model) {
  const auto& w = model->wte->weight;
  if (!w.device().is_cpu() || w.scalar_type() != torch::kFloat || model->is_training()) return false;
  if (model->cfg.fused.any() || model->cfg.correction_hidden > 0) return false;  // key weighting has no parameters of its own to betray it
  std::set<std::string> expected{"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"};
  for (int64_t l = 0; l < model->cfg.layers; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    for (const char* n : {"ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.proj.weight", "ln2.weight", "ln2.bias",
                          "mlp.fc.weight", "mlp.proj.weight"})
      expected.insert(p + n);
  }
  int64_t seen = 0;
  for (const auto& p : model->named_parameters()) {
    if (!expected.count(p.key()) || !p.value().is_contiguous()) return false;
    ++seen;
  }
  return seen == static_cast<int64_t>(expected.size());
}

DecodeStep::DecodeStep(Transformer model) : model_(std::move(model)) {
  TORCH_CHECK(supports(model_), "DecodeStep: the model is not a CPU float32 baseline transformer in eval mode");
  auto params = model_->named_parameters();
  // Weights are read transposed ([in,out]): copied once per decode, a few MB at most.
  auto t = [&](const std::string& name) {
    transposed_.push_back(params[name].detach().t().contiguous());
    return ptr(transposed_.back());
  };
  wte_t_ = t("wte.weight");
  wte_ = ptr(params["wte.weight"]);
  wpe_ = ptr(params["wpe.weight"]);
  lnf_w_ = ptr(params["ln_f.weight"]);
  lnf_b_ = ptr(params["ln_f.bias"]);
  eps_ = model_->ln_f->options.eps();
  for (int64_t l = 0; l < model_->cfg.layers; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    layers_.push_back({ptr(params[p + "ln1.weight"]), ptr(params[p + "ln1.bias"]), t(p + "attn.qkv.weight"),
                       t(p + "attn.proj.weight"), ptr(params[p + "ln2.weight"]), ptr(params[p + "ln2.bias"]),
                       t(p + "mlp.fc.weight"), t(p + "mlp.proj.weight")});
  }
}

torch::Tensor DecodeStep::forward(const std::vector<int64_t>& tokens, KVCache& cache) {
  const auto& cfg = model_->cfg;
  const int64_t B = tokens.size(), C = cfg.dim, H = cfg.heads, D = cfg.head_dim(), F = cfg.mlp_ratio * C,
                V = cfg.vocab, cap = cache.capacity;
  TORCH_CHECK(cache.lengths.device().is_cpu() && cache.batch() == B, "DecodeStep: cache of another batch or device");
  int64_t* len = cache.lengths.data_ptr<int64_t>();
  int64_t span = 0;
  for (int64_t b = 0; b < B; ++b) {
    TORCH_CHECK(len[b] < std::min(cap, cfg.context), "KV cache overflow: ", len[b] + 1, " tokens, capacity ",
                std::min(cap, cfg.context));
    span = std::max(span, len[b] + 1);
  }
  auto fopt = torch::TensorOptions().dtype(torch::kFloat);
  auto x_t = torch::empty({B, C}, fopt), h_t = torch::empty({B, C}, fopt), qkv_t = torch::empty({B, 3 * C}, fopt),
       y_t = torch::empty({B, C}, fopt), a_t = torch::empty({B, C}, fopt), f_t = torch::empty({B, F}, fopt),
       scores_t = torch::empty({B * H, span}, fopt), probs_t = torch::empty({B * H, span}, fopt),
       logits = torch::empty({B, V}, fopt);
  float *x = x_t.data_ptr<float>(), *h = h_t.data_ptr<float>(), *qkv = qkv_t.data_ptr<float>(),
        *y = y_t.data_ptr<float>(), *a = a_t.data_ptr<float>(), *f = f_t.data_ptr<float>(),
        *scores = scores_t.data_ptr<float>(), *probs = probs_t.data_ptr<float>();
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const float neg_inf = -std::numeric_limits<float>::infinity();

  for (int64_t b = 0; b < B; ++b) {  // token + position embedding
    const float *te = wte_ + tokens[b] * C, *pe = wpe_ + len[b] * C;
    for (int64_t i = 0; i < C; ++i) x[b * C + i] = te[i] + pe[i];
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    float* kc = cache.layers[l].k.data_ptr<float>();  // [B,H,cap,D]
    float* vc = cache.layers[l].v.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b) layer_norm(x + b * C, L.ln1_w, L.ln1_b, h + b * C, C, eps_);
    rows_times_wt(B, 3 * C, C, h, L.qkv, qkv);  // [B,3C]: q | k | v, head-major inside each
    // Write the new keys and values, then score every visible slot: slot j
    // is visible to sequence b iff j <= len[b] (stale slots past it are not).
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / H, hd = bh % H, pos = len[b];
        const float* q = qkv + b * 3 * C + hd * D;
        float* kb = kc + (b * H + hd) * cap * D;
        float* vb = vc + (b * H + hd) * cap * D;
        std::copy(q + C, q + C + D, kb + pos * D);
        std::copy(q + 2 * C, q + 2 * C + D, vb + pos * D);
        float* s = scores + bh * span;
        for (int64_t j = 0; j <= pos; ++j) s[j] = dot(q, kb + j * D, D) * scale;
        for (int64_t j = pos + 1; j < span; ++j) s[j] = neg_inf;
      }
    });
    at::softmax_out(probs_t, scores_t, -1);  // one vectorised kernel over every (b, head)
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / H, hd = bh % H, pos = len[b];
        const float* vb = vc + (b * H + hd) * cap * D;
        const float* p = probs + bh * span;
        float* out = y + b * C + hd * D;
        std::fill(out, out + D, 0.0f);
        for (int64_t j = 0; j <= pos; ++j) axpy(p[j], vb + j * D, out, D);
      }
    });
    rows_times_wt(B, C, C, y, L.proj, a);
    for (int64_t i = 0; i < B * C; ++i) x[i] += a[i];
    for (int64_t b = 0; b < B; ++b) layer_norm(x + b * C, L.ln2_w, L.ln2_b, h + b * C, C, eps_);
    rows_times_wt(B, F, C, h, L.fc, f);
    at::gelu_(f_t);  // exact (erf) GELU, as torch::gelu: one vectorised kernel
    rows_times_wt(B, C, F, f, L.mlp_proj, a);
    for (int64_t i = 0; i < B * C; ++i) x[i] += a[i];
  }
  for (int64_t b = 0; b < B; ++b) layer_norm(x + b * C, lnf_w_, lnf_b_, h + b * C, C, eps_);
  rows_times_wt(B, V, C, h, wte_t_, logits.data_ptr<float>());  // head tied to the embedding
  for (int64_t b = 0; b < B; ++b) ++len[b];
  return logits;
}

}  // namespace zl
