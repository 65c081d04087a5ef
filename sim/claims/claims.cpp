// Claims: every row measured, given its interval method, judged, and the
// table corrected by Holm. The rules are stated once, in the header of
// ablations/claims.registry; the files named in claims.h implement them.
#include "sim/claims/claims.h"

#include <algorithm>
#include <limits>
#include <set>

#include "sim/claims/claims_calibration.h"
#include "sim/claims/operating_points.h"

namespace zl {
namespace {

// Each commit the runs ran at or were trained by, once, in order of first
// sight; "A,B" (a checkpoint trained further by a second commit) is both.
std::vector<std::string> commits_of(const std::vector<const ClaimRun*>& runs) {
  std::vector<std::string> out;
  auto add = [&](const std::string& list) {
    size_t from = 0;
    while (from <= list.size()) {
      const size_t comma = std::min(list.find(',', from), list.size());
      const std::string c = list.substr(from, comma - from);
      if (!c.empty() && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
      from = comma + 1;
    }
  };
  for (const ClaimRun* run : runs) {
    add(run->commit);
    add(run->train_commit);
  }
  return out;
}

}  // namespace

std::vector<ClaimResult> evaluate_claims(const std::vector<ClaimSpec>& specs, const ClaimsInput& input,
                                         const ClaimsOptions& opt) {
  std::vector<ClaimResult> out;
  std::vector<Measurement> measured;
  for (const ClaimSpec& s : specs) {
    ClaimResult r;
    r.spec = &s;
    r.value = r.lo = r.hi = std::numeric_limits<double>::quiet_NaN();
    measured.push_back(measure(s, input));
    if (measured.back().problem.empty()) r.per_seed = measured.back().per_seed;
    out.push_back(std::move(r));
  }

  // The method: forced, or the one whose coverage at each row's n is nearest
  // the level on synthetic studies shaped like this file's values.
  std::set<int> ns;
  for (const auto& r : out)
    if (r.per_seed.size() >= 2) ns.insert(static_cast<int>(r.per_seed.size()));
  Calibration cal;
  if (opt.method == "auto")
    cal = calibrate(out, std::vector<int>(ns.begin(), ns.end()), opt.level, opt.calibration_studies, false);

  for (size_t i = 0; i < out.size(); ++i) {
    judge_row(out[i], measured[i], opt, cal);
    out[i].operating_point = describe_operating_points(measured[i].runs);
    out[i].commits = commits_of(measured[i].runs);
    if (out[i].commits.size() > 1) {
      std::string list;
      for (const auto& c : out[i].commits) list += (list.empty() ? "" : ", ") + c.substr(0, 7) + (c.find("+dirty") != std::string::npos ? "+dirty" : "");
      out[i].note += (out[i].note.empty() ? "" : "; ") + std::string("mixes ") + std::to_string(out[i].commits.size()) +
                     " commits (" + list + "): its runs or their models come from different code";
    }
  }
  std::vector<ClaimResult> kept;
  for (size_t i = 0; i < out.size(); ++i)
    if (!is_known_row(out[i]) || measured[i].problem.rfind("missing", 0) != 0)
      kept.push_back(std::move(out[i]));
  apply_holm(kept, opt.level);
  return kept;
}

std::vector<std::string> known_without_runs(const std::vector<ClaimSpec>& specs,
                                            const std::vector<ClaimResult>& results) {
  std::set<const ClaimSpec*> present;
  for (const auto& r : results) present.insert(r.spec);
  std::vector<std::string> out;
  for (const auto& s : specs)
    if (!s.known_method.empty() && !s.projected && !present.count(&s)) out.push_back(s.id + " (" + s.treatment + ")");
  return out;
}

}  // namespace zl
