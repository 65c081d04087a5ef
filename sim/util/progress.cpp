#include "sim/util/progress.h"

#include <unistd.h>

#include <cstdio>

namespace zl {

bool stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

std::string format_duration(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
  return buf;
}

Progress::Progress(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled && stderr_is_terminal()),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

void Progress::update(int64_t done, const std::string& status) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (start_done_ < 0) {
    start_done_ = done;  // a resumed run's ETA counts only the work done now
    start_ = now;
  }
  if (done < total_ && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double rate = done > start_done_ ? (done - start_done_) / elapsed : 0;
  std::string eta = rate > 0 ? format_duration((total_ - done) / rate) : "?";
  std::fprintf(stderr, "\r\033[K%s %lld/%lld  %s  eta %s", label_.c_str(), (long long)done, (long long)total_,
               status.c_str(), eta.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace zl
