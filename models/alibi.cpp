#include "models/alibi.h"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace zl {

std::vector<double> alibi_slopes(int64_t heads, double max_bias) {
  if (heads < 1) throw std::invalid_argument("alibi_slopes: heads must be >= 1");
  // The power-of-two sequence: start and ratio 2^(−max_bias/n).
  auto geometric = [max_bias](int64_t n) {
    std::vector<double> s(n);
    for (int64_t h = 1; h <= n; ++h) s[h - 1] = std::exp2(-max_bias * static_cast<double>(h) / static_cast<double>(n));
    return s;
  };
  int64_t lower = 1;  // n' = 2^⌊log2 heads⌋
  while (lower * 2 <= heads) lower *= 2;
  std::vector<double> slopes = geometric(lower);
  if (lower == heads) return slopes;
  // The remaining heads take the odd-numbered slopes of the 2n' sequence,
  // which interleave those of n' (the authors' code; see alibi.h).
  const std::vector<double> finer = geometric(2 * lower);
  for (int64_t k = 0; static_cast<int64_t>(slopes.size()) < heads; k += 2) slopes.push_back(finer[k]);
  return slopes;
}

torch::Tensor alibi_bias(const std::vector<double>& slopes, const torch::Tensor& query_pos,
                         const torch::Tensor& key_pos) {
  const int64_t H = static_cast<int64_t>(slopes.size());
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(query_pos.device());
  auto distance = (query_pos.to(torch::kFloat) - key_pos.to(torch::kFloat)).clamp_min(0).unsqueeze(-3);  // [..,1,T,L]
  auto m = torch::tensor(std::vector<float>(slopes.begin(), slopes.end()), opts).view({H, 1, 1});      // [H,1,1]
  return distance * -m;                                                                                 // [..,H,T,L]
}

AlibiHook::AlibiHook(std::vector<double> slopes) : slopes_(std::move(slopes)) {
  for (double m : slopes_) slopes_float_.push_back(static_cast<float>(m));
}

torch::Tensor AlibiHook::adjust_scores(const torch::Tensor& scores, const ScoreSite& site) const {
  // query_pos [B|1,T] -> [B|1,T,1], key_pos [L] -> [1,L]: the bias [B|1,H,T,L],
  // the same in every layer of a call: made at the first (ScoreSite::memo).
  if (site.memo && site.memo->defined()) return scores + *site.memo;
  auto bias = alibi_bias(slopes_, site.query_pos.unsqueeze(-1), site.key_pos.view({1, -1}))
                  .to(scores.device(), scores.scalar_type());
  if (site.memo) *site.memo = bias;
  return scores + bias;
}

void AlibiHook::adjust_score_row(float* scores, int64_t n, const ScoreRow& row) const {
  const float slope = slopes_float_[row.head];
  for (int64_t j = 0; j < n; ++j) scores[j] -= slope * static_cast<float>(row.position - j);
}

}  // namespace zl
