// claims → results file: the judged tables written into the file they judge,
// /claims with the registry that decided it (docs/claims.md#pre-registration),
// /claims_seeds, and /claims_trend for a file of several sizes. One writer
// for the command line and the Python module.
#pragma once
#include <string>
#include <vector>

#include "sim/claims/scaling.h"

namespace zl {

// Which registry judged a table: its path (relative to the repository when
// it is the repository's own) and its content hash (registry_hash).
struct RegistryStamp {
  std::string name, hash;
};

// The stamp of the registry at `path` whose text is `text`; `source_dir` is
// the repository's root (ZL_SOURCE_DIR).
RegistryStamp registry_stamp(const std::string& path, const std::string& text, const std::string& source_dir);

// Writes /claims (attributes `registry`, `registry_hash`), /claims_seeds and,
// when `trends` has rows, /claims_trend into `results`.
void write_claims(const std::string& results, const std::vector<SizedClaims>& sized,
                  const std::vector<ClaimTrend>& trends, const RegistryStamp& registry);

}  // namespace zl
