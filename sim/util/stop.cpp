#include "sim/util/stop.h"

#include <csignal>
#include <cstring>

namespace zl {
namespace {

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int sig) { g_signal = sig; }  // SA_RESETHAND: the next one takes the default action

}  // namespace

void install_stop_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

bool stop_requested() { return g_signal != 0; }
int stop_signal() { return g_signal; }

void throw_if_stop_requested(const std::string& where) {
  if (!stop_requested()) return;
  throw StopRequested(std::string(g_signal == SIGINT ? "SIGINT" : "SIGTERM") + " " + where);
}

}  // namespace zl
