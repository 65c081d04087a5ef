// Reading a results file's runs for the claims, and naming their settings.
#include "sim/claims/claim_runs.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/claims/claim_selectors.h"
#include "sim/config.h"
#include "sim/h5.h"

namespace zl {

std::map<std::string, std::string> parse_config_ini(const std::string& ini) {
  std::map<std::string, std::string> out;
  std::istringstream in(ini);
  std::string line, section;
  while (std::getline(in, line)) {
    line = trim_blanks(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim_blanks(line.substr(1, line.size() - 2));
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim_blanks(line.substr(0, eq));
    out[section.empty() ? key : section + "." + key] = trim_blanks(line.substr(eq + 1));
  }
  return out;
}

std::map<std::string, std::string> setting_labels(const std::vector<ClaimRun>& runs) {
  std::map<std::string, std::vector<const ClaimRun*>> by_variant;
  for (const auto& r : runs) {
    auto it = r.config.find("variant");
    by_variant[it == r.config.end() ? "?" : it->second].push_back(&r);
  }
  std::map<std::string, std::string> labels;
  for (const auto& [variant, members] : by_variant) {
    std::set<std::string> keys, varying, solved;
    for (const ClaimRun* r : members) {
      for (const auto& kv : r->config) keys.insert(kv.first);
      // A knob solved for an operating point (sim/operating_point.h) differs by
      // seed as an outcome, not a setting: the target names the setting. The
      // target is the variant's own or, for a knob that shapes training, that
      // of the family it trains as (oet decodes sfcl's solved width).
      for (const std::string& owner : {variant, trained_family(variant)}) {
        auto target = r->config.find("calibrate." + owner + ".target");
        auto knob = r->config.find("calibrate." + owner + ".knob");
        if (target != r->config.end() && knob != r->config.end() && std::atof(target->second.c_str()) != 0)
          solved.insert(knob->second);
      }
    }
    for (const std::string& k : keys) {
      if (k == "seed" || k == "variant" || k.rfind("output.", 0) == 0 || solved.count(k)) continue;
      std::set<std::string> values;
      for (const ClaimRun* r : members) {
        auto it = r->config.find(k);
        values.insert(it == r->config.end() ? "" : it->second);
      }
      if (values.size() > 1) varying.insert(k);
    }
    for (const ClaimRun* r : members) {
      std::string label = variant;
      for (const std::string& k : varying) {
        auto it = r->config.find(k);
        label += " " + k + "=" + (it == r->config.end() ? "" : it->second);
      }
      labels[r->run_id] = label;
    }
  }
  return labels;
}

namespace {

// A cell of an /index row. A damaged or foreign index may lack the column or
// hold it with another type: an error naming the file, not std::out_of_range.
template <class Cells>
const typename Cells::mapped_type& index_cell(const Cells& row, const std::string& column, const std::string& file) {
  auto it = row.find(column);
  if (it == row.end())
    throw std::runtime_error("'" + file + "': /index has no column '" + column + "' of the expected type");
  return it->second;
}

// read_index gives numbers as double, so an int64 seed near either end of its
// range arrives as ±2^63, just outside it, and a damaged index may hold any
// float there: casting those is undefined, so they saturate.
int64_t index_seed(const IndexRow& row, const std::string& file) {
  const double seed = index_cell(row.numbers, "seed", file);
  if (std::isnan(seed)) throw std::runtime_error("'" + file + "': /index has a seed that is not a number");
  if (seed >= 0x1p63) return std::numeric_limits<int64_t>::max();
  if (seed < -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(seed);
}

}  // namespace

ClaimsInput load_claims_input(const std::string& results_file) {
  ClaimsInput in;
  for (const IndexRow& row : read_index(results_file)) {  // checks schema_version
    ClaimRun r;
    r.run_id = index_cell(row.strings, "run_id", results_file);
    r.status = index_cell(row.strings, "status", results_file);
    r.seed = index_seed(row, results_file);
    for (auto [column, field] : {std::pair{"commit", &ClaimRun::commit}, std::pair{"train_commit", &ClaimRun::train_commit}})
      if (auto it = row.strings.find(column); it != row.strings.end()) r.*field = it->second;
    for (const auto& [k, v] : row.numbers)
      if (k != "seed") r.metrics[k] = v;
    in.runs.push_back(std::move(r));
  }
  h5::File file = h5::File::open(results_file, false);
  for (ClaimRun& r : in.runs) {
    const std::string group = "runs/" + r.run_id;
    if (file.kind(group) != h5::Kind::group)
      throw std::runtime_error("'" + results_file + "' has no group /" + group);
    r.config = parse_config_ini(file.group(group).attr_string("config"));
  }
  // Tables are read when a claim asks, and kept for the next claim.
  auto cache = std::make_shared<std::map<std::string, std::unique_ptr<Table>>>();
  in.table = [cache, results_file](const std::string& run_id, const std::string& name) -> const Table* {
    const std::string path = "runs/" + run_id + "/" + name;
    auto it = cache->find(path);
    if (it == cache->end()) {
      h5::File f = h5::File::open(results_file, false);
      std::unique_ptr<Table> t;
      if (f.kind(path) == h5::Kind::dataset) t = std::make_unique<Table>(f.dataset(path).read_table());
      it = cache->emplace(path, std::move(t)).first;
    }
    return it->second.get();
  };
  return in;
}

}  // namespace zl
