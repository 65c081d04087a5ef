#include "sim/stages/verify_hook.h"

#include <algorithm>
#include <chrono>

namespace zl {

VerifyHook::VerifyHook(WindowScorer scorer, int64_t window, VerifyPolicy policy, uint64_t seed, bool log,
                       std::string pass)
    : scorer_(std::move(scorer)), window_(window), policy_(std::move(policy)), rng_(seed), log_(log), pass_(std::move(pass)) {}

VerifyHook::VerifyHook(SequenceCheck check, VerifyPolicy policy, uint64_t seed, bool log, std::string pass)
    : check_(std::move(check)), window_(0), policy_(std::move(policy)), rng_(seed), log_(log), pass_(std::move(pass)) {
  policy_.threshold = 0.5;  // a fire logs score 0, a pass 1
}

void VerifyHook::begin_batch(int64_t batch) {
  first_item_ += batch_;
  batch_ = batch;
  seq_.assign(batch, Sequence{});
}

void VerifyHook::begin_sequence(int64_t sequence, int64_t prompt_len) {
  seq_.at(sequence) = Sequence{};
  seq_[sequence].prompt_len = prompt_len;
}

DecodeHook::Verdict VerifyHook::review(const std::vector<std::vector<int32_t>>& sequences,
                                       const std::vector<bool>& active) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t B = sequences.size(), W = window_;
  Verdict v{std::vector<int64_t>(B, 0), std::vector<double>(B, policy_.temperature)};

  std::vector<int64_t> rows;
  for (int64_t i = 0; i < B; ++i)
    if (active[i]) rows.push_back(i);
  if (rows.empty()) return v;
  std::vector<float> score(rows.size());
  std::vector<int64_t> check_drop(rows.size(), 0);  // a sequence check's own drop (0: the policy's)
  if (scorer_) {
    // The last W tokens of each active sequence (left-padded with its first
    // token when it is shorter than the window).
    std::vector<int64_t> window;
    for (int64_t i : rows) {
      const auto& s = sequences[i];
      for (int64_t j = W; j > 0; --j) {
        int64_t at = static_cast<int64_t>(s.size()) - j;
        window.push_back(s[std::max<int64_t>(0, at)]);
      }
    }
    torch::NoGradGuard no_grad;
    auto tokens = torch::from_blob(window.data(), {static_cast<int64_t>(rows.size()), W}, torch::kLong);
    torch::Tensor scores = scorer_(tokens);  // [n]
    if (!scores.is_cpu() || scores.scalar_type() != torch::kFloat || !scores.is_contiguous())
      scores = scores.to(torch::kCPU, torch::kFloat).contiguous();
    std::copy(scores.data_ptr<float>(), scores.data_ptr<float>() + rows.size(), score.begin());
  } else {
    for (size_t r = 0; r < rows.size(); ++r) {
      const int64_t i = rows[r];
      Sequence& st = seq_[i];
      if (st.prompt_len < 0) st.prompt_len = static_cast<int64_t>(sequences[i].size()) - 1;
      SequenceVerdict c = check_(first_item_ + i, sequences[i], st.prompt_len);
      score[r] = c.fire ? 0.0f : 1.0f;
      check_drop[r] = c.drop;
    }
  }
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

    const bool first = L > st.checked_len;
    st.checked_len = std::max(st.checked_len, L);
    const bool fired = score[r] < policy_.threshold;
    const bool resample = fired && st.retries < policy_.max_retries;
    int64_t d = 0;
    if (resample) {
      d = check_drop[r] > 0                ? check_drop[r]
          : policy_.drop == "2"      ? 2
          : policy_.drop == "random" ? 1 + static_cast<int64_t>(rng_() % 2)
                                     : 1;
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
      e.first = first;
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
