#include "sim/step_replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

namespace zl {

std::vector<double> replay_step_ms(Transformer& model, const std::vector<std::vector<int32_t>>& prompts,
                                   const std::vector<std::vector<int32_t>>& continuations, int64_t batch,
                                   int64_t max_new_tokens, bool fast_step, int settings,
                                   const std::function<void(int setting, DecodeStep* step)>& apply) {
  using Clock = std::chrono::steady_clock;
  torch::NoGradGuard no_grad;
  model->eval();
  std::optional<DecodeStep> fast;
  if (fast_step && DecodeStep::supports(model)) fast.emplace(model);
  DecodeStep* step = fast ? &*fast : nullptr;
  const auto dev = model->wte->weight.device();
  const int64_t max_prompt = std::max<int64_t>(1, model->cfg.context - max_new_tokens);
  std::vector<double> seconds(settings, 0.0);
  int64_t steps = 0;
  for (size_t first = 0; first < prompts.size(); first += batch) {
    const int64_t B = std::min<int64_t>(batch, prompts.size() - first);
    int64_t T = 0, S = 0;
    std::vector<std::vector<int32_t>> p(B);
    for (int64_t i = 0; i < B; ++i) {
      const auto& full = prompts[first + i];
      const size_t keep = std::min<size_t>(full.size(), max_prompt);
      p[i].assign(full.end() - keep, full.end());
      T = std::max<int64_t>(T, p[i].size());
      S = std::max<int64_t>(S, continuations[first + i].size());
    }
    S = std::min<int64_t>(S, model->cfg.context - T);
    if (S <= 0) continue;
    auto tokens = torch::zeros({B, T}, torch::kLong);
    std::vector<int64_t> lens(B);
    for (int64_t i = 0; i < B; ++i) {
      for (size_t j = 0; j < p[i].size(); ++j) tokens[i][j] = p[i][j];
      lens[i] = p[i].size();
    }
    // The fed tokens of each step, built before timing: [S,B,1], and per step for the fast step.
    auto feed = torch::zeros({S, B, 1}, torch::kLong);
    std::vector<std::vector<int64_t>> fed(S, std::vector<int64_t>(B, 0));
    for (int64_t i = 0; i < B; ++i) {
      const auto& c = continuations[first + i];
      for (int64_t s = 0; s < S && s < static_cast<int64_t>(c.size()); ++s) feed[s][i][0] = fed[s][i] = c[s];
    }
    feed = feed.to(dev);
    std::vector<KVCache> caches;
    for (int k = 0; k < settings; ++k) {
      caches.push_back(model->make_cache(B));
      apply(k, step);
      if (step) {
        step->prefill(p, caches[k]);
      } else {
        model->forward(tokens.to(dev), caches[k]);
        caches[k].lengths.copy_(torch::tensor(lens, torch::kLong).to(dev));
      }
    }
    for (int64_t s = 0; s < S; ++s) {
      for (int j = 0; j < settings; ++j) {
        const int k = static_cast<int>((s + j) % settings);
        apply(k, step);
        const auto start = Clock::now();
        if (step)
          step->forward(fed[s], caches[k]);
        else
          model->forward(feed[s], caches[k]);
        seconds[k] += std::chrono::duration<double>(Clock::now() - start).count();
      }
    }
    steps += S;
  }
  apply(0, step);
  std::vector<double> ms(settings, std::nan(""));
  if (steps > 0)
    for (int k = 0; k < settings; ++k) ms[k] = 1000.0 * seconds[k] / steps;
  return ms;
}

std::vector<double> best_replay_step_ms(int passes, const std::function<std::vector<double>()>& replay) {
  std::vector<double> best;
  double best_sum = std::numeric_limits<double>::infinity();
  for (int i = 0; i < passes; ++i) {
    auto ms = replay();
    const double sum = std::accumulate(ms.begin(), ms.end(), 0.0);
    if (best.empty() || sum < best_sum) best = ms, best_sum = sum;
  }
  return best;
}

}  // namespace zl
