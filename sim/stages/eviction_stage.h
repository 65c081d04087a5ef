// Variants streaming (StreamingLLM, Xiao et al., ICLR 2024, §3.2) and h2o
// (Heavy-Hitter Oracle, Zhang et al., NeurIPS 2023, §4, Algorithm 1): the
// baseline's checkpoint decoded with a KV cache that evicts
// (models/eviction.h), on the fast step or the reference step alike.
//
// Metrics beside every run's: `kv_bytes_per_token` is what the cache held
// per token fed, mean over the decode, and `kv_bytes_peak` the most one
// sequence's cache held (sim/decoder.h), both from the cache's tensors, so
// that a comparison like S000-kv's can be made against the baseline's;
// `kv_bytes_per_token_eviction` the eviction's own bookkeeping per held token
// (each slot's position, and h2o's scores); `eviction_budget` the tokens
// kept. FLOPs: attention over at most budget + 1 keys, and `flops_eviction`
// for the bookkeeping (h2o: a score add per key and head; both: the victim's
// search over the held keys of each head).
#pragma once
#include <memory>

#include "sim/stages/variant.h"

namespace zl {

std::unique_ptr<VariantStage> make_eviction_stage(const RunConfig& cfg);

}  // namespace zl
