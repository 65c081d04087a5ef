// sfvl's review as the serving simulator sees it, and how its rates are
// read off the real server.
//
// The hook (sim/stages/verify_hook.cpp) reviews every sampled token; a fire
// takes back 1 or 2 tokens and the request samples again, at most
// max_retries times at a position before a token there is kept. The
// simulator draws fires from two rates: one for a position sampled for the
// first time, one for a position sampled again after a fire there (a
// re-sample is drawn hotter, in a context the scorer already judged
// poorly, so it need not fire as often).
//
// Both rates are counted over the tokens that could fire, those whose
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

// Fires per token that could fire: `rate` at a fresh position,
// `retry_rate` at a position that fired before (NaN: as `rate`), and, read
// off a served run, the same two by output position in doubling bands
// (positions 1, 2-3, 4-7, ...: measured, sfvl fires at 27% on the first
// token, 60% on the 2nd to 4th, 40% later, which is what its TTFT hangs
// on), [band][retrying], NaN where the run had too few to tell; bands past
// the last take the last's. A fire takes back `drop` tokens ("1", "2", or
// "random": 1 or 2 evenly), never more than the request has produced.
// Rate 0: no review.
struct ResampleModel {
  double rate = 0;
  double retry_rate = NAN;
  std::vector<std::array<double, 2>> by_position;
  std::string drop = "1";
  int64_t max_retries = 3;
  double rate_at(int64_t position, bool retrying) const;
};

// The band of output position p >= 1: floor(log2 p).
size_t position_band(int64_t position);

// One request's place in the review, as the hook keeps it: the tokens it
// has produced, the furthest position it fired at and the fires spent there.
class ReviewState {
 public:
  // A token is sampled: returns whether its position has retries left.
  bool sampled(int64_t max_retries) {
    ++produced_;
    if (produced_ > fired_at_) retries_ = 0;  // past the furthest fire: a fresh budget
    return retries_ < max_retries;
  }
  // The newest token's position fired before (it is being sampled again).
  bool retrying() const { return produced_ <= fired_at_; }
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

// Counts, over served runs, the tokens that could fire and the fires, at
// fresh and at retried positions, by position band, from each step's parts
// (their requests, what they sampled, what the review took back).
class ReviewTally {
 public:
  explicit ReviewTally(int64_t max_retries) : max_retries_(max_retries) {}
  // One served run's steps, in order (request ids are the run's own).
  void add(const std::vector<StepRecord>& steps);
  // Another tally's counts (of the same retry budget).
  void add(const ReviewTally& other);
  // The rates counted (rate 0 with nothing sampled): pooled, and by band
  // where a band and kind had at least `min_per_band` tokens that could
  // fire. A kind never sampled takes the other's rate.
  ResampleModel model(const std::string& drop, int64_t min_per_band = 50) const;
  int64_t samples() const { return samples_; }
  int64_t could_fire(bool retrying) const;
  int64_t fires(bool retrying) const;

 private:
  struct Count {
    int64_t could_fire = 0, fires = 0;
  };
  int64_t max_retries_;
  int64_t samples_ = 0;
  std::vector<std::array<Count, 2>> bands_;  // [band][retrying]
};

}  // namespace zl
