#include "models/transformer.h"

#include <cmath>
#include <limits>

#include "models/key_weighting.h"
#include "models/split_linear.h"

namespace zl {

TransformerImpl::TransformerImpl(const ModelConfig& c) : cfg(c) {
  wte = register_module("wte", torch::nn::Embedding(c.vocab, c.dim));
  wpe = register_module("wpe", torch::nn::Embedding(c.context, c.dim));
  drop = register_module("drop", torch::nn::Dropout(c.dropout));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t l = 0; l < c.layers; ++l) blocks->push_back(Block(c));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));

  // GPT-2 initialisation: N(0, 0.02), residual projections scaled down by
  // sqrt(2 * layers) so the residual stream's variance does not grow with depth.
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    const auto& name = p.key();
    if (p.value().dim() < 2) continue;  // LayerNorm weights and biases keep their defaults
    if (name.find("value_proj") != std::string::npos) continue;  // fused: its own, generator-free init
    double std = 0.02;
    if (name.find("proj.weight") != std::string::npos) std /= std::sqrt(2.0 * c.layers);
    p.value().normal_(0.0, std);
  }
  // The fused gate is built after the shared weights are drawn, so that the
  // generator has given them exactly what it gives the baseline with the same
  // seed (paired comparisons, SPEC §5); its own draws come after.
  if (c.fused.gate)
    gate = register_module("gate", LogitsGate(c.heads * c.fused.gate_keys, c.fused.gate_hidden, c.fused.gate_top_k));
}

torch::Tensor TransformerImpl::token_importance(const torch::Tensor& x) {
  if (cfg.fused.importance == FusedOptions::Importance::HiddenNorm)
    return squash(x.detach().to(torch::kFloat).norm(2, -1) / std::sqrt(static_cast<double>(cfg.dim)));
  // grad_norm: |d LSE(head(x)) / dx| per token, on a detached copy, so the
  // model's own graph (and its parameters' gradients) are untouched; grad
  // mode is switched on for decoding, which runs without it.
  torch::AutoGradMode grad_on(true);
  auto h = x.detach().requires_grad_(true);
  auto out = torch::logsumexp(torch::nn::functional::linear(ln_f(h), wte->weight.detach()), -1).sum();
  auto g = torch::autograd::grad({out}, {h})[0];  // [B,T,C]
  return squash(g.to(torch::kFloat).norm(2, -1)).detach();
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
  auto logits = split_linear(ln_f(x), wte->weight);
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
  auto x = drop(wte(tokens) + wpe(pos));  // [B,T,C]
  AttentionContext ctx;
  ctx.bias = causal_bias(T, x);  // [T,T]
  ctx.trace = trace;
  const bool token_imp = cfg.fused.key_weighting_on() && cfg.fused.importance != FusedOptions::Importance::AttnMass;
  torch::Tensor gate_features;
  for (size_t l = 0; l < blocks->size(); ++l) {
    if (token_imp) ctx.importance = token_importance(x);
    ctx.gate_features = (gate && l + 1 == blocks->size()) ? &gate_features : nullptr;
    x = blocks[l]->as<Block>()->forward(x, ctx);
  }
  return head(x, gate_features, trace);
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& tokens, KVCache& cache) {
  const int64_t B = tokens.size(0), T = tokens.size(1);
  auto positions = cache.lengths.unsqueeze(1) + torch::arange(T, cache.lengths.options());  // [B,T]
  int64_t span = positions.max().item<int64_t>() + 1;
  TORCH_CHECK(span <= cache.capacity && span <= cfg.context, "KV cache overflow: ", span, " tokens, capacity ",
              std::min(cache.capacity, cfg.context));
  auto x = wte(tokens) + wpe(positions);  // [B,T,C]

  // Key slot j is visible to the new token at position p iff j <= p: this
  // hides both the future and any stale slots left by a rollback.
  auto slots = torch::arange(span, positions.options());                                // [L]
  auto visible = slots.view({1, 1, span}) <= positions.unsqueeze(2);                   // [B,T,L]
  AttentionContext ctx;
  ctx.positions = positions;
  ctx.span = span;
  ctx.bias = torch::zeros({B, 1, T, span}, x.options())
                 .masked_fill(visible.logical_not().unsqueeze(1), -std::numeric_limits<float>::infinity());
  const bool token_imp = cfg.fused.key_weighting_on() && cfg.fused.importance != FusedOptions::Importance::AttnMass;
  torch::Tensor gate_features;
  for (size_t l = 0; l < blocks->size(); ++l) {
    if (token_imp) ctx.importance = token_importance(x);
    ctx.gate_features = (gate && l + 1 == blocks->size()) ? &gate_features : nullptr;
    x = blocks[l]->as<Block>()->forward(x, ctx, &cache.layers[l]);
  }
  cache.lengths += T;
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

KVCache TransformerImpl::make_cache(int64_t batch, int64_t capacity) {
  if (capacity <= 0) capacity = cfg.context;
  return KVCache::allocate(cfg, batch, capacity, wte->weight.options());
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
