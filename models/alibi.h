// ALiBi, attention with linear biases (Press, Smith and Lewis, "Train Short,
// Test Long", ICLR 2022), variant `alibi`. The model has no position
// embeddings (§3: none are added, at the input or anywhere else); instead
// each head h adds a static, untrained penalty to the score of query i on key
// j <= i, linear in their distance:
//
//   softmax(q_i·Kᵀ/sqrt(D) + m_h · [−(i−1), ..., −1, 0])                 (§3)
//
// i.e. −m_h·(i − j) on key j. The slopes (§3): for n heads, the geometric
// sequence that starts at 2^(−8/n) and uses that value as its ratio (8 heads:
// 1/2, 1/4, ..., 1/256). §3 states the rule for powers of two; for another
// head count we follow the authors' released code: the n' = 2^⌊log2 n⌋
// slopes of the nearest lower power of two, then the first n − n' of every
// other slope of the 2n' sequence (2^(−8·1/2n'), 2^(−8·3/2n'), ...), the
// ones that lie between those already taken. The 8 is alibi.max_bias.
//
// Distances are between absolute positions: in training query i and key j of
// one window, with the KV cache a query at position p and the key cached at
// slot j (the keys' slots are their positions, models/kv_cache.h), so a step
// on the cache scores exactly as the full forward does. The bias is added to
// the masked scores by a score hook (models/attention_hook.h), AlibiHook
// below, which the transformer installs on itself when cfg.alibi is set
// (the paper folds it into the mask, §3; the sum is the same).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/attention_hook.h"

namespace zl {

// m_h for h = 1..heads (index h−1), largest first for a power of two.
std::vector<double> alibi_slopes(int64_t heads, double max_bias = 8);

// The bias −m_h·max(p − j, 0) [.., H, T, L] for query positions `query_pos`
// [..., T, 1] and key positions `key_pos` [..., 1, L] (any broadcastable
// integer or float tensors); float32 on their device. Future keys (j > p)
// get 0 here: the causal mask hides them.
torch::Tensor alibi_bias(const std::vector<double>& slopes, const torch::Tensor& query_pos,
                         const torch::Tensor& key_pos);

// ALiBi as a score hook: −m_h·(p − j) on the score of query p on key j, head h.
class AlibiHook : public AttentionHook {
 public:
  explicit AlibiHook(std::vector<double> slopes);
  std::string name() const override { return "ALiBi"; }
  bool uses_scores() const override { return true; }
  torch::Tensor adjust_scores(const torch::Tensor& scores, const ScoreSite& site) const override;  // [B,H,T,L]
  void adjust_score_row(float* scores, int64_t n, const ScoreRow& row) const override;
  const std::vector<double>& slopes() const { return slopes_; }

 private:
  std::vector<double> slopes_;      // m_h per head
  std::vector<float> slopes_float_;  // the same, as the fast step subtracts them
};

}  // namespace zl
