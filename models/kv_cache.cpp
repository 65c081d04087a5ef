#include "models/kv_cache.h"

#include <stdexcept>

namespace zl {

KVCache KVCache::allocate(const ModelConfig& cfg, int64_t batch, int64_t capacity, const torch::TensorOptions& opts) {
  KVCache c;
  c.capacity = capacity;
  for (int64_t l = 0; l < cfg.layers; ++l)
    c.layers.push_back({torch::zeros({batch, cfg.heads, capacity, cfg.head_dim()}, opts),
                        torch::zeros({batch, cfg.heads, capacity, cfg.head_dim()}, opts)});
  c.lengths = torch::zeros({batch}, opts.dtype(torch::kLong));
  return c;
}

void KVCache::truncate(int64_t b, int64_t length) {
  int64_t now = lengths[b].item<int64_t>();
  if (length < 0 || length > now)
    throw std::out_of_range("KVCache::truncate: sequence " + std::to_string(b) + " holds " + std::to_string(now) +
                            " tokens, cannot roll back to " + std::to_string(length));
  lengths[b] = length;
}

int64_t KVCache::bytes_per_token() const {
  int64_t bytes = 0;
  for (const auto& l : layers) {
    // Per token: H * D elements of K and of V.
    bytes += l.k.size(1) * l.k.size(3) * l.k.element_size();
    bytes += l.v.size(1) * l.v.size(3) * l.v.element_size();
  }
  return bytes;
}

}  // namespace zl
