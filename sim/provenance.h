// Where a result came from (docs/results_schema.md): commit, command line, versions, machine.
#pragma once
#include <string>

#include "sim/results.h"

namespace zl {

Provenance collect_provenance(const std::string& command_line, int64_t threads);
std::string utc_now();  // ISO 8601, seconds
std::string cpu_model();

}  // namespace zl
