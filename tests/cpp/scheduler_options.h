// Scheduler options in one call, for the serving tests' small cases.
#pragma once
#include <cstdint>

#include "sim/serving/scheduler.h"

namespace zl {

inline SchedulerOptions scheduler_options(int64_t block_size, int64_t num_blocks, int64_t max_num_seqs,
                                          int64_t max_num_batched_tokens) {
  SchedulerOptions o;
  o.block_size = block_size;
  o.num_blocks = num_blocks;
  o.max_num_seqs = max_num_seqs;
  o.max_num_batched_tokens = max_num_batched_tokens;
  return o;
}

}  // namespace zl
