#include "models/attention.h"

#include <cmath>
#include <string>

#include "models/fused_trace.h"
#include "models/key_weighting.h"
#include "models/latent_kv.h"
#include "models/split_linear.h"

namespace zl {

using torch::indexing::Slice;

namespace {

// The model's score hooks (models/attention_hook.h) on one layer's scores
// [B,H,T,L], in the order installed: queries at query_pos [B|1,T], keys at
// key_pos [L].
torch::Tensor hooked_scores(torch::Tensor scores, const AttentionContext& ctx, const torch::Tensor& query_pos,
                            const torch::Tensor& key_pos) {
  ScoreSite site{ctx.layer, query_pos, key_pos};
  ctx.hook_memo.resize(ctx.hooks->size());
  for (size_t i = 0; i < ctx.hooks->size(); ++i) {
    const auto& hook = (*ctx.hooks)[i];
    if (!hook->uses_scores()) continue;
    site.memo = &ctx.hook_memo[i];
    scores = hook->adjust_scores(scores, site);
  }
  return scores;
}

}  // namespace

AttentionImpl::AttentionImpl(const ModelConfig& c) : cfg(c) {
  qkv = register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(c.dim, 3 * c.dim).bias(false)));
  proj = register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(c.dim, c.dim).bias(false)));
  drop = register_module("drop", torch::nn::Dropout(c.dropout));
  if (c.attn_gate) {
    const int64_t G = c.attn_gate_headwise ? c.heads : c.dim;
    gate_weight = register_parameter("gate_weight", torch::zeros({G, c.dim}));
    if (c.attn_gate_bias) gate_bias = register_parameter("gate_bias", torch::zeros({G}));
  }
  if (c.latent_rank > 0) {
    // latent_kv trained (an svd model is built as the baseline's and
    // factorised after loading, fit_latent_svd): qkv becomes W^Q over W^DKV
    // [C+r,C]. Built [3C,C] first, so that its constructor draws from the
    // generator what the baseline's does; the transformer then draws W^Q as
    // the baseline's W_Q, and W^DKV and kv_up after the shared weights.
    torch::NoGradGuard no_grad;
    qkv->weight.set_data(torch::zeros({c.dim + c.latent_rank, c.dim}));
    kv_up = register_parameter("kv_up", torch::zeros({2 * c.dim, c.latent_rank}));
    if (c.latent_norm) latent_gain = register_parameter("latent_gain", torch::ones({c.latent_rank}));
  }
  if (c.fused.value_rank > 0) {
    const int64_t r = c.fused.value_rank, D = c.head_dim();
    value_proj = register_parameter("value_proj", c.fused.hard_orthogonal ? torch::zeros({D, r}) : torch::zeros({r, D}));
    reset_value_projection();
  }
}

// P starts as the first r coordinates of each head's value ([I_r 0]):
// orthonormal, and drawn from no random generator, so a fused model with seed
// s starts from the very shared weights the baseline with seed s starts from
// (paired comparisons, docs/results_schema.md).
void AttentionImpl::reset_value_projection() {
  if (!value_proj.defined()) return;
  torch::NoGradGuard no_grad;
  value_proj.zero_();  // [r,D], or [D,r] for the hard form: entry (i,i) is 1 in both
  for (int64_t i = 0; i < cfg.fused.value_rank; ++i) value_proj[i][i] = 1.0;
}

torch::Tensor AttentionImpl::value_projection() const {
  if (!cfg.fused.hard_orthogonal) return value_proj;  // [r,D]
  return std::get<0>(torch::linalg_qr(value_proj, "reduced")).t();  // [D,r] -> [r,D]
}

torch::Tensor AttentionImpl::ortho_penalty() const {
  auto p = value_projection();
  auto g = torch::matmul(p, p.t()) - torch::eye(p.size(0), p.options());  // [r,r]
  return (g * g).sum();
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx, LayerCache* cache) {
  const int64_t B = x.size(0), T = x.size(1), H = cfg.heads, D = cfg.head_dim(), C = cfg.dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  torch::Tensor q, k, v, latent;  // [B,H,T,D] each; latent_kv: c [B,T,r]
  if (cfg.latent_rank > 0) {
    // latent_kv (models/latent_kv.h): q and c from one product (eq. 9);
    // without a cache, keys and values up-projected from c (eq. 10-11) and
    // attended below as the baseline's are.
    const int64_t r = cfg.latent_rank;
    auto qc = split_linear(x, qkv->weight);                       // [B,T,C+r]
    q = qc.narrow(2, 0, C).view({B, T, H, D}).transpose(1, 2);    // [B,T,H,D] -> [B,H,T,D]
    latent = qc.narrow(2, C, r);                                  // [B,T,r]
    if (latent_gain.defined()) latent = rms_norm(latent, latent_gain);
    if (!cache) {
      auto kv = split_linear(latent, kv_up).view({B, T, 2, H, D}).permute({2, 0, 3, 1, 4});  // [2,B,H,T,D]
      k = kv[0];
      v = kv[1];
    }
  } else {
    auto parts = split_linear(x, qkv->weight).view({B, T, 3, H, D}).permute({2, 0, 3, 1, 4});  // [3,B,H,T,D]
    q = parts[0], k = parts[1], v = parts[2];                                                  // [B,H,T,D]
  }

  // Score hooks (models/attention_hook.h) run in the two plain branches
  // below; the others score keys whose slots are not their positions, or
  // score elsewhere, and refuse them.
  const bool latent_cache = latent.defined() && cache;
  const bool fused = cfg.fused.key_weighting_on() || cfg.fused.value_rank > 0 || ctx.gate_features || ctx.trace;
  std::string score_hook;
  const bool score_hooks = ctx.hooks && any_score_hook(*ctx.hooks, &score_hook);
  TORCH_CHECK(!score_hooks || !(latent_cache || fused || (cache && ctx.eviction)), "attention: the score hook '",
              score_hook, "' runs on plain attention only (not latent_kv's cache, fused's parts or an evicting cache)");

  torch::Tensor y;
  if (latent_cache) {
    y = attend_latent(q, latent, ctx, *cache);
  } else if (fused) {
    y = forward_fused(q, k, v, ctx, cache);
  } else if (!cache) {
    // Training: one baddbmm computes scale*q·kᵀ + causal bias in a single
    // pass over the T×T scores (no separate scaling and masking copies).
    auto q3 = q.reshape({B * H, T, D}), k3 = k.reshape({B * H, T, D}), v3 = v.reshape({B * H, T, D});
    auto scores = torch::baddbmm(ctx.bias, q3, k3.transpose(1, 2), /*beta=*/1.0, /*alpha=*/scale);  // [B*H,T,T]
    if (score_hooks) {
      // Query i and key j at positions i and j.
      auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(x.device()));  // [T]
      scores = hooked_scores(scores.view({B, H, T, T}), ctx, pos.view({1, T}), pos).reshape({B * H, T, T});
    }
    y = torch::bmm(torch::softmax(scores, -1), v3).view({B, H, T, D});
  } else if (ctx.evict_rows) {
    y = forward_evicting(q, k, v, ctx, cache);
  } else {
    // Incremental: write the new keys and values at each sequence's own
    // positions, then attend over the first `span` slots.
    auto rows = torch::arange(B, ctx.positions.options()).unsqueeze(1).expand({B, T});  // [B,T]
    cache->k.index_put_({rows, Slice(), ctx.positions}, k.transpose(1, 2).to(cache->k.dtype()));  // values [B,T,H,D]
    cache->v.index_put_({rows, Slice(), ctx.positions}, v.transpose(1, 2).to(cache->v.dtype()));
    auto keys = cache->k.index({Slice(), Slice(), Slice(0, ctx.span)}).to(q.dtype());    // [B,H,L,D]
    auto values = cache->v.index({Slice(), Slice(), Slice(0, ctx.span)}).to(q.dtype());  // [B,H,L,D]
    auto scores = torch::matmul(q, keys.transpose(-2, -1)) * scale + ctx.bias;  // [B,H,T,L]
    if (score_hooks)  // query at its slot ctx.positions, key j at slot j (slot = position on a plain cache)
      scores = hooked_scores(scores, ctx, ctx.positions, torch::arange(ctx.span, ctx.positions.options()));
    auto attn = torch::softmax(scores, -1);                                      // [B,H,T,L]
    y = torch::matmul(attn, values);                                              // [B,H,T,D]
    if (ctx.eviction) {
      // An evicting cache that evicts nothing in this call (slots = held + t):
      // the bookkeeping only. Each new token's position in the text, and
      // (h2o) the attention each held token received from this call's real
      // queries, added to its score.
      auto order = ctx.text_positions.to(cache->order.dtype()).unsqueeze(2).expand({B, T, H});  // [B,T,H]
      cache->order.index_put_({rows, Slice(), ctx.positions}, order);
      if (cache->score.defined()) {
        cache->score.index_put_({rows, Slice(), ctx.positions}, torch::zeros({B, T, H}, cache->score.options()));
        auto real = (torch::arange(T, ctx.rows.options()).view({1, T}) < ctx.rows.view({B, 1}));  // [B,T]
        auto received = (attn.detach().to(torch::kFloat) * real.view({B, 1, T, 1})).sum(2);       // [B,H,L]
        cache->score.narrow(2, 0, ctx.span).add_(received);
      }
    }
  }
  y = y.transpose(1, 2).reshape({B, T, C});  // [B,T,C]
  // After-attention hooks (models/attention_hook.h), given the block's
  // normalised input x: gated_attn's gate among them (models/gated_attention.h).
  if (ctx.hooks)
    for (const auto& hook : *ctx.hooks)
      if (hook->uses_output()) y = hook->after_attention(y, x, ctx.layer);
  return drop(split_linear(y, proj->weight));
}

// The reference of eviction (models/eviction.h), slow and obvious: one token
// at a time, every head at once. Rows past ctx.rows[b] (padding) are skipped.
torch::Tensor AttentionImpl::forward_evicting(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                              const AttentionContext& ctx, LayerCache* cache) {
  const EvictionOptions& e = *ctx.eviction;
  const int64_t B = q.size(0), H = q.size(1), D = q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto y = torch::zeros_like(q);  // [B,H,T,D]
  auto held = ctx.held.to(torch::kCPU), rows = ctx.rows.to(torch::kCPU), text = ctx.text_positions.to(torch::kCPU);
  auto heads = torch::arange(H, torch::TensorOptions().dtype(torch::kLong).device(q.device()));
  for (int64_t b = 0; b < B; ++b) {
    auto K = cache->k[b], V = cache->v[b], order = cache->order[b];  // [H,cap,D], [H,cap,D], [H,cap]
    auto score = cache->score.defined() ? cache->score[b] : torch::Tensor();  // [H,cap]
    int64_t n = held[b].item<int64_t>();
    for (int64_t t = 0; t < rows[b].item<int64_t>(); ++t) {
      // The new token in the free slot n, after the n held ones.
      K.select(1, n).copy_(k[b].select(1, t));  // [H,D]
      V.select(1, n).copy_(v[b].select(1, t));
      order.select(1, n).fill_(text[b][t].item<int64_t>());
      auto keys = K.narrow(1, 0, n + 1).to(q.dtype()), values = V.narrow(1, 0, n + 1).to(q.dtype());  // [H,n+1,D]
      auto scores = torch::matmul(q[b].narrow(1, t, 1), keys.transpose(1, 2)) * scale;              // [H,1,n+1]
      auto attn = torch::softmax(scores, -1);
      y[b].narrow(1, t, 1).copy_(torch::matmul(attn, values));  // [H,1,D]
      if (score.defined()) {  // h2o: o_s += the weight token s received from this query
        score.select(1, n).zero_();
        score.narrow(1, 0, n + 1).add_(attn.detach().squeeze(1).to(torch::kFloat));
      }
      if (n + 1 <= e.budget) {
        ++n;
        continue;
      }
      // Over budget: each head evicts one token; the new one moves into its slot.
      auto victim = eviction_victims(e, order.narrow(1, 0, n + 1), score.defined() ? score.narrow(1, 0, n + 1) : score);  // [H]
      K.index_put_({heads, victim}, K.select(1, n).clone());
      V.index_put_({heads, victim}, V.select(1, n).clone());
      order.index_put_({heads, victim}, order.select(1, n).clone());
      if (score.defined()) score.index_put_({heads, victim}, score.select(1, n).clone());
    }
  }
  return y;
}

torch::Tensor AttentionImpl::attend_latent(const torch::Tensor& q, const torch::Tensor& c, const AttentionContext& ctx,
                                           LayerCache& cache) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), C = cfg.dim, r = cfg.latent_rank;
  const int64_t L = ctx.span;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  // The cache holds c alone, one row per token for all heads (at each
  // sequence's own positions, so a rollback masks stale rows as for K/V).
  auto rows = torch::arange(B, ctx.positions.options()).unsqueeze(1).expand({B, T});  // [B,T]
  cache.latent.index_put_({rows, ctx.positions}, c.to(cache.latent.dtype()));       // [B,T,r] at [B,T]
  auto held = cache.latent.narrow(1, 0, L).to(q.dtype()).unsqueeze(1);              // [B,1,L,r]
  // DeepSeek-V2 §2.1.2: W^UK absorbed into the query, W^UV applied after
  // the mix, head by head; the cached latents are never up-projected.
  auto w_uk = kv_up.narrow(0, 0, C).view({H, D, r});  // head h: W^UK_h [D,r]
  auto w_uv = kv_up.narrow(0, C, C).view({H, D, r});  // head h: W^UV_h [D,r]
  auto q_lat = torch::matmul(q, w_uk);                // [B,H,T,D]·[H,D,r] -> [B,H,T,r]: W^UK_hᵀ q_h
  auto scores = torch::matmul(q_lat, held.transpose(-2, -1)) * scale + ctx.bias;  // [B,H,T,L]: q_h·k_j,h
  auto mix = torch::matmul(torch::softmax(scores, -1), held);                      // [B,H,T,r]: Σ_j a_j c_j
  return torch::matmul(mix, w_uv.transpose(1, 2));                                 // [B,H,T,r]·[H,r,D] -> [B,H,T,D]
}

// One code path for training and decoding, so that both weigh keys and read
// values in the same operations; only where keys, values and importance come
// from differs (this call's tokens, or the cache after this call's writes).
torch::Tensor AttentionImpl::forward_fused(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                           const AttentionContext& ctx, LayerCache* cache) {
  const auto& f = cfg.fused;
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const bool mass_importance = f.key_weighting_on() && f.importance == FusedOptions::Importance::AttnMass;
  torch::Tensor p = f.value_rank > 0 ? value_projection() : torch::Tensor();  // [r,D]
  auto z = p.defined() ? torch::matmul(v, p.t()) : v;                          // [B,H,T,r]: what the cache stores
  if (ctx.trace && p.defined()) ctx.trace->distilled.push_back(z.detach());

  torch::Tensor keys, values, distance, token_imp, raw;  // [B,H,L,D], [B,H,L,r], [..,T,L], [B,1,1,L], [B,H,T,L]
  int64_t L = T;
  if (!cache) {
    keys = k;
    values = z;
    auto i = torch::arange(T, q.options().dtype(torch::kFloat));
    distance = (i.unsqueeze(1) - i.unsqueeze(0)).clamp_min(0);  // [T,T]: d = i - j (0 for future keys, masked)
    if (ctx.importance.defined()) token_imp = ctx.importance.view({B, 1, 1, T});
    // scale * q·kᵀ + causal mask in one pass, as the baseline does.
    raw = torch::baddbmm(ctx.bias, q.reshape({B * H, T, D}), k.reshape({B * H, T, D}).transpose(1, 2), 1.0, scale)
              .view({B, H, T, T});
  } else {
    L = ctx.span;
    auto rows = torch::arange(B, ctx.positions.options()).unsqueeze(1).expand({B, T});  // [B,T]
    if (mass_importance) {
      // Column sums to the queries before this call's first, while the cache
      // still holds the keys a rolled-back query saw (LayerCache::sync_mass);
      // then this call's queries, for a later rollback to recompute.
      auto first = ctx.positions.select(1, 0).to(torch::kCPU).contiguous();  // [B]
      for (int64_t b = 0; b < B; ++b) cache->sync_mass(b, first.data_ptr<int64_t>()[b]);
      cache->queries.index_put_({rows, Slice(), ctx.positions}, q.detach().transpose(1, 2).to(torch::kFloat));  // [B,T,H,D]
    }
    cache->k.index_put_({rows, Slice(), ctx.positions}, k.transpose(1, 2).to(cache->k.dtype()));  // [B,T,H,D]
    cache->v.index_put_({rows, Slice(), ctx.positions}, z.transpose(1, 2).to(cache->v.dtype()));  // [B,T,H,r]
    keys = cache->k.narrow(2, 0, L).to(q.dtype());
    values = cache->v.narrow(2, 0, L).to(q.dtype());
    auto slots = torch::arange(L, ctx.positions.options());
    distance = (ctx.positions.unsqueeze(2) - slots.view({1, 1, L})).clamp_min(0).unsqueeze(1).to(torch::kFloat);  // [B,1,T,L]
    if (ctx.importance.defined() && cache->importance.defined()) {
      cache->importance.index_put_({rows, ctx.positions}, ctx.importance.to(torch::kFloat));
      token_imp = cache->importance.narrow(1, 0, L).view({B, 1, 1, L});
    }
    raw = torch::matmul(q, keys.transpose(-2, -1)) * scale + ctx.bias;
  }
  // raw: masked scores q·k/sqrt(D) (−inf for keys not visible), [B,H,T,L].

  auto scores = raw;
  if (f.key_weighting_on()) {
    torch::Tensor log_w;  // log w, [B,H,T,L] or [B,1,T,L]; not trained through (importance is a statistic)
    {
      torch::NoGradGuard no_grad;
      if (mass_importance) {
        // Unweighted attention of this call's queries; its running column sums
        // give, for query i, the mass key j received from the queries j..i-1.
        auto a = torch::softmax(raw.detach().to(torch::kFloat), -1);  // [B,H,T,L]
        auto running = a.cumsum(2);                                     // [B,H,T,L]
        if (cache) {
          // Plus the cache's sums over the queries before this call's first
          // (synced above); all T rows of this call are then summed.
          auto mass = cache->mass.narrow(2, 0, L);  // [B,H,L]
          running.add_(mass.unsqueeze(2));
          mass.copy_(running.select(2, T - 1));
          cache->mass_rows.add_(T);
        }
        // With I = excl / d (models/key_weighting.h), d (1 - I) = d - excl, so
        // log w = alpha (excl - d): no division, and exact at d = 0 (excl = 0 there).
        log_w = running.sub_(a).sub_(distance).mul_(f.alpha);
      } else {
        log_w = log_key_weights(distance, token_imp, f.alpha);  // [B,1,T,L]
      }
      log_w = log_w.to(raw.dtype());
    }
    // scale: the key itself is multiplied by w, so its score q·(w k) = w (q·k)
    // (−inf stays −inf: w is finite and positive); bias: log w is added.
    scores = f.key_weighting == FusedOptions::KeyWeighting::Scale ? raw * log_w.exp() : raw + log_w;
    if (ctx.trace) {
      auto visible = (ctx.bias == 0).expand({B, H, T, L});
      ctx.trace->key_weights.push_back(log_w.exp().expand({B, H, T, L}).masked_select(visible).to(torch::kFloat));
    }
  }
  auto attn = torch::softmax(scores, -1);   // [B,H,T,L]
  auto y = torch::matmul(attn, values);     // [B,H,T,r]
  if (p.defined()) y = torch::matmul(y, p);  // read back through Pᵀ: [B,H,T,D]

  if (ctx.gate_features) {
    // Cosines between each query and the keys it attends to most (see
    // models/logits_gate.h), from the raw scores: cos = (q·k) / (|q| |k|).
    const int64_t n = std::min<int64_t>(f.gate_keys, L);
    auto [top_w, top_j] = attn.detach().topk(n, -1);  // [B,H,T,n]
    auto seen = top_w > 0;                             // fewer than n visible keys: the rest are zeros
    // where() before any arithmetic, so the −inf of a masked key never reaches a gradient.
    auto dots = torch::where(seen, raw.gather(-1, top_j), torch::scalar_tensor(0.0, raw.options())) / scale;  // q·k
    auto qn = q.norm(2, -1, true);                                                                    // [B,H,T,1]
    auto kn = keys.norm(2, -1).unsqueeze(2).expand({B, H, T, L}).gather(-1, top_j);                 // [B,H,T,n]
    auto cos = dots / (qn * kn).clamp_min(1e-12);                                                     // [B,H,T,n]
    if (n < f.gate_keys) cos = torch::constant_pad_nd(cos, {0, f.gate_keys - n});
    *ctx.gate_features = cos.permute({0, 2, 1, 3}).reshape({B, T, H * f.gate_keys});  // [B,T,H*keys]
  }
  return y;
}

}  // namespace zl
