// Checkpoints: output.dir/checkpoints/<train_id>/ holds the model and
// optimizer at the last saved step, the curves so far, the resolved config
// and the tokenizer. state.ini is written last and names the step files, so
// a run killed while saving still finds the previous complete checkpoint;
// it also holds each file's size and CRC-32, checked before anything loads.
// A lock file serialises processes (study shards) that need the same model.
#pragma once
#include <torch/torch.h>

#include <map>
#include <stdexcept>
#include <string>

#include "models/transformer.h"
#include "sim/results.h"
#include "sim/training_code.h"
#include "sim/util/file_lock.h"

namespace zl {

struct CheckpointState {
  int64_t step = 0;          // optimizer steps taken
  bool complete = false;     // training finished
  double train_seconds = 0;  // time spent in training steps (excl. eval/checkpoint)
  int64_t timed_tokens = 0;  // tokens processed in those seconds
  std::map<std::string, Curve> curves;  // "train/loss", "train/val_loss", "train/lr"
  // The code that trained it (sim/training_code.h): state.ini's commit= and
  // training_code=; both empty in a checkpoint written before they existed.
  TrainingCode code;
};

// A checkpoint whose files disagree with the checksums state.ini recorded
// when they were published: the trainer sets it aside and trains again.
struct DamagedCheckpoint : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class CheckpointDir {
 public:
  explicit CheckpointDir(std::string path);
  ~CheckpointDir();
  CheckpointDir(const CheckpointDir&) = delete;
  CheckpointDir& operator=(const CheckpointDir&) = delete;

  const std::string& path() const { return path_; }
  bool exists() const;  // a state.ini is there
  // Loads the state and, if given, the model and optimizer saved with it.
  // Throws DamagedCheckpoint naming the file when a checksum disagrees (and
  // then has loaded nothing), std::runtime_error when a file is unreadable or
  // from another model. `family` (trained_family() of the run the model is
  // for; empty: not checked): a checkpoint whose config.ini records another
  // family is refused before anything loads, naming the file and both
  // families. Whatever the family, a parameter the file gives another shape
  // than the model's is an error naming it (LibTorch's load would take the
  // file's shape silently).
  CheckpointState load(Transformer* model, torch::optim::Optimizer* optim, const std::string& family = {}) const;
  // Moves state.ini aside (state.ini.corrupt), so that the checkpoint no
  // longer exists() and is trained again, and says why on stderr.
  void set_aside(const std::string& why) const;
  void save(const CheckpointState& state, Transformer& model, torch::optim::Optimizer* optim,
            const std::string& config_ini, const std::string& tokenizer_model) const;
  void lock();  // exclusive, blocking; released on destruction

 private:
  std::string path_;
  FileLock lock_;
};

// Loads a model saved by a checkpoint directory (for `zerolayer generate`):
// returns the resolved config text and fills the model.
std::string checkpoint_config(const std::string& dir);

// The family of the network a checkpoint directory holds, read from its
// config.ini (trained_family of the variant and latent.mode recorded
// there); "" when it has none. `variant` (optional) gets the variant.
std::string checkpoint_family(const std::string& dir, std::string* variant = nullptr);

}  // namespace zl
