// SIGTERM and SIGINT stop a study cleanly at the next safe point (issue 16):
// a training step's end (the checkpoint is saved there, so no step is lost)
// or a run's start. Complete runs are kept, no shard is written for the run
// that was stopped, and running the same command again resumes. A second
// signal ends the process at once (the default action), for a user who does
// not want to wait.
#pragma once
#include <stdexcept>
#include <string>

namespace zl {

void install_stop_handlers();
bool stop_requested();
int stop_signal();  // the signal that asked (0: none)

class StopRequested : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws StopRequested naming `where` when a stop was asked for.
void throw_if_stop_requested(const std::string& where);

}  // namespace zl
