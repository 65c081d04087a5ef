#include "sim/serving/cost_model.h"

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

}  // namespace zl
