// results → claims: the headline table a study prints when it ends, read
// back from its results file.
#pragma once
#include <string>

namespace zl {

// Prints the headline metrics of a results file, mean [95% CI] over seeds,
// one row per variant and setting.
void print_summary(const std::string& results_file);

}  // namespace zl
