#include "sim/verify_hook.h"

#include <algorithm>
#include <chrono>

namespace zl {

VerifyHook::VerifyHook(WindowScorer scorer, int64_t window, VerifyPolicy policy, uint64_t seed, bool log,
                       std::string pass)
    : scorer_(std::move(scorer)), window_(window), policy_(std::move(policy)), rng_(seed), log_(log), pass_(std::move(pass)) {}

void VerifyHook::begin_batch(int64_t batch) {
  first_item_ += batch_;
  batch_ = batch;
  seq_.assign(batch, Sequence{});
}

DecodeHook::Verdict VerifyHook::review(const std::vector<std::vector<int32_t>>& sequences,
                                       const std::vector<bool>& active) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t B = sequences.size(), W = window_;
  Verdict v{std::vector<int64_t>(B, 0), std::vector<double>(B, policy_.temperature)};

  // The last W tokens of each active sequence (left-padded with its first
  // token when it is shorter than the window).
  std::vector<int64_t> rows;
  std::vector<int64_t> window;
  for (int64_t i = 0; i < B; ++i) {
    if (!active[i]) continue;
    rows.push_back(i);
    const auto& s = sequences[i];
    for (int64_t j = W; j > 0; --j) {
      int64_t at = static_cast<int64_t>(s.size()) - j;
      window.push_back(s[std::max<int64_t>(0, at)]);
    }
  }
  if (rows.empty()) return v;
  torch::Tensor scores;
  {
    torch::NoGradGuard no_grad;
    auto tokens = torch::from_blob(window.data(), {static_cast<int64_t>(rows.size()), W}, torch::kLong);
    scores = scorer_(tokens);  // [n]
    if (!scores.is_cpu() || scores.scalar_type() != torch::kFloat || !scores.is_contiguous())
      scores = scores.to(torch::kCPU, torch::kFloat).contiguous();
  }
  const float* score = scores.data_ptr<float>();
  checks += rows.size();

  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t i = rows[r];
    const auto& s = sequences[i];
    const int64_t L = s.size();
    Sequence& st = seq_[i];
    if (st.prompt_len < 0) st.prompt_len = L - 1;
    // Re-samples that dropped back from this length are now resolved.
    for (auto it = st.open.begin(); it != st.open.end();) {
      VerifyEvent& e = events[*it];
      if (e.context_len != L) {
        ++it;
        continue;
      }
      e.after.assign(s.end() - e.dropped, s.end());
      it = st.open.erase(it);
    }
    if (L > st.fired_len) st.retries = 0;  // past the furthest fire: a fresh budget

    const bool fired = score[r] < policy_.threshold;
    const bool resample = fired && st.retries < policy_.max_retries;
    int64_t d = 0;
    if (resample) {
      d = policy_.drop == "2" ? 2 : policy_.drop == "random" ? 1 + static_cast<int64_t>(rng_() % 2) : 1;
      d = std::min<int64_t>(d, L - st.prompt_len);  // never into the prompt
      ++st.retries;
      st.fired_len = std::max(st.fired_len, L);
      v.drop[i] = d;
      v.temperature[i] = policy_.temperature + policy_.temp_bump;
    }
    if (log_) {
      VerifyEvent e;
      e.pass = pass_;
      e.item = first_item_ + i;
      e.position = L - 1 - st.prompt_len;
      e.context_len = L;
      e.proposed = s.back();
      e.score = score[r];
      e.fired = fired;
      e.resampled = resample;
      e.dropped = d;
      e.prompt_len = st.prompt_len;
      if (resample) {
        e.prefix.assign(s.begin(), s.end() - d);
        e.before.assign(s.end() - d, s.end());
        st.open.push_back(events.size());
      }
      events.push_back(std::move(e));
    }
  }
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return v;
}

}  // namespace zl
