// Loads libzl_spm.so (see datasets/spm_bridge/spm_bridge.h for why
// SentencePiece lives behind a C boundary in its own symbol scope).
#pragma once
#include <string>

#include "datasets/spm_bridge/spm_bridge.h"

namespace zl {

struct SpmLibrary {
  decltype(&zl_spm_train) train;
  decltype(&zl_spm_load) load;
  decltype(&zl_spm_encode) encode;
  decltype(&zl_spm_piece_size) piece_size;
  decltype(&zl_spm_eos_id) eos_id;
  decltype(&zl_spm_piece) piece;
  decltype(&zl_spm_release) release;
  decltype(&zl_spm_free) free;

  // The process-wide instance; throws naming the module path if it cannot load.
  static const SpmLibrary& get();
};

}  // namespace zl
