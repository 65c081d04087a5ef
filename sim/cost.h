// Analytic compute and memory cost (docs/design.md#metrics-and-cost): forward FLOPs per token per
// module, counting a multiply-add as 2 FLOPs (Kaplan et al. 2020, table 1).
// Attention's score and mix terms depend on the context the token attends
// over; we count them at `context` keys.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "models/model_config.h"

namespace zl {

std::map<std::string, double> flops_per_token(const ModelConfig& cfg, int64_t context);
double total_flops(const std::map<std::string, double>& per_module);

}  // namespace zl
