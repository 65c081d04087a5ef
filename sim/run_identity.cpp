#include "sim/run_identity.h"

#include <filesystem>

namespace zl {

RunIdentity identify(const RunConfig& cfg) {
  namespace fs = std::filesystem;
  RunIdentity id;
  id.run_id = run_id(cfg);
  id.train_id = train_id(cfg);
  id.family = trained_family(cfg);
  const fs::path dir(cfg.output.dir);
  id.checkpoint_dir = (dir / "checkpoints" / id.train_id).string();
  id.shard = (dir / "runs" / (id.run_id + ".h5")).string();
  id.lock = (dir / "locks" / (id.run_id + ".lock")).string();
  return id;
}

}  // namespace zl
