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
      if (!st.shape.parts[i].samples) continue;
      const auto request = static_cast<size_t>(st.requests[i]);
      if (request >= review.size()) review.resize(request + 1);
      ReviewState& r = review[request];
      ++samples_;
      const bool open = r.sampled(max_retries_);
      const bool retrying = r.retrying();
      if (st.dropped[i] > 0 && !open)
        throw std::invalid_argument("ReviewTally: request " + std::to_string(request) +
                                    " was taken back at a position out of retries (serve.max_retries differs from the run's?)");
      if (!open) continue;
      ++could_fire_[retrying];
      if (st.dropped[i] > 0) {
        ++fires_[retrying];
        r.took_back(st.dropped[i]);
      }
    }
  }
}

ResampleModel ReviewTally::model(const std::string& drop) const {
  ResampleModel m;
  m.drop = drop;
  m.max_retries = max_retries_;
  auto share = [&](int k) { return could_fire_[k] > 0 ? static_cast<double>(fires_[k]) / could_fire_[k] : NAN; };
  const double fresh = share(0), again = share(1);
  m.rate = std::isfinite(fresh) ? fresh : std::isfinite(again) ? again : 0;
  m.retry_rate = std::isfinite(again) ? again : m.rate;
  return m;
}

}  // namespace zl
