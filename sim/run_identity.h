// What a run is, resolved once from its config
// (docs/design.md#runs-identity-and-checkpoints): its ids, the family whose
// trained network it decodes (sim/variants.def) and where its files go. The
// study, the run and the trainer read these fields instead of re-deriving
// them from the whole config at each layer.
#pragma once
#include <string>

#include "sim/config.h"

namespace zl {

struct RunIdentity {
  std::string run_id;          // its shard's name: every key the run reads
  std::string train_id;        // its checkpoint's name: the keys that shape the trained model
  std::string family;          // the network it trains or decodes (trained_family)
  std::string checkpoint_dir;  // output.dir/checkpoints/<train_id>, shared by the family's runs
  std::string shard;           // output.dir/runs/<run_id>.h5
  std::string lock;            // output.dir/locks/<run_id>.lock: who is running it
};

RunIdentity identify(const RunConfig& cfg);

}  // namespace zl
