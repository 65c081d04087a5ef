// Sensitivity (docs/design.md#operating-points, issue 29 §2): each verdict that depends on an
// operating point, measured at every setting of it the results file holds.
// A claim depends on a variant's target when its treatment or control
// selects that variant and the file's runs of it differ in
// calibrate.VARIANT.target (ablations/sensitivity.ini runs sfvl at trigger
// rates 0.10, 0.18, 0.30 and 0.45). Per setting, the claim is evaluated as
// the registry states it with its selectors narrowed to that setting's runs;
// the rows are plain verdicts (no Holm family across settings: the curve is
// one question asked at several points, not several claims).
#pragma once
#include <deque>
#include <string>
#include <vector>

#include "sim/claims/claims.h"

namespace zl {

struct SensitivityRow {
  std::string claim_id;  // the registry's claim
  std::string key;       // the setting varied: calibrate.sfvl.target
  double setting = 0;    // its value in these runs
  double reached = 0;    // the mean over these runs of the target's metric on the test prompts (NaN if absent)
  ClaimResult result;    // the claim at this setting (result.spec points into Sensitivity::specs)
};

struct Sensitivity {
  std::deque<ClaimSpec> specs;  // the narrowed specs the rows point to (a deque: stable addresses)
  std::vector<SensitivityRow> rows;  // by claim in registry order, then by setting
};

// Every claim of `specs` (known-method and projected rows left out) that
// depends on a target varying in `input`, at each of its settings.
Sensitivity claim_sensitivity(const std::vector<ClaimSpec>& specs, const ClaimsInput& input,
                              const ClaimsOptions& options = {});

// The curves as text: per claim, one line per setting, and whether the
// verdict holds along the curve or where it flips.
std::string format_sensitivity(const Sensitivity& s);

// The /claims_sensitivity table: id, key, setting, reached, value, ci_lo,
// ci_hi, seeds, verdict, claimed, region_lo, region_hi, method.
Table sensitivity_table(const Sensitivity& s);

}  // namespace zl
