#include "models/latent_kv.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace zl {

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& gain, double eps) {
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * gain;
}

namespace {

// Every block keeps its attention input while it lives (and forgets it after,
// an exception included).
struct CaptureAttentionInputs {
  explicit CaptureAttentionInputs(Transformer& m) {
    for (const auto& b : *m->blocks) blocks.push_back(b->as<Block>());
    for (auto* b : blocks) b->capture_attn_input = true;
  }
  ~CaptureAttentionInputs() {
    for (auto* b : blocks) {
      b->capture_attn_input = false;
      b->last_attn_input = torch::Tensor();
    }
  }
  std::vector<BlockImpl*> blocks;
};

// The rows of [W_K; W_V] ([2C,C]) that each block factorises apart: per group
// of g heads (g·D rows of W_K, or of W_V), K and V apart or together.
std::vector<torch::Tensor> block_rows(int64_t C, int64_t heads, const LatentSvdOptions& o) {
  const int64_t g = o.group(heads), groups = heads / g, w = g * (C / heads);
  auto span = [&](int64_t start) { return torch::arange(start, start + w, torch::kLong); };
  std::vector<torch::Tensor> rows;
  if (o.separate) {
    for (int64_t kind = 0; kind < 2; ++kind)  // W_K's rows start at 0, W_V's at C
      for (int64_t i = 0; i < groups; ++i) rows.push_back(span(kind * C + i * w));
  } else {
    for (int64_t i = 0; i < groups; ++i) rows.push_back(torch::cat({span(i * w), span(C + i * w)}));
  }
  return rows;
}

// S with S Sᵀ = gram (lower Cholesky). A Gram that is not positive definite
// is shifted as Palu's code shifts it: by minus its smallest eigenvalue, plus
// 1e-3. Palu shifts only when the factorisation fails; here also when the
// smallest eigenvalue is below 1e-10 of the largest, because a Gram singular
// up to rounding (LayerNorm's outputs sum to β's sum: without a bias they
// span C − 1 dimensions) can pass with a pivot of rounding size, whose
// inverse would swamp A = √Σ Vᵀ S⁻¹.
torch::Tensor cholesky_of(const torch::Tensor& gram) {
  auto eig = torch::linalg_eigvalsh(gram);  // ascending
  const double low = eig[0].item<double>(), high = eig[-1].item<double>();
  if (low > 1e-10 * high) {
    auto [s, info] = torch::linalg_cholesky_ex(gram);
    if (info.item<int64_t>() == 0) return s;
  }
  return torch::linalg_cholesky(gram + (1e-3 - low) * torch::eye(gram.size(0), gram.options()));
}

// Truncated SVD of w [m,C] (float64) at rank r: up B = U_r √Σ_r [m,r], down
// A = √Σ_r V_rᵀ [r,C], so that B·A is the best rank-r approximation of w in
// Frobenius norm (Eckart–Young); whitened by s (defined), of w·s instead, and
// A = √Σ_r V_rᵀ s⁻¹, the best for the outputs on the inputs s describes. The
// singular values are split evenly between the factors, as Palu's code does.
std::pair<torch::Tensor, torch::Tensor> factorise(const torch::Tensor& w, int64_t r, const torch::Tensor& s) {
  auto [u, sv, vh] = torch::linalg_svd(s.defined() ? w.matmul(s) : w, /*full_matrices=*/false);  // [m,k], [k], [k,C]
  auto root = sv.narrow(0, 0, r).sqrt();                                                       // [r]
  auto up = u.narrow(1, 0, r) * root.unsqueeze(0);                                             // [m,r]
  auto down = root.unsqueeze(1) * vh.narrow(0, 0, r);                                          // [r,C]
  if (s.defined()) down = torch::linalg_solve_triangular(s, down, /*upper=*/false, /*left=*/false);  // down·s⁻¹
  return {up, down};
}

}  // namespace

std::vector<torch::Tensor> attention_input_grams(Transformer& model, const std::vector<torch::Tensor>& windows) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  const int64_t C = model->cfg.dim;
  const auto device = model->wte->weight.device();
  std::vector<torch::Tensor> grams;
  {
    CaptureAttentionInputs capture(model);
    for (size_t l = 0; l < capture.blocks.size(); ++l) grams.push_back(torch::zeros({C, C}, torch::kDouble));
    for (const auto& x : windows) {
      model->forward(x.to(device));
      for (size_t l = 0; l < capture.blocks.size(); ++l) {
        auto a = capture.blocks[l]->last_attn_input.reshape({-1, C}).to(torch::kCPU, torch::kDouble);  // [B·T,C]
        grams[l] += a.t().matmul(a);
      }
    }
  }
  model->train(was_training);
  return grams;
}

double fit_latent_svd(Transformer& model, const LatentSvdOptions& o, const std::vector<torch::Tensor>& grams) {
  const int64_t C = model->cfg.dim, H = model->cfg.heads;
  if (model->cfg.latent_rank > 0) throw std::invalid_argument("fit_latent_svd: the model's attention is latent already");
  const std::string problem = o.problem(C, H);
  if (!problem.empty()) throw std::invalid_argument("fit_latent_svd: " + problem);
  if ((o.whiten || !grams.empty()) && grams.size() != model->blocks->size())
    throw std::invalid_argument("fit_latent_svd: " + std::to_string(grams.size()) + " input Grams for " +
                                std::to_string(model->blocks->size()) + " layers" +
                                (o.whiten ? " (whitening needs one per layer)" : ""));
  const auto rows = block_rows(C, H, o);
  const int64_t rb = o.rank / static_cast<int64_t>(rows.size());
  torch::NoGradGuard no_grad;
  double error = 0;
  for (size_t l = 0; l < model->blocks->size(); ++l) {
    auto& attn = model->blocks[l]->as<Block>()->attn;
    const auto& weight = attn->qkv->weight;  // [3C,C]: W_Q over W_K over W_V
    TORCH_CHECK(weight.size(0) == 3 * C, "fit_latent_svd: qkv is ", weight.sizes(), ", not [3C,C]");
    auto kv = weight.narrow(0, C, 2 * C).to(torch::kCPU, torch::kDouble);  // [2C,C]: W_K over W_V
    auto gram = grams.empty() ? torch::Tensor() : grams[l].to(torch::kCPU, torch::kDouble);
    auto s = o.whiten ? cholesky_of(gram) : torch::Tensor();
    // B is block-diagonal: block b's rows of [W_K; W_V] read its r/blocks
    // columns of c alone; A stacks the blocks' down-projections.
    auto up = torch::zeros({2 * C, o.rank}, kv.options());  // [2C,r]
    auto down = torch::zeros({o.rank, C}, kv.options());    // [r,C]
    for (size_t b = 0; b < rows.size(); ++b) {
      auto [u, d] = factorise(kv.index_select(0, rows[b]), rb, s);
      up.narrow(1, static_cast<int64_t>(b) * rb, rb).index_copy_(0, rows[b], u);
      down.narrow(0, static_cast<int64_t>(b) * rb, rb).copy_(d);
    }
    auto diff = kv - up.matmul(down);  // [2C,C]
    error += gram.defined() ? std::sqrt((diff.matmul(gram) * diff).sum().item<double>() /
                                        std::max((kv.matmul(gram) * kv).sum().item<double>(), 1e-300))
                            : (diff.norm() / kv.norm().clamp_min(1e-300)).item<double>();
    // qkv becomes W_Q over A [C+r,C] in place (no new module, so no draw from
    // the generator); kv_up is B [2C,r].
    auto opts = weight.options();
    weight.set_data(torch::cat({weight.narrow(0, 0, C), down.to(opts)}, 0).contiguous());
    attn->kv_up = attn->register_parameter("kv_up", up.to(opts).contiguous());
    attn->cfg.latent_rank = o.rank;
  }
  model->cfg.latent_rank = o.rank;
  return error / static_cast<double>(model->blocks->size());
}

}  // namespace zl
