// latent_kv (issue 13 §3): keys and values compressed jointly to one latent
// c of r values per token and layer, the only thing the KV cache holds, and
// up-projected per head. Two ways to get the factors (latent.mode):
//
// trained: Multi-head Latent Attention as DeepSeek-V2 trains it from
// scratch (DeepSeek-AI 2024, §2.1.2 "Low-Rank Key-Value Joint Compression"):
//
//   c_t = W^DKV h_t        (r = d_c values, cached)                   (eq. 9)
//   k_t = W^UK c_t,  v_t = W^UV c_t   (C = n_h·d_h each, split by head) (eq. 10, 11)
//
// with the queries from h_t as in the baseline (W^Q h_t). §3.1.2 adds an
// RMSNorm after each compressed latent (latent.norm, on by default); the
// cache holds c after it, the norm being per token. DeepSeek-V2 compresses
// the queries too (d'_c), which saves training activations but no cache: not
// done here. Its default d_c = 4·d_h (512 for d_h = 128, §3.1.2).
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
// svd: fitted after training, as Palu (Chang et al., ICLR 2025) does: the
// trained baseline's key and value projections are factorised by truncated
// SVD, W ≈ U_r Σ_r V_rᵀ, split as A = √Σ_r V_rᵀ (down, [r,C], its output
// cached) and B = U_r √Σ_r (up, [·,r]); nothing is retrained. Granularity
// (Palu §3.2 "decomposition granularity": per-head M-LRD, group-head G-LRD,
// joint-head J-LRD): we follow J-LRD, one decomposition over all heads, the
// one whose cache is MLA's (one latent shared by every head). Palu's default
// G-LRD with groups of 4 heads is J-LRD for this model's 4 heads; M-LRD and
// smaller groups are not implemented. Palu factorises W_K and W_V apart
// (latent.svd_factor = separate: r/2 each, the up-projection block-diagonal);
// the default factorises them jointly, [W_K; W_V] [2C,C] at rank r (= joint),
// MLA's layout, which for a given total rank is never worse in Frobenius
// error (a rank-r/2 pair is one rank-r candidate). Palu's Fisher-information
// rank search, quantisation and whitening are not done: a uniform rank, plain
// SVD of the weights.
//
// Full rank: [W_K; W_V] has rank at most C (its input is C wide), so the
// joint latent at r = C is lossless: the logits equal the baseline's
// (tested to 1e-4) with half the baseline's cache; separate is lossless at
// r = 2C. Those are the widest ranks the config accepts.
//
// Attention (models/attention.cpp): with r > 0, attention's qkv holds W^Q
// [C,C] over W^DKV [r,C] (one product gives q and c) and kv_up holds W^UK over
// W^UV [2C,r]. Training and full forwards up-project keys and values and
// attend as the baseline does (eq. 10-11). Decoding on the cache absorbs
// them per head as §2.1.2 describes: q̃_h = W^UK_hᵀ q_h [r], scores
// q̃_h·c_j/sqrt(d_h), the mix o_h = Σ_j a_j c_j [r], and y_h = W^UV_h o_h, so
// the cached latents are never up-projected (sim/cost.cpp counts this form).
// The fast CPU step (models/decode_step.h) does not serve it.
#pragma once
#include <torch/torch.h>

#include <cstdint>

#include "models/transformer.h"

namespace zl {

// The widest latent the factorisation of [W_K; W_V] can use: model.dim
// (joint) or 2·model.dim (separate, model.dim each).
int64_t latent_full_rank(int64_t dim, bool separate);

// Per token: x [..,r] -> x / sqrt(mean(x²) + eps) · gain (RMSNorm, Zhang &
// Sennrich 2019; LibTorch 1.13 has none).
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& gain, double eps = 1e-6);

// Palu-style post-training factorisation of every layer's trained K and V
// projections to rank r (separate: r/2 for each, r even), in place: the
// model's attention becomes latent (cfg.latent_rank = r). The model must be
// the baseline's network, unfactorised. Returns the mean over layers of the
// relative Frobenius error ‖[W_K; W_V] − B·A‖ / ‖[W_K; W_V]‖ (0 at full rank,
// up to rounding).
double fit_latent_svd(Transformer& model, int64_t rank, bool separate);

}  // namespace zl
