// oet's offline table on disk, beside the sfcl checkpoint it was built from
// (the table is a function of that model and the oet.* keys, which name the
// file). Binary, little-endian as written by this machine: magic, shape,
// per-row counts, then the compressed row-major sparse matrix.
#pragma once
#include <string>

#include "models/offline_table.h"

namespace zl {

// Publishes a cache file (datasets/cache_file.h: all or nothing, with its checksum).
void save_offline_table(const OfflineTable& t, const std::string& path);
// Throws std::runtime_error naming the file when it is missing, truncated,
// corrupt or not an offline table.
OfflineTable load_offline_table(const std::string& path);
// The same from a file's bytes already read; `path` names it in errors.
OfflineTable parse_offline_table(const std::string& bytes, const std::string& path);

}  // namespace zl
