// Progress with an ETA on a terminal (stderr is a tty); silent in logs, where
// a line per step would bury what matters.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace zl {

class Progress {
 public:
  Progress(std::string label, int64_t total, bool enabled);
  void update(int64_t done, const std::string& status = "");
  void finish();

 private:
  std::string label_;
  int64_t total_, start_done_ = -1;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_;
};

bool stderr_is_terminal();
std::string format_duration(double seconds);

}  // namespace zl
