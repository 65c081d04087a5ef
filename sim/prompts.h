// The decode prompts of a run. They are the same for every variant and seed,
// so generations of two runs can be compared item by item (paired).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/config.h"
#include "sim/data.h"

namespace zl {

struct Prompts {
  std::vector<std::string> text;
  std::vector<std::vector<int32_t>> tokens;
  bool judged = false;  // contract prompts, judged by the checker
  std::vector<int64_t> source_doc;  // the validation document each was cut from (index into ds.docs.val)
};

// Contract prompts (judged by the checker) whose tokens fit beside the
// continuation; for the other corpora, or when no contract prompt fits the
// context (a byte tokenizer and a short context), the openings of validation
// documents, and violation_rate is then not measured. `count` defaults to
// decode.prompts; `budget` (tokens a prompt may hold) to model.context −
// decode.max_new_tokens.
Prompts make_prompts(const RunConfig& cfg, const Dataset& ds, int64_t count = 0, int64_t budget = 0);

// Calibration prompts (docs/design.md#operating-points, sim/operating_point.h): openings of
// validation documents that no test prompt (make_prompts at the run's
// decode.prompts) was cut from, `lengths` tokens long in turn, so that a knob
// solved on them is not fitted to the text it is then measured on. Throws,
// naming calibrate.prompts, when too few documents are left.
Prompts calibration_prompts(const RunConfig& cfg, const Dataset& ds, int64_t count, const std::vector<int64_t>& lengths);

}  // namespace zl
