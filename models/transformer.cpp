#include "models/transformer.h"

#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "models/alibi.h"
#include "models/correction_hook.h"
#include "models/gated_attention.h"
#include "models/key_weighting.h"
#include "models/split_linear.h"

namespace zl {

TransformerImpl::TransformerImpl(const ModelConfig& c) : cfg(c) {
  wte = register_module("wte", torch::nn::Embedding(c.vocab, c.dim));
  // ALiBi replaces the learned positions (models/alibi.h): no wpe. One is
  // still built and dropped (its constructor draws from the generator), so
  // that every later weight gets what the baseline's does (see the init below).
  if (!c.alibi) {
    wpe = register_module("wpe", torch::nn::Embedding(c.context, c.dim));
  } else {
    (void)torch::nn::Embedding(c.context, c.dim);  // drawn and dropped
    // The biases themselves: a score hook on every layer (no parameters).
    add_attention_hook(std::make_shared<AlibiHook>(zl::alibi_slopes(c.heads, c.alibi_max_bias)));
  }
  drop = register_module("drop", torch::nn::Dropout(c.dropout));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t l = 0; l < c.layers; ++l) blocks->push_back(Block(c));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  // sfcl / oet: the blocks' correction modules applied before each MLP by a
  // hook (models/correction_hook.h); no draws, the modules are the blocks'.
  if (c.correction_hidden > 0) {
    std::vector<Block> corrected;
    for (size_t l = 0; l < blocks->size(); ++l) corrected.push_back(Block(blocks->ptr<BlockImpl>(l)));
    add_attention_hook(std::make_shared<CorrectionHook>(std::move(corrected)));
  }

  // GPT-2 initialisation: N(0, 0.02), residual projections scaled down by
  // sqrt(2 * layers) so the residual stream's variance does not grow with depth.
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    const auto& name = p.key();
    if (p.value().dim() < 2) continue;  // LayerNorm weights and biases keep their defaults
    if (name.find("value_proj") != std::string::npos) continue;  // fused: its own, generator-free init
    if (name.find("attn.gate_") != std::string::npos) continue;  // gated_attn: drawn after the shared weights (below)
    if (name.find("attn.kv_up") != std::string::npos) continue;  // latent_kv: likewise
    if (c.latent_rank > 0 && name.find("attn.qkv.weight") != std::string::npos) {
      // latent_kv: the baseline's draw of [W_Q; W_K; W_V], whose W_Q is kept
      // as W^Q; W^DKV (the rows below it) is drawn after the shared weights.
      auto full = torch::empty({3 * c.dim, c.dim}).normal_(0.0, 0.02);
      p.value().narrow(0, 0, c.dim).copy_(full.narrow(0, 0, c.dim));
      continue;
    }
    double std = 0.02;
    if (name.find("proj.weight") != std::string::npos) std /= std::sqrt(2.0 * c.layers);
    p.value().normal_(0.0, std);
    // alibi: draw what wpe would have taken, so that the blocks get the very
    // weights the baseline with the same seed gets (paired comparisons, docs/results_schema.md).
    if (name == "wte.weight" && c.alibi) torch::empty({c.context, c.dim}).normal_(0.0, 0.02);
  }
  // gated_attn: W_θ as the other matrices, N(0, 0.02), so σ(x W_θ) starts
  // near 1/2 everywhere; the bias (if any) at 0. After the shared draws, as
  // the fused gate below.
  if (c.attn_gate) {
    std::vector<Attention> attns;
    for (const auto& b : *blocks) attns.push_back(b->as<Block>()->attn);
    for (auto& a : attns) a->gate_weight.normal_(0.0, 0.02);
    // The gate itself: an after-attention hook reading these parameters.
    add_attention_hook(std::make_shared<GatedAttentionHook>(std::move(attns), c.attn_gate_headwise));
  }
  // latent_kv trained (models/latent_kv.h): W^DKV and W^UK, W^UV as the other
  // matrices, N(0, 0.02); the RMSNorm gain at 1.
  if (c.latent_rank > 0)
    for (const auto& b : *blocks) {
      auto& attn = b->as<Block>()->attn;
      attn->qkv->weight.narrow(0, c.dim, c.latent_rank).normal_(0.0, 0.02);
      attn->kv_up.normal_(0.0, 0.02);
    }
  // The fused gate is built after the shared weights are drawn, so that the
  // generator has given them exactly what it gives the baseline with the same
  // seed (paired comparisons, docs/results_schema.md); its own draws come after.
  if (c.fused.gate)
    gate = register_module("gate", LogitsGate(c.heads * c.fused.gate_keys, c.fused.gate_hidden, c.fused.gate_top_k));
}

void TransformerImpl::add_attention_hook(std::shared_ptr<const AttentionHook> hook) {
  TORCH_CHECK(hook, "add_attention_hook: a null hook");
  attention_hooks_.push_back(std::move(hook));
}

torch::Tensor TransformerImpl::token_importance(const torch::Tensor& x) {
  if (cfg.fused.importance == FusedOptions::Importance::HiddenNorm)
    return squash(x.detach().to(torch::kFloat).norm(2, -1) / std::sqrt(static_cast<double>(cfg.dim)));
  // grad_norm: ‖∂ LSE(W·LN(x)) / ∂x‖ per token in closed form, as the fast
  // step computes it (models/decode_step_fused.cpp): ∂LSE/∂logits = softmax
  // p, so ∂/∂y = Wᵀp for y = LN(x); through the norm, with x̂ = (x − μ)/σ
  // and g = γ ⊙ Wᵀp, ∂/∂x = (g − mean(g) − x̂ · mean(g ⊙ x̂)) / σ. No
  // autograd graph: a statistic, detached, and the same products an
  // autograd pass would run without its bookkeeping (37% of a fused
  // training step went to it).
  torch::NoGradGuard no_grad;
  auto h = x.detach().to(torch::kFloat);
  const auto& w = wte->weight;
  const double eps = ln_f->options.eps();
  auto centered = h - h.mean(-1, true);
  auto inv_sigma = torch::rsqrt(centered.square().mean(-1, true) + eps);  // [B,T,1]
  auto xhat = centered * inv_sigma;
  auto y = xhat * ln_f->weight.to(torch::kFloat) + ln_f->bias.to(torch::kFloat);
  auto p = torch::softmax(torch::nn::functional::linear(y.to(w.dtype()), w), -1);  // [B,T,V]
  auto g = torch::matmul(p, w).to(torch::kFloat) * ln_f->weight.to(torch::kFloat);  // γ ⊙ Wᵀp, [B,T,C]
  auto dx = (g - g.mean(-1, true) - xhat * (g * xhat).mean(-1, true)) * inv_sigma;
  return squash(dx.norm(2, -1));
}

torch::Tensor TransformerImpl::regularizer() {
  if (cfg.fused.value_rank == 0 || cfg.fused.hard_orthogonal || cfg.fused.ortho_weight == 0) return {};
  torch::Tensor total;
  for (const auto& b : *blocks) {
    auto pen = b->as<Block>()->attn->ortho_penalty();
    total = total.defined() ? total + pen : pen;
  }
  return total * cfg.fused.ortho_weight;
}

torch::Tensor TransformerImpl::head(const torch::Tensor& x, const torch::Tensor& gate_features, FusedTrace* trace) {
  auto h = ln_f(x);  // [B,T,C]
  if (keep_hidden) last_hidden = h;
  auto logits = split_linear(h, wte->weight);
  return gate ? gate->forward(logits, gate_features, trace) : logits;
}

torch::Tensor TransformerImpl::causal_bias(int64_t T, const torch::Tensor& like) {
  if (!causal_bias_cache_.defined() || causal_bias_cache_.size(0) != T || causal_bias_cache_.device() != like.device()) {
    auto upper = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(like.device())).triu(1);
    causal_bias_cache_ = torch::zeros({T, T}, torch::TensorOptions().device(like.device()))
                             .masked_fill(upper, -std::numeric_limits<float>::infinity());
  }
  return causal_bias_cache_;
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& tokens) { return forward_full(tokens, nullptr); }

torch::Tensor TransformerImpl::forward_traced(const torch::Tensor& tokens, FusedTrace& trace) {
  return forward_full(tokens, &trace);
}

torch::Tensor TransformerImpl::forward_full(const torch::Tensor& tokens, FusedTrace* trace) {
  const int64_t T = tokens.size(1);
  TORCH_CHECK(T <= cfg.context, "sequence of ", T, " tokens exceeds model.context ", cfg.context);
  auto pos = torch::arange(T, tokens.options());
  auto x = drop(wpe ? wte(tokens) + wpe(pos) : wte(tokens));  // [B,T,C]
  AttentionContext ctx;
  ctx.bias = causal_bias(T, x);  // [T,T]
  ctx.trace = trace;
  ctx.hooks = &attention_hooks_;
  const bool token_imp = cfg.fused.key_weighting_on() && cfg.fused.importance != FusedOptions::Importance::AttnMass;
  torch::Tensor gate_features;
  for (size_t l = 0; l < blocks->size(); ++l) {
    if (token_imp) ctx.importance = token_importance(x);
    ctx.gate_features = (gate && l + 1 == blocks->size()) ? &gate_features : nullptr;
    ctx.layer = static_cast<int64_t>(l);
    x = blocks[l]->as<Block>()->forward(x, ctx);
  }
  return head(x, gate_features, trace);
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& tokens, KVCache& cache, const std::vector<int64_t>& rows) {
  const int64_t B = tokens.size(0), T = tokens.size(1);
  auto steps = torch::arange(T, cache.lengths.options());
  auto positions = cache.lengths.unsqueeze(1) + steps;  // [B,T]: position in the text
  AttentionContext ctx;
  // Where the new tokens go: a plain cache at their positions; an evicting
  // one after the tokens it holds (when none is evicted in this call).
  torch::Tensor slots = positions, fed;  // [B,T]; fed [B]: real tokens per sequence
  if (cache.evicting()) {
    const auto& e = cache.eviction;
    TORCH_CHECK(rows.empty() || static_cast<int64_t>(rows.size()) == B, "forward: ", rows.size(), " row counts for ", B,
                " sequences");
    fed = rows.empty() ? torch::full({B}, T, cache.lengths.options())
                       : torch::tensor(rows, torch::kLong).to(cache.lengths.device());
    slots = cache.held.unsqueeze(1) + steps;
    ctx.eviction = &e;
    ctx.text_positions = positions;
    ctx.held = cache.held;
    ctx.rows = fed;
    ctx.evict_rows = (cache.held + fed).max().item<int64_t>() > e.budget;
    TORCH_CHECK((cache.lengths + fed).max().item<int64_t>() <= cfg.context, "sequence past model.context ", cfg.context,
                " (positions are the text's, models/eviction.h)");
    // streaming.positions = cache: a token enters at its index in the cache.
    if (e.cache_positions) positions = slots.clamp_max(e.budget);
  }
  int64_t span = slots.max().item<int64_t>() + 1;
  if (!ctx.evict_rows)
    TORCH_CHECK(span <= cache.capacity && span <= cfg.context, "KV cache overflow: ", span, " tokens, capacity ",
                std::min(cache.capacity, cfg.context));
  auto x = wpe ? wte(tokens) + wpe(positions) : wte(tokens);  // [B,T,C]

  // Key slot j is visible to the new token in slot s iff j <= s: this hides
  // both the future and any stale slots left by a rollback. (An evicting
  // cache that evicts in this call attends row by row instead, over the
  // slots each row finds held.)
  ctx.positions = slots;
  ctx.span = span;
  if (!ctx.evict_rows) {
    auto key_slots = torch::arange(span, slots.options());                           // [L]
    auto visible = key_slots.view({1, 1, span}) <= slots.unsqueeze(2);              // [B,T,L]
    ctx.bias = torch::zeros({B, 1, T, span}, x.options())
                   .masked_fill(visible.logical_not().unsqueeze(1), -std::numeric_limits<float>::infinity());
  }
  ctx.hooks = &attention_hooks_;
  const bool token_imp = cfg.fused.key_weighting_on() && cfg.fused.importance != FusedOptions::Importance::AttnMass;
  torch::Tensor gate_features;
  for (size_t l = 0; l < blocks->size(); ++l) {
    if (token_imp) ctx.importance = token_importance(x);
    ctx.gate_features = (gate && l + 1 == blocks->size()) ? &gate_features : nullptr;
    ctx.layer = static_cast<int64_t>(l);
    x = blocks[l]->as<Block>()->forward(x, ctx, &cache.layers[l]);
  }
  if (cache.evicting()) {
    // Each token adds one held and, once the budget is full, evicts one.
    cache.lengths += fed;
    cache.held.add_(fed).clamp_max_(cache.eviction.budget);
  } else if (!rows.empty()) {
    cache.lengths += torch::tensor(rows, torch::kLong).to(cache.lengths.device());
  } else {
    cache.lengths += T;
  }
  return head(x, gate_features);
}

torch::Tensor TransformerImpl::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
  auto logits = forward(tokens);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, cfg.vocab}).to(torch::kFloat), targets.reshape({-1}));
}

void TransformerImpl::set_correction_mode(CorrectionMode mode) {
  TORCH_CHECK(has_correction(), "this model has no correction module (variants sfcl and oet have one)");
  for (const auto& b : *blocks) b->as<Block>()->correction_mode = mode;
}

void TransformerImpl::set_correction_override(const std::vector<torch::Tensor>& per_layer) {
  TORCH_CHECK(has_correction(), "this model has no correction module (variants sfcl and oet have one)");
  TORCH_CHECK(per_layer.size() == blocks->size(), "correction override: ", per_layer.size(), " layers given, model has ",
              blocks->size());
  for (size_t l = 0; l < blocks->size(); ++l) {
    auto* b = blocks[l]->as<Block>();
    b->correction_mode = CorrectionMode::Override;
    b->correction_override = per_layer[l];
  }
}

std::vector<torch::Tensor> TransformerImpl::corrections(const torch::Tensor& tokens) {
  TORCH_CHECK(has_correction(), "this model has no correction module (variants sfcl and oet have one)");
  std::vector<CorrectionMode> saved;
  for (const auto& b : *blocks) {
    auto* blk = b->as<Block>();
    saved.push_back(blk->correction_mode);
    blk->correction_mode = CorrectionMode::Module;
    blk->capture_correction = true;
  }
  forward(tokens);
  std::vector<torch::Tensor> out;
  for (size_t l = 0; l < blocks->size(); ++l) {
    auto* blk = blocks[l]->as<Block>();
    out.push_back(blk->last_correction);
    blk->last_correction = torch::Tensor();
    blk->capture_correction = false;
    blk->correction_mode = saved[l];
  }
  return out;
}

KVCache TransformerImpl::make_cache(int64_t batch, int64_t capacity, const EvictionOptions& eviction) {
  if (capacity <= 0) capacity = cfg.context;
  return KVCache::allocate(cfg, batch, capacity, wte->weight.options(), eviction);
}

int64_t TransformerImpl::parameter_count(bool include_embeddings) const {
  int64_t n = 0;
  for (const auto& p : named_parameters()) {
    if (!include_embeddings && (p.key() == "wte.weight" || p.key() == "wpe.weight")) continue;
    n += p.value().numel();
  }
  return n;
}

}  // namespace zl
