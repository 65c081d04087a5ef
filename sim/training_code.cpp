#include "sim/training_code.h"

#include "sim/util/shell.h"

namespace zl {

const TrainingCode& current_training_code() {
  static const TrainingCode code = [] {
    const std::string git = std::string("git -C '") + ZL_SOURCE_DIR + "' ";
    std::string commit = shell_output(git + "rev-parse HEAD 2>/dev/null");
    if (commit.empty()) commit = "unknown";
    else if (!shell_output(git + "status --porcelain --untracked-files=no 2>/dev/null").empty()) commit += "+dirty";
    return TrainingCode{commit, training_code_fingerprint()};
  }();
  return code;
}

std::string stale_checkpoint_problem(const std::string& checkpoint, const TrainingCode& theirs,
                                     const TrainingCode& ours) {
  if (!theirs.fingerprint.empty() && theirs.fingerprint == ours.fingerprint) return "";
  const std::string written =
      theirs.fingerprint.empty()
          ? "was written before checkpoints recorded the code that trained them (commit " +
                (theirs.commit.empty() ? std::string("unknown") : theirs.commit) + ")"
          : "was trained by commit " + theirs.commit + " (training code " + theirs.fingerprint + ")";
  return "checkpoint " + checkpoint + " " + written + ", but this build's training code is " + ours.fingerprint +
         " (commit " + ours.commit + "): the model would not be what this code trains. Remove the folder to "
         "train it again, or reuse it as it is with --train.stale_checkpoints reuse";
}

}  // namespace zl
