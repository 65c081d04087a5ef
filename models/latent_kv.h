// latent_kv (issue 13 §3): keys and values compressed to one latent c of r
// values per token and layer, the only thing the KV cache holds, and
// up-projected per head. Two ways to get the factors (latent.mode):
//
// trained: Multi-head Latent Attention as DeepSeek-V2 trains it from scratch
// (DeepSeek-AI 2024, §2.1.2 "Low-Rank Key-Value Joint Compression"):
//
//   c_t = W^DKV h_t        (r = d_c values, cached)                   (eq. 9)
//   k_t = W^UK c_t,  v_t = W^UV c_t   (C = n_h·d_h each, split by head) (eq. 10, 11)
//
// with the queries from h_t as in the baseline (W^Q h_t). The paper's model
// (§3.1.2) puts an RMSNorm after each compressed latent (latent.norm, on by
// default, eps 1e-6 as its released code); the cache holds c after it, the
// norm being per token. Its d_c = 512 = 4·d_h (d_h = 128), the default rank
// here (latent.rank = auto: 4·head width, at most model.dim, beyond which a
// latent of the C-wide input holds nothing more). DeepSeek-V2 also
// compresses the queries (d'_c), which saves training activations and no
// cache: not done here.
//
// Positions. §2.1.3 adds "decoupled RoPE" (a shared key k^R and per-head
// queries q^R carrying RoPE) only because RoPE, applied to keys after W^UK,
// would stop W^UK from being absorbed into the query at inference. This
// model has no RoPE: its positions are learned embeddings added to the token
// embedding at the input (models/transformer.h), so they reach c through
// h_t and no rotation sits between c and the score. Hence no decoupled key:
// W^UK absorbs exactly and the cache is c alone (MLA's cache less its
// d_h^R RoPE part). latent_kv is not combined with alibi (its own variant).
//
// svd: fitted after training, as Palu does (Chang et al., ICLR 2025): the
// trained baseline's key and value projections are factorised by truncated
// SVD, W ≈ B·A with A = √Σ_r V_rᵀ (down, its output cached) and
// B = U_r √Σ_r (up); nothing is retrained. Palu's defaults, each a key:
// - W_K and W_V factorised apart (latent.svd_factor = separate: r/2 each);
//   joint factorises [W_K; W_V] at rank r, MLA's layout.
// - group-head decomposition G-LRD, one factorisation per group of 4 heads
//   (latent.svd_group = 4, the group size of Palu's README and compress.py);
//   a group of every head is J-LRD, of one head M-LRD. The up-projection is
//   then block-diagonal: each head reads its own group's part of c.
// - whitening (latent.svd_whiten, from SVD-LLM, in Palu's compress_model_whiten):
//   the SVD of W·S, S the Cholesky factor of the Gram XᵀX of the layer's
//   inputs over calibration windows (Palu: 256; latent.svd_calib_windows),
//   then A = √Σ_r V_rᵀ S⁻¹, which minimises the error of the projections'
//   outputs on those inputs instead of the weights'.
// - 50% of the K/V cache (Palu's main setting): latent.rank = auto is
//   model.dim in this mode, the same r for every layer (Palu's "uniform"
//   search; its Fisher-information rank allocation is not done, nor its
//   latent quantisation, Hadamard transform or kernels).
//
// Full rank. [W_K; W_V] has rank at most C (its input is C wide), so the
// joint latent at r = C is lossless; each of W_K, W_V separately is lossless
// at C, so separate needs r = 2C. At that rank the logits equal the
// baseline's (tested to 1e-4); LatentSvdOptions::full_rank is the widest
// rank the config accepts.
//
// Attention (models/attention.cpp): with r > 0, attention's qkv holds W^Q
// [C,C] over W^DKV [r,C] (one product gives q and c) and kv_up holds W^UK over
// W^UV [2C,r]. Training and full forwards up-project keys and values and
// attend as the baseline does (eq. 10-11). Decoding on the cache absorbs
// them per head as §2.1.2 describes: q̃_h = W^UK_hᵀ q_h [r], scores
// q̃_h·c_j/sqrt(d_h), the mix o_h = Σ_j a_j c_j [r], and y_h = W^UV_h o_h, so
// the cached latents are never up-projected (sim/cost.cpp counts this form,
// over all r even where a block-diagonal factor holds zeros). The fast CPU
// step (models/decode_step.h) does not serve it.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "models/latent_options.h"
#include "models/transformer.h"

namespace zl {

// Per token: x [..,r] -> x / sqrt(mean(x²) + eps) · gain (RMSNorm, Zhang &
// Sennrich 2019; LibTorch 1.13 has none).
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& gain, double eps = 1e-6);

// Per layer, the Gram XᵀX [C,C] (float64, CPU) of attention's inputs (the
// block's ln1 output) over every token of `windows` (each [B,T] tokens):
// the calibration statistic of Palu's whitening.
std::vector<torch::Tensor> attention_input_grams(Transformer& model, const std::vector<torch::Tensor>& windows);

// Palu-style post-training factorisation of every layer's trained K and V
// projections, in place: the model's attention becomes latent
// (cfg.latent_rank = o.rank). The model must be the baseline's network,
// unfactorised. `grams` (one per layer, from attention_input_grams) are
// needed for o.whiten and, when given, also measure the error. Returns the
// mean over layers of the relative error of [W_K; W_V]: of its outputs on the
// calibration inputs, ‖(W − B·A) S‖_F / ‖W S‖_F, with grams, else of the
// weights (0 at full rank, up to rounding).
double fit_latent_svd(Transformer& model, const LatentSvdOptions& o, const std::vector<torch::Tensor>& grams = {});

}  // namespace zl
