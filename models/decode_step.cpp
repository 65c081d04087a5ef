#include "models/decode_step.h"

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

DecodeStep::DecodeStep(Transformer model)
    : model_(std::move(model)),
      team_(std::make_unique<SpinTeam>(std::max(1, at::get_num_threads()))),
      aten_threads_(at::get_num_threads()) {
  TORCH_CHECK(supports(model_), "DecodeStep: the model is not a CPU float32 baseline transformer in eval mode");
  auto params = model_->named_parameters();
  // Weights are read transposed ([in,out]): copied once per decode, a few MB at most.
  auto t = [&](const std::string& name) {
    const auto& w = params[name];
    transposed_.push_back(torch::empty({w.size(1), w.size(0)}, w.options()));
    transpose(ptr(w), w.size(0), w.size(1), transposed_.back().data_ptr<float>());
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
  if (aten_threads_ > 1) at::set_num_threads(1);
}

DecodeStep::~DecodeStep() {
  if (aten_threads_ > 1) at::set_num_threads(aten_threads_);
}

void DecodeStep::split(int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  const int parts = static_cast<int>(std::min<int64_t>(team_->size(), n));
  team_->run(parts, [&](int i) { body(n * i / parts, n * (i + 1) / parts); });
}

void DecodeStep::product(int64_t M, int64_t N, int64_t K, const float* A, const float* Wt, float* C, bool gelu) {
  constexpr int64_t kRows = 16;  // rows of C summed at once: they stay in L1 while Wᵀ streams by
  auto rows = [&](int64_t m0, int64_t m1, int64_t begin, int64_t end) {
    for (int64_t m = m0; m < m1; m += kRows) {
      const int64_t n = std::min(kRows, m1 - m);
      rows_times_wt_columns(n, N, K, A + m * K, Wt, C + m * N, begin, end);
      if (gelu)
        for (int64_t r = m; r < m + n; ++r) gelu_inplace(C + r * N + begin, end - begin);
    }
  };
  if (M >= 2 * kRows) {
    // Many rows (a prefill): each member takes whole chunks of rows; two
    // threads splitting columns instead ran slower than one (measured at
    // 256 x 512 x 128: 378 µs against 284 on one thread, 140 split by rows).
    const int64_t chunks = (M + kRows - 1) / kRows;
    const int parts = static_cast<int>(std::min<int64_t>(team_->size(), chunks));
    team_->run(parts, [&](int i) {
      rows(std::min(M, chunks * i / parts * kRows), std::min(M, chunks * (i + 1) / parts * kRows), 0, N);
    });
    return;
  }
  // A decode step's few rows: split the columns, in parts of at least 64 cut
  // at multiples of 16 (8 x 1024 x 128: 10.1 µs on two threads, 18.1 on one).
  const int parts = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(team_->size(), N / 64)));
  team_->run(parts, [&](int i) {
    auto cut = [&](int k) { return k == parts ? N : N * k / parts / 16 * 16; };
    rows(0, M, cut(i), cut(i + 1));
  });
}

torch::Tensor DecodeStep::forward(const std::vector<int64_t>& tokens, KVCache& cache) {
  const int64_t B = tokens.size();
  TORCH_CHECK(cache.lengths.device().is_cpu() && cache.batch() == B, "DecodeStep: cache of another batch or device");
  const int64_t* len = cache.lengths.data_ptr<int64_t>();
  std::vector<Row> rows(B);
  for (int64_t b = 0; b < B; ++b) rows[b] = {b, tokens[b], len[b], true};
  auto logits = run_rows(rows, cache);
  int64_t* lengths = cache.lengths.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) ++lengths[b];
  return logits;
}

torch::Tensor DecodeStep::prefill(const std::vector<std::vector<int32_t>>& prompts, KVCache& cache) {
  const int64_t B = prompts.size();
  TORCH_CHECK(cache.lengths.device().is_cpu() && cache.batch() == B, "DecodeStep: cache of another batch or device");
  std::vector<Row> rows;
  for (int64_t b = 0; b < B; ++b) {
    TORCH_CHECK(!prompts[b].empty(), "DecodeStep::prefill: an empty prompt");
    const int64_t n = prompts[b].size();
    for (int64_t t = 0; t < n; ++t) rows.push_back({b, prompts[b][t], t, t + 1 == n});
  }
  auto logits = run_rows(rows, cache);
  int64_t* lengths = cache.lengths.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) lengths[b] = static_cast<int64_t>(prompts[b].size());
  return logits;
}

torch::Tensor DecodeStep::run_rows(const std::vector<Row>& rows, KVCache& cache) {
  const auto& cfg = model_->cfg;
  const int64_t M = rows.size(), C = cfg.dim, H = cfg.heads, D = cfg.head_dim(), F = cfg.mlp_ratio * C,
                V = cfg.vocab, cap = cache.capacity;
  int64_t span = 0, wanted = 0;
  for (const Row& r : rows) {
    TORCH_CHECK(r.position < std::min(cap, cfg.context), "KV cache overflow: ", r.position + 1, " tokens, capacity ",
                std::min(cap, cfg.context));
    span = std::max(span, r.position + 1);
    wanted += r.logits;
  }
  // Score rows padded to whole cache lines: team members write neighbouring
  // rows, and a line shared between two of them would bounce between cores.
  const int64_t stride = (span + 15) / 16 * 16;
  auto fopt = torch::TensorOptions().dtype(torch::kFloat);
  auto x_t = torch::empty({M, C}, fopt), h_t = torch::empty({M, C}, fopt), qkv_t = torch::empty({M, 3 * C}, fopt),
       y_t = torch::empty({M, C}, fopt), a_t = torch::empty({M, C}, fopt), f_t = torch::empty({M, F}, fopt),
       scores_t = torch::empty({M * H, stride}, fopt), last_t = torch::empty({wanted, C}, fopt),
       logits = torch::empty({wanted, V}, fopt);
  float *x = x_t.data_ptr<float>(), *h = h_t.data_ptr<float>(), *qkv = qkv_t.data_ptr<float>(),
        *y = y_t.data_ptr<float>(), *a = a_t.data_ptr<float>(), *f = f_t.data_ptr<float>(),
        *scores = scores_t.data_ptr<float>(), *last = last_t.data_ptr<float>();
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));

  for (int64_t m = 0; m < M; ++m) {  // token + position embedding
    const float *te = wte_ + rows[m].token * C, *pe = wpe_ + rows[m].position * C;
    for (int64_t i = 0; i < C; ++i) x[m * C + i] = te[i] + pe[i];
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    float* kc = cache.layers[l].k.data_ptr<float>();  // [B,H,cap,D]
    float* vc = cache.layers[l].v.data_ptr<float>();
    for (int64_t m = 0; m < M; ++m) layer_norm(x + m * C, L.ln1_w, L.ln1_b, h + m * C, C, eps_);
    product(M, 3 * C, C, h, L.qkv, qkv);  // [M,3C]: q | k | v, head-major inside each
    // Every row's key and value first: a prefill row reads those of the
    // earlier rows of its sequence.
    for (int64_t m = 0; m < M; ++m)
      for (int64_t hd = 0; hd < H; ++hd) {
        const float* q = qkv + m * 3 * C + hd * D;
        const int64_t slot = ((rows[m].sequence * H + hd) * cap + rows[m].position) * D;
        std::copy(q + C, q + C + D, kc + slot);
        std::copy(q + 2 * C, q + 2 * C + D, vc + slot);
      }
    // Per (row, head): score the visible slots (j <= position; stale slots
    // past it, left by a rollback, are not), softmax, weighted sum of values.
    split(M * H, [&](int64_t begin, int64_t end) {
      for (int64_t mh = begin; mh < end; ++mh) {
        const int64_t m = mh / H, hd = mh % H, n = rows[m].position + 1;
        const int64_t head = (rows[m].sequence * H + hd) * cap * D;
        float* s = scores + mh * stride;
        scaled_scores(qkv + m * 3 * C + hd * D, kc + head, n, D, scale, s);
        softmax_inplace(s, n);
        weighted_rows(s, vc + head, n, D, y + m * C + hd * D);
      }
    });
    product(M, C, C, y, L.proj, a);
    for (int64_t i = 0; i < M * C; ++i) x[i] += a[i];
    for (int64_t m = 0; m < M; ++m) layer_norm(x + m * C, L.ln2_w, L.ln2_b, h + m * C, C, eps_);
    product(M, F, C, h, L.fc, f, /*gelu=*/true);
    product(M, C, F, f, L.mlp_proj, a);
    for (int64_t i = 0; i < M * C; ++i) x[i] += a[i];
  }
  // The head only for the rows whose logits are wanted (tied to the embedding).
  int64_t w = 0;
  for (int64_t m = 0; m < M; ++m)
    if (rows[m].logits) layer_norm(x + m * C, lnf_w_, lnf_b_, last + (w++) * C, C, eps_);
  product(wanted, V, C, last, wte_t_, logits.data_ptr<float>());
  return logits;
}

}  // namespace zl
