// What a served run needs that its config alone decides. Each of these would
// otherwise fail the run only after its model has trained (minutes later):
// the KV budget when the real server is set up (sim/serving/serving_run.cpp),
// the accelerators and shapes when the run is projected
// (sim/serving/projection.cpp). A study checks every run with them when it
// resolves its runs, before anything is trained or written
// (sim/study/study.cpp; docs/serving.md#errors-and-what-cannot-be-served).
#pragma once
#include <cstdint>
#include <string>

#include "sim/config.h"
#include "sim/serving/hardware.h"

namespace zl {

// The bytes of KV cache a served run's scheduler divides into blocks:
// serve.kv_budget_mb, or (0) serve.max_num_seqs full contexts of the
// baseline's cache of the run's shape. The same bytes for every variant of a
// shape: what a variant's token costs decides how many blocks it buys.
double serve_kv_budget_bytes(const RunConfig& cfg);

// The blocks of serve.block_size tokens that budget buys at `bytes_per_token`.
int64_t serve_kv_blocks(const RunConfig& cfg, double bytes_per_token);

// Whether a served run is projected to named hardware: serve.hardware and
// serve.shapes both name something (either empty: no projection).
bool projected(const RunConfig& cfg);

// "" when `cfg` can be served (or serving is off), else "KEY: why", the why
// naming the value and what would do:
//   serve.kv_budget_mb   holds no block: the bytes one block needs, the
//                        variant's KV bytes per token (sim/memory_estimate.h,
//                        kv_bytes_per_token) × serve.block_size;
//   serve.hardware,      a name that is no section of `catalog`, the known
//   serve.shapes         names listed (only when the run is projected:
//                        `catalog` is read then alone);
//   serve.output_len     leaves no room for a prompt in model.context.
std::string serving_problem(const RunConfig& cfg, const HardwareCatalog& catalog);

}  // namespace zl
