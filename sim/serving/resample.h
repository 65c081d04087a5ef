// sfvl's review as the serving simulator sees it, and how its rates are
// read off the real server.
//
// The hook (sim/stages/verify_hook.cpp) reviews every sampled token; a fire
// takes back 1 or 2 tokens and the request samples again, at most
// max_retries times at a position before a token there is kept. The
// simulator draws fires from four rates, by where the token stands: at a
// position sampled for the first time, at the first position past one that
// fired (the context the scorer judged poorly is still in its window), at a
// position behind one that fired (sampled again after a drop of 2), and at
// the very position that fired, sampled again (measured, sfvl seed 2: 31%,
// 51%, 49-55% and 88-90%; one rate for all gave 10% fewer samples per
// request than the real server took, and TPOT that much fast), and each by
// output position (sfvl fires at 27% on the first token, 60% on the 2nd to
// 4th, 40% later: what its TTFT hangs on).
//
// The rates are counted over the tokens that could fire, those whose
// position had retries left. The share of all sampled tokens taken back is
// smaller, since a position out of retries keeps its token whatever the
// scorer says; a simulator drawing that share within the same retry budget
// would count the budget twice (measured, issue 14: 5-16% fewer samples per
// request than the real sfvl served, and TPOT 13% fast).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace zl {

struct StepRecord;

// Where a sampled token stands in the review: at a position sampled for the
// first time, at the first position past the furthest that fired, behind
// it, or at it.
enum ReviewKind : int { kFresh = 0, kAfterFire = 1, kBehindFire = 2, kAtFire = 3 };
constexpr int kReviewKinds = 4;

// Fires per token that could fire: `rate` at a fresh position,
// `after_fire_rate`, `behind_fire_rate`, `at_fire_rate` (NaN: as `rate`),
// and, read off a served run, the four by output position in doubling
// bands (positions 1, 2-3, 4-7, ...), [band][kind], NaN where the run had
// too few to tell (the kind's rate answers); bands past the last take the
// last's. A fire
// takes back `drop` tokens ("1", "2", or "random": 1 or 2 evenly), never
// more than the request has produced. Rate 0: no review.
struct ResampleModel {
  double rate = 0;
  double after_fire_rate = NAN;
  double behind_fire_rate = NAN;
  double at_fire_rate = NAN;
  std::vector<std::array<double, kReviewKinds>> by_position;
  std::string drop = "1";
  int64_t max_retries = 3;
  double rate_at(int64_t position, ReviewKind kind) const;
};

// The band of output position p >= 1: floor(log2 p).
size_t position_band(int64_t position);

// One request's place in the review, as the hook keeps it: the tokens it
// has produced, the furthest position it fired at and the fires spent there.
class ReviewState {
 public:
  // The request takes a row again after a preemption (its kept tokens are
  // recomputed): the hook starts its review afresh there, every position
  // fresh with a full budget (VerifyHook::begin_sequence).
  void admitted() {
    fired_at_ = -1;
    retries_ = 0;
  }
  // A token is sampled: returns whether its position has retries left.
  bool sampled(int64_t max_retries) {
    ++produced_;
    if (produced_ > fired_at_) retries_ = 0;  // past the furthest fire: a fresh budget
    return retries_ < max_retries;
  }
  // Where the newest token stands.
  ReviewKind kind() const {
    return produced_ == fired_at_       ? kAtFire
           : produced_ < fired_at_      ? kBehindFire
           : produced_ == fired_at_ + 1 ? kAfterFire
                                        : kFresh;
  }
  // A fire took back `d` tokens (already capped at produced()).
  void took_back(int64_t d) {
    ++retries_;
    fired_at_ = std::max(fired_at_, produced_);
    produced_ -= d;
  }
  int64_t produced() const { return produced_; }

 private:
  int64_t produced_ = 0, fired_at_ = -1, retries_ = 0;
};

// Counts, over served runs, the tokens that could fire and the fires, by
// kind and position band, from each step's parts
// (their requests, what they sampled, what the review took back).
class ReviewTally {
 public:
  explicit ReviewTally(int64_t max_retries) : max_retries_(max_retries) {}
  // One served run's steps, in order (request ids are the run's own).
  void add(const std::vector<StepRecord>& steps);
  // Another tally's counts (of the same retry budget).
  void add(const ReviewTally& other);
  // The rates counted, pooled over bands, and by band where a band and
  // kind had at least `min_per_band` tokens that could fire. `rate` is the
  // fresh positions' (where none could fire, the first kind's that could;
  // 0 with nothing sampled); a kind none of whose tokens could fire takes
  // `rate`.
  ResampleModel model(const std::string& drop, int64_t min_per_band = 50) const;
  int64_t samples() const { return samples_; }
  int64_t could_fire(ReviewKind kind) const;
  int64_t fires(ReviewKind kind) const;

 private:
  struct Count {
    int64_t could_fire = 0, fires = 0;
  };
  int64_t max_retries_;
  int64_t samples_ = 0;
  std::vector<std::array<Count, kReviewKinds>> bands_;  // [band][kind]
};

}  // namespace zl
