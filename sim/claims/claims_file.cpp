#include "sim/claims/claims_file.h"

#include "sim/claims/claim_registry.h"
#include "sim/h5.h"
#include "sim/results.h"

namespace zl {

RegistryStamp registry_stamp(const std::string& path, const std::string& text, const std::string& source_dir) {
  const std::string root = source_dir + "/";
  return {path.rfind(root, 0) == 0 ? path.substr(root.size()) : path, registry_hash(text)};
}

void write_claims(const std::string& results, const std::vector<SizedClaims>& sized,
                  const std::vector<ClaimTrend>& trends, const RegistryStamp& registry) {
  write_table(results, "claims", sized_claims_table(sized));
  {
    h5::File f = h5::File::open(results, true);
    const h5::Dataset table = f.dataset("claims");
    table.set_attr("registry", registry.name);
    table.set_attr("registry_hash", registry.hash);
  }
  write_table(results, "claims_seeds", sized_claim_seeds_table(sized));
  if (!trends.empty()) write_table(results, "claims_trend", claim_trends_table(trends));
}

}  // namespace zl
