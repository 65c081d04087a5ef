// What a call throws, for tests that check an error names its cause. Apart
// from tests/cpp/check_helpers.h (which includes it) so that the tests of
// torch-free code need no torch.
#pragma once
#include <exception>
#include <functional>
#include <string>

namespace zl {

// The message of the std::exception `f` throws; "" when it throws none.
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace zl
