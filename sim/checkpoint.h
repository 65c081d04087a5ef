// Checkpoints: output.dir/checkpoints/<train_id>/ holds the model and
// optimizer at the last saved step, the curves so far, the resolved config
// and the tokenizer. state.ini is written last and names the step files, so
// a run killed while saving still finds the previous complete checkpoint.
// A lock file serialises processes (study shards) that need the same model.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>

#include "models/transformer.h"
#include "sim/file_lock.h"
#include "sim/results.h"

namespace zl {

struct CheckpointState {
  int64_t step = 0;          // optimizer steps taken
  bool complete = false;     // training finished
  double train_seconds = 0;  // time spent in training steps (excl. eval/checkpoint)
  int64_t timed_tokens = 0;  // tokens processed in those seconds
  std::map<std::string, Curve> curves;  // "train/loss", "train/val_loss", "train/lr"
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
  // Throws naming the file when it is corrupt or from another model.
  CheckpointState load(Transformer* model, torch::optim::Optimizer* optim) const;
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

}  // namespace zl
