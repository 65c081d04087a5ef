#include "models/attention.h"

#include <cmath>

namespace zl {

using torch::indexing::Slice;

AttentionImpl::AttentionImpl(const ModelConfig& c) : cfg(c) {
  qkv = register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(c.dim, 3 * c.dim).bias(false)));
  proj = register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(c.dim, c.dim).bias(false)));
  drop = register_module("drop", torch::nn::Dropout(c.dropout));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx, LayerCache* cache) {
  const int64_t B = x.size(0), T = x.size(1), H = cfg.heads, D = cfg.head_dim(), C = cfg.dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto parts = qkv(x).view({B, T, 3, H, D}).permute({2, 0, 3, 1, 4});  // [3,B,H,T,D]
  auto q = parts[0], k = parts[1], v = parts[2];                        // [B,H,T,D]

  torch::Tensor y;
  if (!cache) {
    // Training: one baddbmm computes scale*q·kᵀ + causal bias in a single
    // pass over the T×T scores (no separate scaling and masking copies).
    auto q3 = q.reshape({B * H, T, D}), k3 = k.reshape({B * H, T, D}), v3 = v.reshape({B * H, T, D});
    auto scores = torch::baddbmm(ctx.bias, q3, k3.transpose(1, 2), /*beta=*/1.0, /*alpha=*/scale);  // [B*H,T,T]
    y = torch::bmm(torch::softmax(scores, -1), v3).view({B, H, T, D});
  } else {
    // Incremental: write the new keys and values at each sequence's own
    // positions, then attend over the first `span` slots.
    auto rows = torch::arange(B, ctx.positions.options()).unsqueeze(1).expand({B, T});  // [B,T]
    cache->k.index_put_({rows, Slice(), ctx.positions}, k.transpose(1, 2).to(cache->k.dtype()));  // values [B,T,H,D]
    cache->v.index_put_({rows, Slice(), ctx.positions}, v.transpose(1, 2).to(cache->v.dtype()));
    auto keys = cache->k.index({Slice(), Slice(), Slice(0, ctx.span)}).to(q.dtype());    // [B,H,L,D]
    auto values = cache->v.index({Slice(), Slice(), Slice(0, ctx.span)}).to(q.dtype());  // [B,H,L,D]
    auto scores = torch::matmul(q, keys.transpose(-2, -1)) * scale + ctx.bias;  // [B,H,T,L]
    y = torch::matmul(torch::softmax(scores, -1), values);                       // [B,H,T,D]
  }
  y = y.transpose(1, 2).reshape({B, T, C});  // [B,T,C]
  return drop(proj(y));
}

}  // namespace zl
