#include "models/kv_cache.h"

#include <algorithm>
#include <stdexcept>

namespace zl {

KVCache KVCache::allocate(const ModelConfig& cfg, int64_t batch, int64_t capacity, const torch::TensorOptions& opts,
                          const EvictionOptions& eviction) {
  KVCache c;
  const auto& f = cfg.fused;
  if (eviction.on()) {
    // Eviction moves tokens between slots; fused's per-position state and
    // ALiBi's distances between slots assume slot = position, and latent_kv
    // holds no K and V to evict.
    if (f.any() || cfg.alibi || cfg.latent_rank > 0)
      throw std::invalid_argument("KV cache eviction is not available with fused's parts, ALiBi or latent_kv");
    if (eviction.budget < 1) throw std::invalid_argument("KV cache eviction: a budget of at least 1 token");
    capacity = std::min(capacity, eviction.budget + 1);
  }
  c.capacity = capacity;
  c.eviction = eviction;
  // Value distillation: the cache really stores r values per token and head.
  const int64_t value_width = f.value_rank > 0 ? f.value_rank : cfg.head_dim();
  for (int64_t l = 0; l < cfg.layers; ++l) {
    if (cfg.latent_rank > 0) {
      // latent_kv: the cache holds c alone, r values per token for all heads
      // together; keys and values are never stored (models/latent_kv.h).
      LayerCache lc;
      lc.latent = torch::zeros({batch, capacity, cfg.latent_rank}, opts);
      c.layers.push_back(lc);
      continue;
    }
    LayerCache lc;
    lc.k = torch::zeros({batch, cfg.heads, capacity, cfg.head_dim()}, opts);
    lc.v = torch::zeros({batch, cfg.heads, capacity, value_width}, opts);
    if (f.key_weighting_on() && f.importance == FusedOptions::Importance::AttnMass)
      lc.mass = torch::zeros({batch, cfg.heads, capacity, capacity}, opts.dtype(torch::kFloat));
    else if (f.key_weighting_on())
      lc.importance = torch::zeros({batch, capacity}, opts.dtype(torch::kFloat));
    if (eviction.on()) {
      lc.order = torch::zeros({batch, cfg.heads, capacity}, opts.dtype(torch::kInt));
      if (eviction.policy == EvictionOptions::Policy::H2O)
        lc.score = torch::zeros({batch, cfg.heads, capacity}, opts.dtype(torch::kFloat));
    }
    c.layers.push_back(lc);
  }
  c.lengths = torch::zeros({batch}, opts.dtype(torch::kLong));
  if (eviction.on()) c.held = torch::zeros({batch}, opts.dtype(torch::kLong));
  return c;
}

void KVCache::truncate(int64_t b, int64_t length) {
  // On the CPU without ATen calls: decoders roll back every sequence every
  // round, where two tensor operations each cost more than the check.
  int64_t* cpu = lengths.is_cpu() && lengths.is_contiguous() ? lengths.data_ptr<int64_t>() : nullptr;
  if (b < 0 || b >= batch()) throw std::out_of_range("KVCache::truncate: no sequence " + std::to_string(b));
  const int64_t now = cpu ? cpu[b] : lengths[b].item<int64_t>();
  if (length < 0 || length > now)
    throw std::out_of_range("KVCache::truncate: sequence " + std::to_string(b) + " holds " + std::to_string(now) +
                            " tokens, cannot roll back to " + std::to_string(length));
  if (evicting()) {
    // Only the newest tokens can be dropped, and only while every token fed is held.
    const int64_t kept = held[b].item<int64_t>();
    if (kept != now)
      throw std::out_of_range("KVCache::truncate: sequence " + std::to_string(b) + " has evicted tokens, cannot roll back");
    held[b] = length;
  }
  if (cpu)
    cpu[b] = length;
  else
    lengths[b] = length;
}

int64_t KVCache::bytes_per_token(std::map<std::string, int64_t>* parts) const {
  int64_t k = 0, v = 0, latent = 0, state = 0, evict = 0;
  for (const auto& l : layers) {
    // Per token: H * D elements of K, H * D (or H * r) of V; or r of the latent.
    if (l.k.defined()) k += l.k.size(1) * l.k.size(3) * l.k.element_size();
    if (l.v.defined()) v += l.v.size(1) * l.v.size(3) * l.v.element_size();
    if (l.latent.defined()) latent += l.latent.size(2) * l.latent.element_size();
    if (l.mass.defined()) state += l.mass.size(1) * l.mass.size(3) * l.mass.element_size();  // H * capacity
    if (l.importance.defined()) state += l.importance.element_size();                        // one scalar
    if (l.order.defined()) evict += l.order.size(1) * l.order.element_size();                 // H positions
    if (l.score.defined()) evict += l.score.size(1) * l.score.element_size();                 // H scores
  }
  if (parts) *parts = {{"k", k}, {"v", v}, {"latent", latent}, {"fused_state", state}, {"eviction_state", evict}};
  return k + v + latent + state + evict;
}

}  // namespace zl
