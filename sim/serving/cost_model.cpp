#include "sim/serving/cost_model.h"

#include <algorithm>
#include <cmath>

namespace zl {

int64_t StepShape::tokens() const {
  int64_t n = 0;
  for (const auto& p : parts) n += p.tokens;
  return n;
}

int64_t StepShape::prefill_tokens() const {
  int64_t n = 0;
  for (const auto& p : parts)
    if (p.tokens > 1 || p.context == 0) n += p.tokens;
  return n;
}

int64_t StepShape::decodes() const {
  int64_t n = 0;
  for (const auto& p : parts) n += p.tokens == 1 && p.context > 0;
  return n;
}

int64_t StepShape::keys() const {
  int64_t n = 0;
  for (const auto& p : parts) n += p.keys();
  return n;
}

int64_t StepShape::samples() const {
  int64_t n = 0;
  for (const auto& p : parts) n += p.samples;
  return n;
}

int64_t ScaledCost::step_ns(const StepShape& step) const {
  return std::max<int64_t>(1, std::llround(static_cast<double>(base_.step_ns(step)) * factor_));
}

}  // namespace zl
