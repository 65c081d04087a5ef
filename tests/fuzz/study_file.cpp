// libFuzzer harness (issue 16): the study-file parser with command-line
// overrides. Input: override lines "key=value" up to the first empty line,
// then the INI text. Bad input must end in a ConfigError that names what is
// wrong; any other exception, a crash or undefined behaviour is a finding.
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>

#include "sim/study_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find("\n\n");
  zl::Overrides overrides;
  const std::string head = split == std::string::npos ? "" : input.substr(0, split);
  for (size_t p = 0; p < head.size();) {
    size_t end = head.find('\n', p);
    if (end == std::string::npos) end = head.size();
    const std::string line = head.substr(p, end - p);
    if (size_t eq = line.find('='); eq != std::string::npos) overrides.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    p = end + 1;
  }
  try {
    zl::Study s = zl::parse_study(split == std::string::npos ? input : input.substr(split + 2), "fuzz.ini", overrides);
    if (s.axes.size() < 4) s.expand();  // every point resolved and validated (bounded: grids multiply)
  } catch (const zl::ConfigError& e) {
    if (std::string(e.what()).empty()) std::abort();  // an error must say something
  } catch (const std::exception& e) {
    std::fprintf(stderr, "not a ConfigError: %s\n", e.what());
    std::abort();
  }
  return 0;
}
