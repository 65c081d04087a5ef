// A number as text with `digits` significant digits, as printf's %g writes
// it: the one formatting that config values (10 digits, sim/config.cpp),
// figures in messages (3-4) and exact figures (15-17) share.
#pragma once
#include <cstdio>
#include <string>

namespace zl {

inline std::string significant(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

}  // namespace zl
