// How variant latent_kv's svd mode factorises the trained K/V projections
// (Palu, Chang et al., ICLR 2025; models/latent_kv.h), filled once from the
// run config (sim/model_options.h: latent_svd_options). Header-only and
// free of LibTorch, so that the config's validation and the factorisation
// read one rule for what a rank may be.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

namespace zl {

struct LatentSvdOptions {
  int64_t rank = 0;          // r: latent values cached per token and layer, over all blocks
  bool separate = true;      // W_K and W_V factorised apart (Palu) or [W_K; W_V] together (MLA's layout)
  int64_t group_heads = 4;   // heads per group (Palu §3.2 G-LRD, its default 4); >= heads: J-LRD, 1: M-LRD
  bool whiten = true;        // SVD of W·S, S S^T the Gram of the layer's inputs (Palu's code, from SVD-LLM)

  // Heads per group as used: a group never spans more than the model's heads.
  int64_t group(int64_t heads) const { return std::min(group_heads, heads); }
  // Blocks factorised apart, each to rank / blocks: (K, V) or (K with V), per group.
  int64_t blocks(int64_t heads) const { return (separate ? 2 : 1) * (heads / group(heads)); }
  // The widest total rank: each block's matrix [rows, C] has rank at most
  // min(rows, C); rows = g·D (separate) or 2·g·D (joint).
  int64_t full_rank(int64_t dim, int64_t heads) const {
    const int64_t rows = (separate ? 1 : 2) * group(heads) * (dim / heads);
    return blocks(heads) * std::min(rows, dim);
  }
  // What is wrong with these options for a model of `dim` and `heads` ("" if
  // nothing), naming the key a user would change.
  std::string problem(int64_t dim, int64_t heads) const {
    if (group_heads < 1) return "latent.svd_group: must be at least 1";
    if (heads % group(heads) != 0)
      return "latent.svd_group: " + std::to_string(group_heads) + " heads per group must divide model.heads (" +
             std::to_string(heads) + ")";
    if (rank < 1) return "latent.rank: must be at least 1";
    if (rank % blocks(heads) != 0)
      return "latent.rank: resolves to " + std::to_string(rank) + ", not a multiple of the " +
             std::to_string(blocks(heads)) + " blocks factorised apart (" + (separate ? "K and V" : "K with V") +
             ", per group of " + std::to_string(group(heads)) + " heads)";
    if (rank > full_rank(dim, heads))
      return "latent.rank: resolves to " + std::to_string(rank) + ", above the full rank " +
             std::to_string(full_rank(dim, heads)) + " of the factorised K/V projections (model.dim " +
             std::to_string(dim) + ", " + std::to_string(blocks(heads)) + " blocks)";
    return "";
  }
};

}  // namespace zl
