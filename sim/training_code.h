// The code a checkpoint was trained by (docs/design.md#checkpoints-and-the-code-that-trained-them).
// A train_id names what a model is trained from (the training keys); it says
// nothing of the code that trains it, so a study resumed after a change to the
// trainer would reuse models the old code made. A checkpoint therefore records
// the commit and this build's fingerprint of the files that decide training
// (CMakeLists.txt's ZL_TRAINING_CODE: the network, the data, the trainer, the
// variant table, the judge's and verifier's training), and a run refuses one
// whose fingerprint differs, unless train.stale_checkpoints = reuse.
#pragma once
#include <string>

namespace zl {

// 16 hex digits, fixed when the binary was built (cmake/training_code.cmake).
const char* training_code_fingerprint();

// The code a checkpoint records: the commit HEAD was at when it was written
// ("unknown" outside a git checkout; "+dirty" appended when tracked files had
// uncommitted changes) and the training code's fingerprint.
struct TrainingCode {
  std::string commit, fingerprint;
};

// This build's: the commit of ZL_SOURCE_DIR read when first asked (once per
// process) and training_code_fingerprint().
const TrainingCode& current_training_code();

// Why reusing a checkpoint written by `theirs` is refused under this build's
// code `ours`, or "" when it may be reused: the same fingerprint. A
// checkpoint that records no fingerprint was written before checkpoints
// recorded their code, and counts as another code's. `checkpoint` is its
// folder, for the message, which names both commits and the key that allows it.
std::string stale_checkpoint_problem(const std::string& checkpoint, const TrainingCode& theirs,
                                     const TrainingCode& ours);

}  // namespace zl
