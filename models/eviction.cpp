#include "models/eviction.h"

#include <algorithm>
#include <limits>

namespace zl {

int64_t eviction_victim(const EvictionOptions& e, const int32_t* order, const float* score, int64_t n) {
  int64_t victim = -1;
  if (e.policy == EvictionOptions::Policy::Streaming) {
    // The window rolls: its oldest token goes; the sinks stay.
    for (int64_t j = 0; j < n; ++j)
      if (order[j] >= e.sinks && (victim < 0 || order[j] < order[victim])) victim = j;
  } else if (e.policy == EvictionOptions::Policy::H2O) {
    int32_t newest = order[0];
    for (int64_t j = 1; j < n; ++j) newest = std::max(newest, order[j]);
    const int64_t last_candidate = static_cast<int64_t>(newest) - e.recent;  // older than the recent window
    for (int64_t j = 0; j < n; ++j) {
      if (order[j] > last_candidate) continue;
      if (victim < 0 || score[j] < score[victim] || (score[j] == score[victim] && order[j] < order[victim])) victim = j;
    }
  }
  TORCH_CHECK(victim >= 0, "eviction: no token may be evicted among ", n, " (budget ", e.budget, ")");
  return victim;
}

torch::Tensor eviction_victims(const EvictionOptions& e, const torch::Tensor& order, const torch::Tensor& score) {
  auto pos = order.to(torch::kLong);                               // [H,n]
  const int64_t big = std::numeric_limits<int32_t>::max();
  if (e.policy == EvictionOptions::Policy::Streaming)
    return torch::where(pos >= e.sinks, pos, torch::full_like(pos, big)).argmin(-1);  // [H]
  TORCH_CHECK(e.policy == EvictionOptions::Policy::H2O, "eviction_victims: no eviction policy");
  auto newest = std::get<0>(pos.max(-1, /*keepdim=*/true));         // [H,1]
  auto candidate = pos <= newest - e.recent;                        // [H,n]
  auto s = torch::where(candidate, score, torch::full_like(score, std::numeric_limits<float>::infinity()));
  auto least = std::get<0>(s.min(-1, /*keepdim=*/true));            // [H,1]
  auto tied = candidate & (s == least);                             // the least-scored candidates
  return torch::where(tied, pos, torch::full_like(pos, big)).argmin(-1);  // the oldest of them, [H]
}

}  // namespace zl
