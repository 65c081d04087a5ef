// libFuzzer harness (issue 16): the claims registry and its metric
// expression parser. Bad input must end in a std::runtime_error naming the
// file and line; a crash, undefined behaviour or another exception is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "sim/claims/claims.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& spec : zl::parse_registry(text, "fuzz.registry"))
      if (!spec.metric.empty()) zl::metric_names(spec.metric);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind("fuzz.registry", 0) != 0) {
      std::fprintf(stderr, "error without the file's name: %s\n", e.what());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "not a runtime_error: %s\n", e.what());
    std::abort();
  }
  return 0;
}
