#include "sim/serving/resample.h"

#include <stdexcept>

#include "sim/serving/serve_loop.h"

namespace zl {

void ReviewTally::add(const std::vector<StepRecord>& steps) {
  std::vector<ReviewState> review;
  for (const StepRecord& st : steps) {
    if (st.requests.size() != st.shape.parts.size() || st.dropped.size() != st.shape.parts.size())
      throw std::invalid_argument("ReviewTally: a step's requests and drops must be given per part");
    for (size_t i = 0; i < st.shape.parts.size(); ++i) {
      const auto request = static_cast<size_t>(st.requests[i]);
      if (request >= review.size()) review.resize(request + 1);
      ReviewState& r = review[request];
      if (st.shape.parts[i].context == 0) r.admitted();  // a fresh row: first admission, or after a preemption
      if (!st.shape.parts[i].samples) continue;
      ++samples_;
      const bool open = r.sampled(max_retries_);
      const ReviewKind kind = r.kind();
      if (st.dropped[i] > 0 && !open)
        throw std::invalid_argument("ReviewTally: request " + std::to_string(request) +
                                    " was taken back at a position out of retries (serve.max_retries differs from the run's?)");
      if (!open) continue;
      const size_t band = position_band(r.produced());
      if (band >= bands_.size()) bands_.resize(band + 1);
      Count& c = bands_[band][kind];
      ++c.could_fire;
      if (st.dropped[i] > 0) {
        ++c.fires;
        r.took_back(st.dropped[i]);
      }
    }
  }
}

void ReviewTally::add(const ReviewTally& other) {
  if (other.max_retries_ != max_retries_) throw std::invalid_argument("ReviewTally: tallies of different retry budgets");
  samples_ += other.samples_;
  if (other.bands_.size() > bands_.size()) bands_.resize(other.bands_.size());
  for (size_t b = 0; b < other.bands_.size(); ++b)
    for (int k = 0; k < kReviewKinds; ++k) {
      bands_[b][k].could_fire += other.bands_[b][k].could_fire;
      bands_[b][k].fires += other.bands_[b][k].fires;
    }
}

int64_t ReviewTally::could_fire(ReviewKind kind) const {
  int64_t n = 0;
  for (const auto& b : bands_) n += b[kind].could_fire;
  return n;
}

int64_t ReviewTally::fires(ReviewKind kind) const {
  int64_t n = 0;
  for (const auto& b : bands_) n += b[kind].fires;
  return n;
}

ResampleModel ReviewTally::model(const std::string& drop, int64_t min_per_band) const {
  ResampleModel m;
  m.drop = drop;
  m.max_retries = max_retries_;
  auto share = [](int64_t fires, int64_t n) { return n > 0 ? static_cast<double>(fires) / n : NAN; };
  std::array<double, kReviewKinds> pooled;
  for (int k = 0; k < kReviewKinds; ++k) pooled[k] = share(fires(ReviewKind(k)), could_fire(ReviewKind(k)));
  m.rate = pooled[kFresh];
  for (double r : pooled)
    if (!std::isfinite(m.rate)) m.rate = r;
  if (!std::isfinite(m.rate)) m.rate = 0;
  m.after_fire_rate = std::isfinite(pooled[kAfterFire]) ? pooled[kAfterFire] : m.rate;
  m.behind_fire_rate = std::isfinite(pooled[kBehindFire]) ? pooled[kBehindFire] : m.rate;
  m.at_fire_rate = std::isfinite(pooled[kAtFire]) ? pooled[kAtFire] : m.rate;
  for (const auto& b : bands_) {
    std::array<double, kReviewKinds> r;
    r.fill(NAN);
    for (int k = 0; k < kReviewKinds; ++k)
      if (b[k].could_fire >= min_per_band) r[k] = share(b[k].fires, b[k].could_fire);
    m.by_position.push_back(r);
  }
  return m;
}

size_t position_band(int64_t position) {
  size_t band = 0;
  for (int64_t p = std::max<int64_t>(position, 1); p > 1; p >>= 1) ++band;
  return band;
}

double ResampleModel::rate_at(int64_t position, ReviewKind kind) const {
  if (!by_position.empty()) {
    const double r = by_position[std::min(position_band(position), by_position.size() - 1)][kind];
    if (std::isfinite(r)) return r;
  }
  const double of_kind = kind == kAtFire       ? at_fire_rate
                         : kind == kBehindFire ? behind_fire_rate
                         : kind == kAfterFire  ? after_fire_rate
                                               : rate;
  return std::isfinite(of_kind) ? of_kind : rate;
}

}  // namespace zl
