#include "models/latent_kv.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace zl {

int64_t latent_full_rank(int64_t dim, bool separate) { return separate ? 2 * dim : dim; }

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& gain, double eps) {
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * gain;
}

namespace {

// Truncated SVD of w [m,C] (float64) at rank r: up B = U_r √Σ_r [m,r], down
// A = √Σ_r V_rᵀ [r,C], so that B·A is the best rank-r approximation of w in
// Frobenius norm (Eckart–Young). The singular values are split evenly
// between the factors, so neither carries the scale alone.
std::pair<torch::Tensor, torch::Tensor> factorise(const torch::Tensor& w, int64_t r) {
  auto [u, s, vh] = torch::linalg_svd(w, /*full_matrices=*/false);  // u [m,k], s [k], vh [k,C]
  auto root = s.narrow(0, 0, r).sqrt();                               // [r]
  auto up = u.narrow(1, 0, r) * root.unsqueeze(0);                    // [m,r]
  auto down = root.unsqueeze(1) * vh.narrow(0, 0, r);                 // [r,C]
  return {up, down};
}

}  // namespace

double fit_latent_svd(Transformer& model, int64_t rank, bool separate) {
  const int64_t C = model->cfg.dim;
  if (model->cfg.latent_rank > 0) throw std::invalid_argument("fit_latent_svd: the model's attention is latent already");
  if (rank < 1 || rank > latent_full_rank(C, separate) || (separate && rank % 2 != 0))
    throw std::invalid_argument("fit_latent_svd: rank " + std::to_string(rank) + " outside [1, " +
                                std::to_string(latent_full_rank(C, separate)) + "]" +
                                (separate ? " or odd (separate: r/2 for K and for V)" : ""));
  torch::NoGradGuard no_grad;
  double error = 0;
  for (const auto& b : *model->blocks) {
    auto& attn = b->as<Block>()->attn;
    const auto& weight = attn->qkv->weight;  // [3C,C]: W_Q over W_K over W_V
    TORCH_CHECK(weight.size(0) == 3 * C, "fit_latent_svd: qkv is ", weight.sizes(), ", not [3C,C]");
    auto kv = weight.narrow(0, C, 2 * C).to(torch::kDouble).cpu();  // [2C,C]: W_K over W_V
    torch::Tensor up, down;                                         // [2C,r], [r,C]
    if (!separate) {
      std::tie(up, down) = factorise(kv, rank);
    } else {
      // Palu's own: W_K and W_V apart, each to r/2; c = [c_K; c_V], and the
      // up-projection is block-diagonal (keys read c_K only, values c_V).
      const int64_t h = rank / 2;
      auto [up_k, down_k] = factorise(kv.narrow(0, 0, C), h);
      auto [up_v, down_v] = factorise(kv.narrow(0, C, C), h);
      up = torch::zeros({2 * C, rank}, kv.options());
      up.narrow(0, 0, C).narrow(1, 0, h).copy_(up_k);
      up.narrow(0, C, C).narrow(1, h, h).copy_(up_v);
      down = torch::cat({down_k, down_v}, 0);
    }
    error += ((kv - up.matmul(down)).norm() / kv.norm().clamp_min(1e-30)).item<double>();
    // qkv becomes W_Q over A [C+r,C] in place (no new module, so no draw from
    // the generator); kv_up is B [2C,r].
    auto opts = weight.options();
    weight.set_data(torch::cat({weight.narrow(0, 0, C), down.to(opts)}, 0).contiguous());
    attn->kv_up = attn->register_parameter("kv_up", up.to(opts).contiguous());
    attn->cfg.latent_rank = rank;
  }
  model->cfg.latent_rank = rank;
  return error / static_cast<double>(model->blocks->size());
}

}  // namespace zl
