// The output of a shell command, for the few facts zerolayer asks the system
// (the commit it runs at, whether the tree has changes, the GPU's name).
#pragma once
#include <string>

namespace zl {

// The command's standard output with its trailing line breaks removed; "" when
// it printed nothing or could not run.
std::string shell_output(const std::string& command);

}  // namespace zl
