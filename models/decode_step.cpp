#include "models/decode_step.h"

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "models/blas.h"

namespace zl {
namespace {

const float* ptr(const torch::Tensor& t) { return t.data_ptr<float>(); }

// Parts per team member in a split product or attention: members claim them
// one at a time (models/spin_team.h), so more parts than members let a member
// on a faster core take more.
constexpr int64_t kPartsPerMember = 4;

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

bool DecodeStep::supports(const Transformer& model, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  const auto& w = model->wte->weight;
  if (!w.device().is_cpu()) return no("the model is not on the CPU");
  if (w.scalar_type() != torch::kFloat) return no("the model is not float32");
  if (model->is_training()) return no("the model is in training mode");
  // latent_kv's cache holds the joint latent, not K and V (models/latent_kv.h);
  // the step reads K and V. Checked first: an svd model's parameters have the
  // baseline's names.
  if (model->cfg.latent_rank > 0)
    return no("latent_kv's latent cache (keys and values up-projected from c) is not on the fast step");
  const FusedOptions& f = model->cfg.fused;
  // Score hooks (alibi's among them, models/attention_hook.h) run in the
  // plain attention below, not in fused's.
  std::string hook;
  if (f.any() && any_score_hook(model->attention_hooks(), &hook))
    return no(hook + "'s score hook together with fused's parts is not on the fast step");
  std::set<std::string> expected{"wte.weight", "ln_f.weight", "ln_f.bias"};
  if (!model->cfg.alibi) expected.insert("wpe.weight");
  if (f.gate)
    for (const char* n : {"gate.fc1.weight", "gate.fc1.bias", "gate.fc2.weight", "gate.fc2.bias"}) expected.insert(n);
  for (int64_t l = 0; l < model->cfg.layers; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    for (const char* n : {"ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.proj.weight", "ln2.weight", "ln2.bias",
                          "mlp.fc.weight", "mlp.proj.weight"})
      expected.insert(p + n);
    if (f.value_rank > 0) expected.insert(p + "attn.value_proj");
    if (model->cfg.attn_gate) {
      expected.insert(p + "attn.gate_weight");
      if (model->cfg.attn_gate_bias) expected.insert(p + "attn.gate_bias");
    }
  }
  // A registered network's own parameters (models/factory.h), and sfcl's
  // correction modules (models/correction_hook.h), are their hooks' to read,
  // packed by their for_fast_step(): known when a hook names them.
  auto read_by_a_hook = [&](const torch::Tensor& p) {
    for (const auto& hook : model->attention_hooks())
      for (const auto& t : hook->trained_parameters())
        if (t.is_same(p)) return true;
    return false;
  };
  int64_t seen = 0;
  for (const auto& p : model->named_parameters()) {
    const bool own = expected.count(p.key()) > 0;
    if (!own && !read_by_a_hook(p.value()))
      return no("its parameter " + p.key() + " is not one the fast step knows");
    if (!p.value().is_contiguous()) return no("its parameter " + p.key() + " is not contiguous");
    seen += own ? 1 : 0;
  }
  if (seen != static_cast<int64_t>(expected.size())) return no("it lacks parameters the fast step reads");
  return true;
}

DecodeStep::DecodeStep(Transformer model)
    : model_(std::move(model)),
      team_(std::make_shared<SpinTeam>(std::max(1, at::get_num_threads()))),
      aten_threads_(at::get_num_threads()) {
  pack_weights();
  if (aten_threads_ > 1) at::set_num_threads(1);
}

DecodeStep::DecodeStep(Transformer model, const DecodeStep& with) : model_(std::move(model)), team_(with.team_) {
  pack_weights();
}

void DecodeStep::pack_weights() {
  std::string why;
  TORCH_CHECK(supports(model_, &why), "DecodeStep: the model cannot take the fast step: ", why);
  auto params = model_->named_parameters();
  // Weights are read as panels (models/blas.h): packed once per decode, a few MB at most.
  auto t = [&](const std::string& name) {
    const auto& w = params[name];
    packed_.push_back(torch::empty({panel_count(w.size(0)) * w.size(1) * kPanel}, w.options()));
    pack_panels(ptr(w), w.size(0), w.size(1), packed_.back().data_ptr<float>());
    return ptr(packed_.back());
  };
  wte_panels_ = t("wte.weight");
  wte_ = ptr(params["wte.weight"]);
  wpe_ = model_->cfg.alibi ? nullptr : ptr(params["wpe.weight"]);
  for (const auto& hook : model_->attention_hooks()) {
    auto packed = hook->for_fast_step();
    hooks_.push_back(packed ? packed : hook);  // kept alive here; run through the raw pointers below
  }
  for (const auto& hook : hooks_) {
    if (hook->uses_scores()) score_hooks_.push_back(hook.get());
    if (hook->uses_output()) output_hooks_.push_back(hook.get());
    if (hook->uses_mlp_input()) mlp_hooks_.push_back(hook.get());
  }
  lnf_w_ = ptr(params["ln_f.weight"]);
  lnf_b_ = ptr(params["ln_f.bias"]);
  eps_ = model_->ln_f->options.eps();
  fused_ = model_->cfg.fused;
  value_width_ = fused_.value_rank > 0 ? fused_.value_rank : model_->cfg.head_dim();
  if (fused_.key_weighting_on() && fused_.importance == FusedOptions::Importance::GradNorm) {
    // Wᵀ p, the head's gradient: a product with Wᵀ [C,V], packed like a weight.
    auto wt = params["wte.weight"].t().contiguous();
    packed_.push_back(torch::empty({panel_count(wt.size(0)) * wt.size(1) * kPanel}, wt.options()));
    pack_panels(ptr(wt), wt.size(0), wt.size(1), packed_.back().data_ptr<float>());
    wte_t_panels_ = ptr(packed_.back());
  }
  if (fused_.gate) {
    gate_fc1_ = t("gate.fc1.weight");
    gate_fc1_b_ = ptr(params["gate.fc1.bias"]);
    gate_fc2_ = t("gate.fc2.weight");
    gate_fc2_b_ = ptr(params["gate.fc2.bias"]);
    gate_hidden_ = fused_.gate_hidden;
  }
  for (int64_t l = 0; l < model_->cfg.layers; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    Layer L{ptr(params[p + "ln1.weight"]), ptr(params[p + "ln1.bias"]), t(p + "attn.qkv.weight"),
            t(p + "attn.proj.weight"), ptr(params[p + "ln2.weight"]), ptr(params[p + "ln2.bias"]),
            t(p + "mlp.fc.weight"), t(p + "mlp.proj.weight"), (*model_->blocks)[l]->as<Block>()};
    if (fused_.value_rank > 0) {  // P as the reference computes it (the hard form's QR once, here)
      packed_.push_back(L.block->attn->value_projection().detach().contiguous());
      L.value_p = ptr(packed_.back());
    }
    layers_.push_back(L);
  }
}

DecodeStep::~DecodeStep() {
  if (aten_threads_ > 1) at::set_num_threads(aten_threads_);
}

struct DecodeStep::HookProduct : RowsProduct {
  HookProduct(DecodeStep& step, bool alone) : step(step), alone(alone) {}
  void operator()(int64_t M, int64_t N, int64_t K, const float* A, const float* P, float* C, bool gelu,
                  const float* bias) const override {
    step.product(M, N, K, A, P, C, alone, gelu, bias);
  }
  DecodeStep& step;
  bool alone;
};

void DecodeStep::split(int64_t n, bool alone, const std::function<void(int64_t, int64_t)>& body) {
  if (alone) return body(0, n);
  // A few parts per member, so that the team balances a slower core.
  const int parts = static_cast<int>(std::min<int64_t>(kPartsPerMember * team_->size(), n));
  team_->run(parts, [&](int i) { body(n * i / parts, n * (i + 1) / parts); });
}

void DecodeStep::product(int64_t M, int64_t N, int64_t K, const float* A, const float* P, float* C, bool alone,
                         bool gelu, const float* bias) {
  auto block = [&](int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
    panels_product(m1 - m0, N, K, A + m0 * K, P, C + m0 * N, p0, p1);
    if (!gelu && !bias) return;
    const int64_t begin = p0 * kPanel, end = std::min(N, p1 * kPanel);
    for (int64_t r = m0; r < m1; ++r) {
      float* c = C + r * N;
      if (bias)
        for (int64_t i = begin; i < end; ++i) c[i] += bias[i];
      if (gelu) gelu_inplace(c + begin, end - begin);
    }
  };
  const int64_t panels = panel_count(N);
  if (alone) return block(0, M, 0, panels);
  constexpr int64_t kRows = 16;
  if (M >= 2 * kRows) {
    // Many rows (a prefill): each member takes whole chunks of rows; two
    // threads splitting columns instead ran slower than one (measured at
    // 256 x 512 x 128: 378 µs against 284 on one thread, 140 split by rows).
    const int64_t chunks = (M + kRows - 1) / kRows;
    team_->run(static_cast<int>(chunks), [&](int i) { block(i * kRows, std::min(M, (i + 1) * kRows), 0, panels); });
    return;
  }
  // A decode step's few rows: split the panels, at least two per part, a few
  // parts per member (see split()).
  const int parts =
      static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kPartsPerMember * team_->size(), panels / 2)));
  team_->run(parts, [&](int i) { block(0, M, panels * i / parts, panels * (i + 1) / parts); });
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
  advance_held(cache, std::vector<int64_t>(B, 1));
  return logits;
}

torch::Tensor DecodeStep::prefill(const std::vector<std::vector<int32_t>>& prompts, KVCache& cache) {
  const int64_t B = prompts.size();
  TORCH_CHECK(cache.lengths.device().is_cpu() && cache.batch() == B, "DecodeStep: cache of another batch or device");
  std::vector<Row> rows;
  for (int64_t b = 0; b < B; ++b) {
    TORCH_CHECK(!prompts[b].empty(), "DecodeStep::prefill: an empty prompt");
    const int64_t n = prompts[b].size();
    for (int64_t t = 0; t < n; ++t) rows.push_back({b, prompts[b][t], t, t + 1 == n, t});
  }
  auto logits = run_rows(rows, cache);
  int64_t* lengths = cache.lengths.data_ptr<int64_t>();
  std::vector<int64_t> fed(B);
  for (int64_t b = 0; b < B; ++b) lengths[b] = fed[b] = static_cast<int64_t>(prompts[b].size());
  advance_held(cache, fed);
  return logits;
}

torch::Tensor DecodeStep::extend(const std::vector<std::vector<int64_t>>& tokens, KVCache& cache, bool logits) {
  const int64_t B = tokens.size(), T = B > 0 ? tokens[0].size() : 0;
  TORCH_CHECK(cache.lengths.device().is_cpu() && cache.batch() == B, "DecodeStep: cache of another batch or device");
  TORCH_CHECK(T > 0, "DecodeStep::extend: no tokens");
  const int64_t* len = cache.lengths.data_ptr<int64_t>();
  std::vector<Row> rows;
  for (int64_t b = 0; b < B; ++b) {
    TORCH_CHECK(static_cast<int64_t>(tokens[b].size()) == T, "DecodeStep::extend: sequences of different lengths");
    for (int64_t t = 0; t < T; ++t) rows.push_back({b, tokens[b][t], len[b] + t, logits, t});
  }
  auto out = run_rows(rows, cache);
  int64_t* lengths = cache.lengths.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) lengths[b] += T;
  advance_held(cache, std::vector<int64_t>(B, T));
  return logits ? out.view({B, T, model_->cfg.vocab}) : torch::Tensor();
}

torch::Tensor DecodeStep::feed(const std::vector<Feed>& feeds, KVCache& cache) {
  const int64_t B = cache.batch();
  TORCH_CHECK(cache.lengths.device().is_cpu(), "DecodeStep: cache of another device");
  const int64_t* len = cache.lengths.data_ptr<int64_t>();
  std::vector<Row> rows;
  std::vector<int64_t> fed(B, 0);
  for (size_t f = 0; f < feeds.size(); ++f) {
    const Feed& x = feeds[f];
    TORCH_CHECK(x.sequence >= 0 && x.sequence < B, "DecodeStep::feed: sequence ", x.sequence, " of a batch of ", B);
    TORCH_CHECK(f == 0 || feeds[f - 1].sequence < x.sequence, "DecodeStep::feed: feeds out of sequence order");
    TORCH_CHECK(!x.tokens.empty(), "DecodeStep::feed: a feed without tokens");
    const int64_t n = x.tokens.size();
    for (int64_t t = 0; t < n; ++t) rows.push_back({x.sequence, x.tokens[t], len[x.sequence] + t, x.logits && t + 1 == n, t});
    fed[x.sequence] = n;
  }
  auto logits = run_rows(rows, cache);
  int64_t* lengths = cache.lengths.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) lengths[b] += fed[b];
  advance_held(cache, fed);
  return logits;
}

void DecodeStep::advance_held(KVCache& cache, const std::vector<int64_t>& fed) {
  if (!cache.evicting()) return;
  int64_t* held = cache.held.data_ptr<int64_t>();
  for (size_t b = 0; b < fed.size(); ++b) held[b] = std::min(held[b] + fed[b], cache.eviction.budget);
}

torch::Tensor DecodeStep::run_rows(const std::vector<Row>& rows, KVCache& cache) {
  const auto& cfg = model_->cfg;
  const int64_t M = rows.size(), V = cfg.vocab, cap = std::min(cache.capacity, cfg.context);
  // An evicting cache writes after the tokens it holds, never past budget + 1
  // slots (models/eviction.h); only the text positions are bounded by the context.
  const int64_t limit = cache.evicting() ? cfg.context : cap;
  if (cache.evicting()) {
    TORCH_CHECK(cache.held.is_cpu() && cache.held.is_contiguous(), "DecodeStep: an evicting cache off the CPU");
    std::string hook;
    TORCH_CHECK(!any_score_hook(hooks_, &hook), "DecodeStep: the score hook '", hook,
                "' runs on plain attention only, not on an evicting cache");
  }
  int64_t wanted = 0;
  for (const Row& r : rows) {
    TORCH_CHECK(r.position < limit, "KV cache overflow: ", r.position + 1, " tokens, capacity ", limit);
    wanted += r.logits;
  }
  auto logits = torch::empty({wanted, V}, torch::TensorOptions().dtype(torch::kFloat));
  plan_hooks(rows, cache.batch());
  // Whole sequences per team member, cut near equal row counts (rows come
  // sequence by sequence): a member's products, attention and cache slots
  // then touch nothing another member writes. Splitting each product across
  // the team instead had every member read what the other had just written,
  // a transfer between cores at every product that cost more than the second
  // core gave (measured here, batch 8: 180 µs a step on two threads against
  // 163 on one).
  std::vector<int64_t> cut{0};
  int64_t sequences = 1;  // distinct ones (a server's step feeds some rows of the cache, not all)
  for (size_t i = 1; i < rows.size(); ++i) sequences += rows[i].sequence != rows[i - 1].sequence;
  const int64_t groups = std::min<int64_t>(team_->size(), sequences);
  for (int64_t g = 1, m = 0; g < groups; ++g) {
    m = std::max(m, M * g / groups);
    while (m > 0 && m < M && rows[m].sequence == rows[m - 1].sequence) ++m;
    if (m > cut.back() && m < M) cut.push_back(m);
  }
  cut.push_back(M);
  std::vector<int64_t> first_logit(cut.size(), 0);  // logits rows before each group
  for (size_t g = 0; g + 1 < cut.size(); ++g)
    first_logit[g + 1] = first_logit[g] + std::count_if(rows.begin() + cut[g], rows.begin() + cut[g + 1],
                                                        [](const Row& r) { return r.logits; });
  float* out = logits.data_ptr<float>();
  if (cut.size() == 2) {
    through_layers(rows.data(), M, cache, out, /*alone=*/false);  // one sequence: the team splits each product
  } else {
    team_->run(static_cast<int>(cut.size() - 1), [&](int g) {
      through_layers(rows.data() + cut[g], cut[g + 1] - cut[g], cache, out + first_logit[g] * V, /*alone=*/true);
    });
  }
  return logits;
}

void DecodeStep::through_layers(const Row* rows, int64_t M, KVCache& cache, float* logits, bool alone) {
  const auto& cfg = model_->cfg;
  const int64_t C = cfg.dim, H = cfg.heads, D = cfg.head_dim(), F = cfg.mlp_ratio * C, V = cfg.vocab,
                cap = cache.capacity;
  int64_t span = 0, wanted = 0;
  for (int64_t m = 0; m < M; ++m) {
    span = std::max(span, rows[m].position + 1);
    wanted += rows[m].logits;
  }
  const bool fused = fused_.any();
  const bool token_imp = fused_.key_weighting_on() && fused_.importance != FusedOptions::Importance::AttnMass &&
                         skipped_ != Part::KeyWeighting;
  const bool distill = skipped_ != Part::ValueDistillation;
  const bool mass_sums = fused_.key_weighting_on() && fused_.importance == FusedOptions::Importance::AttnMass &&
                         skipped_ != Part::KeyWeighting;
  const int64_t G = fused_.gate && skipped_ != Part::Gate ? H * fused_.gate_keys : 0, Wv = value_width_;
  auto fopt = torch::TensorOptions().dtype(torch::kFloat);
  auto x_t = torch::empty({M, C}, fopt), h_t = torch::empty({M, C}, fopt), qkv_t = torch::empty({M, 3 * C}, fopt),
       y_t = torch::empty({M, C}, fopt), a_t = torch::empty({M, C}, fopt), f_t = torch::empty({M, F}, fopt),
       last_t = torch::empty({wanted, C}, fopt), imp_t = torch::empty({token_imp ? M : 0}, fopt),
       g_t = torch::empty({M, G}, fopt), gl_t = torch::empty({wanted, G}, fopt);
  float *x = x_t.data_ptr<float>(), *h = h_t.data_ptr<float>(), *qkv = qkv_t.data_ptr<float>(),
        *y = y_t.data_ptr<float>(), *a = a_t.data_ptr<float>(), *f = f_t.data_ptr<float>(),
        *last = last_t.data_ptr<float>(), *imp = imp_t.data_ptr<float>(), *gate_in = g_t.data_ptr<float>(),
        *gate_last = gl_t.data_ptr<float>();
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const HookProduct hook_product(*this, alone);

  // An evicting cache: tokens held before this call, per sequence (models/eviction.h).
  const EvictionOptions& ev = cache.eviction;
  const bool evict = ev.on();
  const int64_t* held = evict ? cache.held.data_ptr<int64_t>() : nullptr;
  for (int64_t m = 0; m < M; ++m) {  // token + position embedding (alibi: none)
    const float* te = wte_ + rows[m].token * C;
    if (!wpe_) {
      std::copy(te, te + C, x + m * C);
      continue;
    }
    // streaming.positions = cache: the token enters at its index in the cache.
    const int64_t p = evict && ev.cache_positions ? std::min(held[rows[m].sequence] + rows[m].offset, ev.budget)
                                                  : rows[m].position;
    const float* pe = wpe_ + p * C;
    for (int64_t i = 0; i < C; ++i) x[m * C + i] = te[i] + pe[i];
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    float* kc = cache.layers[l].k.data_ptr<float>();  // [B,H,cap,D]
    float* vc = cache.layers[l].v.data_ptr<float>();
    if (token_imp) {  // the block's input, as the reference reads it
      token_importance(M, x, imp, alone);
      float* cached = cache.layers[l].importance.data_ptr<float>();  // [B,cap]
      for (int64_t m = 0; m < M; ++m) cached[rows[m].sequence * cap + rows[m].position] = imp[m];
    }
    for (int64_t m = 0; m < M; ++m) layer_norm(x + m * C, L.ln1_w, L.ln1_b, h + m * C, C, eps_);
    product(M, 3 * C, C, h, L.qkv, qkv, alone);  // [M,3C]: q | k | v, head-major inside each
    // attn_mass: each sequence's column sums to its first row, before its
    // keys are overwritten (a rolled-back query's row is recomputed from the
    // keys it saw: LayerCache::sync_mass); its queries kept for a later one.
    float* qc = mass_sums ? cache.layers[l].queries.data_ptr<float>() : nullptr;  // [B,H,cap,D]
    for (int64_t m = 0; m < M && qc; ++m)
      if (m == 0 || rows[m].sequence != rows[m - 1].sequence) cache.layers[l].sync_mass(rows[m].sequence, rows[m].position);
    // Every row's key and value first: a prefill row reads those of the
    // earlier rows of its sequence. With value distillation the cache holds
    // z = P v, r values per head. (An evicting cache writes each row as it
    // attends, below: where it goes depends on the evictions before it.)
    for (int64_t m = 0; m < M && !evict; ++m)
      for (int64_t hd = 0; hd < H; ++hd) {
        const float* q = qkv + m * 3 * C + hd * D;
        const int64_t slot = (rows[m].sequence * H + hd) * cap + rows[m].position;
        std::copy(q + C, q + C + D, kc + slot * D);
        if (qc) std::copy(q, q + D, qc + slot * D);
        if (!L.value_p) {
          std::copy(q + 2 * C, q + 2 * C + D, vc + slot * D);
          continue;
        }
        // z_i = P_i · v: the dot products of the attention's scores.
        if (distill) scaled_scores(q + 2 * C, L.value_p, Wv, D, 1.0f, vc + slot * Wv);
      }
    if (fused) {
      attend_fused(l, rows, M, qkv, y, cache, alone, G > 0 && l + 1 == layers_.size() ? gate_in : nullptr);
    } else if (evict) {
      attend_evicting(l, rows, M, qkv, y, cache, alone);
    } else {
      // Per (row, head): score the visible slots (j <= position; stale slots
      // past it, left by a rollback, are not), softmax, weighted sum of values.
      split(M * H, alone, [&](int64_t begin, int64_t end) {
        // Each member's scores in its own buffer: a row beside another
        // member's writes slowed both (models/blas.h).
        thread_local std::vector<float> own;
        own.resize(span);
        float* s = own.data();
        for (int64_t mh = begin; mh < end; ++mh) {
          const int64_t m = mh / H, hd = mh % H, n = rows[m].position + 1;
          const int64_t head = (rows[m].sequence * H + hd) * cap * D;
          scaled_scores(qkv + m * 3 * C + hd * D, kc + head, n, D, scale, s);
          // Score hooks (alibi's biases, models/attention_hook.h): one call per row and head.
          for (const AttentionHook* hook : score_hooks_)
            hook->adjust_score_row(s, n, ScoreRow{static_cast<int64_t>(l), hd, rows[m].position});
          softmax_inplace(s, n);
          weighted_rows(s, vc + head, n, D, y + m * C + hd * D);
        }
      });
    }
    // After-attention hooks (models/attention_hook.h; gated_attn's gate among
    // them), given the block's normalised input, which h still holds.
    for (const AttentionHook* hook : output_hooks_) hook->after_attention_rows(y, h, M, C, static_cast<int64_t>(l));
    product(M, C, C, y, L.proj, a, alone);
    for (int64_t i = 0; i < M * C; ++i) x[i] += a[i];
    for (int64_t m = 0; m < M; ++m) layer_norm(x + m * C, L.ln2_w, L.ln2_b, h + m * C, C, eps_);
    // Before-MLP hooks (models/attention_hook.h; sfcl's and oet's correction)
    // on the MLP input, which h now holds.
    for (size_t k = 0; k < mlp_hooks_.size(); ++k) {
      const MlpRows site{static_cast<int64_t>(l), rows, mlp_plans_[k].get(), &hook_product};
      mlp_hooks_[k]->before_mlp_rows(h, M, C, site);
    }
    product(M, F, C, h, L.fc, f, alone, /*gelu=*/true);
    product(M, C, F, f, L.mlp_proj, a, alone);
    for (int64_t i = 0; i < M * C; ++i) x[i] += a[i];
  }
  // The head only for the rows whose logits are wanted (tied to the embedding).
  int64_t w = 0;
  for (int64_t m = 0; m < M; ++m) {
    if (!rows[m].logits) continue;
    layer_norm(x + m * C, lnf_w_, lnf_b_, last + w * C, C, eps_);
    if (G > 0) std::copy(gate_in + m * G, gate_in + (m + 1) * G, gate_last + w * G);
    ++w;
  }
  product(wanted, V, C, last, wte_panels_, logits, alone);
  if (G > 0) gate_logits(wanted, gate_last, logits, alone);
}

void DecodeStep::plan_hooks(const std::vector<Row>& rows, int64_t batch) {
  mlp_plans_.clear();
  for (const AttentionHook* hook : mlp_hooks_)
    mlp_plans_.push_back(hook->plan_call(rows.data(), static_cast<int64_t>(rows.size()), batch));
}

}  // namespace zl

namespace zl {

// Eviction (models/eviction.h), as the reference (AttentionImpl::
// forward_evicting) does it: per sequence and head, its rows in order, each
// written in the free slot after the held ones, attending over them and
// itself, adding its weights to their scores (h2o), then evicting one when
// over budget. Heads evict on their own, so the team takes (sequence, head) pairs.
void DecodeStep::attend_evicting(size_t l, const Row* rows, int64_t M, const float* qkv, float* y, KVCache& cache,
                                 bool alone) {
  const EvictionOptions& ev = cache.eviction;
  const int64_t C = model_->cfg.dim, H = model_->cfg.heads, D = model_->cfg.head_dim(), cap = cache.capacity;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  LayerCache& lc = cache.layers[l];
  float *kc = lc.k.data_ptr<float>(), *vc = lc.v.data_ptr<float>();  // [B,H,cap,D]
  int32_t* order = lc.order.data_ptr<int32_t>();                      // [B,H,cap]
  float* score = lc.score.defined() ? lc.score.data_ptr<float>() : nullptr;
  const int64_t* held = cache.held.data_ptr<int64_t>();
  std::vector<int64_t> first{0};  // where each sequence's rows begin
  for (int64_t m = 1; m < M; ++m)
    if (rows[m].sequence != rows[m - 1].sequence) first.push_back(m);
  first.push_back(M);
  const int64_t S = first.size() - 1;
  split(S * H, alone, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> own;
    own.resize(cap);
    float* s = own.data();
    for (int64_t sh = begin; sh < end; ++sh) {
      const int64_t i = sh / H, hd = sh % H, b = rows[first[i]].sequence;
      const int64_t head = (b * H + hd) * cap;
      float *K = kc + head * D, *V = vc + head * D, *sc = score ? score + head : nullptr;
      int32_t* ord = order + head;
      int64_t n = held[b];
      for (int64_t m = first[i]; m < first[i + 1]; ++m) {
        const float* q = qkv + m * 3 * C + hd * D;
        std::copy(q + C, q + C + D, K + n * D);
        std::copy(q + 2 * C, q + 2 * C + D, V + n * D);
        ord[n] = static_cast<int32_t>(rows[m].position);
        scaled_scores(q, K, n + 1, D, scale, s);
        softmax_inplace(s, n + 1);
        weighted_rows(s, V, n + 1, D, y + m * C + hd * D);
        if (sc) {
          sc[n] = 0;
          for (int64_t j = 0; j <= n; ++j) sc[j] += s[j];
        }
        if (n + 1 <= ev.budget) {
          ++n;
          continue;
        }
        const int64_t victim = eviction_victim(ev, ord, sc, n + 1);
        if (victim == n) continue;  // (never: the newest token is always kept)
        std::copy(K + n * D, K + (n + 1) * D, K + victim * D);
        std::copy(V + n * D, V + (n + 1) * D, V + victim * D);
        ord[victim] = ord[n];
        if (sc) sc[victim] = sc[n];
      }
    }
  });
}

}  // namespace zl
