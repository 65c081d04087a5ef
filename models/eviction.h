// KV cache eviction, for the known methods of issue 13 that bound the cache:
//
// - streaming: StreamingLLM (Xiao et al., "Efficient Streaming Language
//   Models with Attention Sinks", ICLR 2024, §3.2 "Rolling KV cache with
//   attention sinks"): the cache keeps the first `sinks` tokens (4 in the
//   paper, "just 4 initial tokens sufficing"; the authors' StartRecentKVCache
//   defaults to start_size 4) and a rolling window of the most recent `window`.
// - h2o: Heavy-Hitter Oracle (Zhang et al., NeurIPS 2023, §4, Algorithm 1,
//   the greedy H2 eviction policy): each token's accumulated attention
//   score, o_s = the sum over every query that saw it of the attention
//   weight it received, decides; at each step the held token outside the
//   recent window with the least score goes. The paper keeps 20% of the
//   cache ("H2O with 20% heavy hitters", abstract and experiments), which
//   the authors' code splits into 10% heavy hitters and 10% recent tokens
//   (FMInference/H2O, h2o_hf scripts: --heavy_ratio 0.1 --recent_ratio 0.1).
//
// How a cache evicts (models/kv_cache.h): a sequence's cache holds at most
// `budget` tokens between steps. Every token, the prompt's included, goes
// through it one at a time: Algorithm 1 runs over the whole sequence (and
// the H2O authors' accuracy runs mask token by token over the prompt too),
// and a stream has no prompt apart. A new token is written in the free slot
// after the held ones, attends over them and itself (budget + 1 keys, as in
// both papers' code, which trim the cache after the forward), its attention
// weights are added to the held tokens' scores (h2o), and then, if the cache
// holds budget + 1, one token is evicted: the newest is moved into the
// victim's slot, so the held tokens always fill slots 0..held-1 and the
// tensors need budget + 1 slots, not model.context. Every layer and head
// evicts on its own (H2O selects heavy hitters per head; for streaming all
// heads agree), so slot j of two heads may hold different tokens: attention
// is a sum over the held keys, whose order does not matter, because each
// key and value already carries its position (learned absolute positions
// are added to the embedding; see models/transformer.h).
//
// Positions. StreamingLLM §3.2 assigns positions within the cache rather than
// in the text (cache [0,1,2,3,6,7,8], the 9th token decoded at position 7),
// for relative encodings (RoPE, ALiBi) whose cached keys are re-positioned at
// every step. This model's positions are a learned table added to the token
// embedding before the first block, so a cached key and value carry the
// position their token was fed at through every layer and cannot be re-
// positioned without recomputing them (the paper's "sliding window with
// re-computation" baseline, Fig. 1c). By default (`text`) each token is fed
// at its position in the text, which here never leaves the trained range
// (a decode keeps prompt + continuation within model.context): the query-key
// distances are then the true ones. The other reading (`cache`,
// streaming.positions) feeds each new token at its index in the cache,
// min(tokens held, budget): what §3.2's rule gives for the newest token, while
// the cached ones keep the index they were fed at. Once the cache is full,
// every new token then enters at the same position, `budget`.
#pragma once
#include <torch/torch.h>

#include <cstdint>

namespace zl {

struct EvictionOptions {
  enum class Policy { None, Streaming, H2O };
  Policy policy = Policy::None;  // None: the plain cache, which keeps every token
  int64_t budget = 0;            // tokens a sequence's cache keeps between steps (streaming: sinks + window)
  int64_t sinks = 0;             // streaming: the first tokens, never evicted (the paper: 4)
  int64_t recent = 0;            // h2o: the most recent tokens, never evicted; budget - recent are heavy hitters
  bool cache_positions = false;  // feed a new token at its index in the cache, not in the text (see above)

  bool on() const { return policy != Policy::None; }
};

// The slot to evict, among the n = budget + 1 slots a head holds while a new
// token attends: `order` [n] is each slot's position in the text (the newest
// token has the largest), `score` [n] its accumulated attention (h2o only;
// may be null for streaming).
// - streaming: the oldest token past the sinks (order >= sinks, least order);
// - h2o: among the tokens outside the `recent` newest (order <= newest −
//   recent), the least score; a tie goes to the older token.
// On CPU arrays, for the fast decode step (models/decode_step.h).
int64_t eviction_victim(const EvictionOptions& e, const int32_t* order, const float* score, int64_t n);

// The same rule for every head at once, in tensor operations, for the
// reference step (models/attention.cpp): order [H,n] int32, score [H,n]
// float (undefined for streaming) -> [H] int64 victim slots.
torch::Tensor eviction_victims(const EvictionOptions& e, const torch::Tensor& order, const torch::Tensor& score);

}  // namespace zl
