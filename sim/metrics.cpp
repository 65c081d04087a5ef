#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace zl {

double repetition_rate(const std::vector<std::vector<int32_t>>& generations, int n) {
  int64_t total = 0, repeated = 0;
  for (const auto& g : generations) {
    std::set<std::vector<int32_t>> seen;
    for (size_t i = 0; i + n <= g.size(); ++i) {
      std::vector<int32_t> gram(g.begin() + i, g.begin() + i + n);
      ++total;
      if (!seen.insert(gram).second) ++repeated;
    }
  }
  return total == 0 ? std::nan("") : static_cast<double>(repeated) / total;
}

double distinct_n(const std::vector<std::vector<int32_t>>& generations, int n) {
  std::set<std::vector<int32_t>> grams;
  int64_t tokens = 0;
  for (const auto& g : generations) {
    tokens += static_cast<int64_t>(g.size());
    for (size_t i = 0; i + n <= g.size(); ++i) grams.emplace(g.begin() + i, g.begin() + i + n);
  }
  return tokens == 0 ? std::nan("") : static_cast<double>(grams.size()) / tokens;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return percentile_of_sorted(v, q);
}

double percentile_of_sorted(const std::vector<double>& v, double q) {
  if (!(q >= 0 && q <= 100)) throw std::invalid_argument("percentile: q must be in [0, 100], got " + std::to_string(q));
  if (v.empty()) return std::nan("");
  double pos = q / 100.0 * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos)), hi = static_cast<size_t>(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}

double bits_per_byte(double loss, int64_t tokens, int64_t bytes) {
  return loss / std::log(2.0) * static_cast<double>(tokens) / static_cast<double>(bytes);
}

double unigram_loss(const std::vector<int32_t>& train, const std::vector<int32_t>& val, int64_t vocab) {
  std::vector<double> counts(vocab, 1.0);  // add-one smoothing
  for (int32_t t : train) counts[t] += 1;
  double total = train.size() + static_cast<double>(vocab);
  double nll = 0;
  for (int32_t t : val) nll -= std::log(counts[t] / total);
  return val.empty() ? std::nan("") : nll / val.size();
}

}  // namespace zl
