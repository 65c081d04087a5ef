// Analytic compute and memory cost (docs/design.md#metrics-and-cost): forward FLOPs per token per
// module, counting a multiply-add as 2 FLOPs (Kaplan et al. 2020, table 1).
// Attention's score and mix terms depend on the context the token attends
// over; we count them at `context` keys.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "models/model_config.h"

namespace zl {

std::map<std::string, double> flops_per_token(const ModelConfig& cfg, int64_t context);
// The context a decoded token attends over on average, at which a run counts
// its FLOPs: half the new tokens short of the model's context.
inline int64_t mean_decode_context(int64_t context, int64_t max_new_tokens) {
  return std::min<int64_t>(context, context - max_new_tokens / 2);
}
double total_flops(const std::map<std::string, double>& per_module);

}  // namespace zl
