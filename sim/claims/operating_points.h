// Which operating point a claim's row was measured at (docs/design.md#operating-points): the
// calibrated targets of the runs it compares, read from their configs
// ([calibrate.VARIANT] target) and the knob each run solved
// (calibrated_knob_value), e.g.
//   "sfvl trigger_rate_first_short = 0.18 by verify.threshold (0.43-0.51 over 3 runs)".
#pragma once
#include <string>
#include <vector>

#include "sim/claims/claims.h"

namespace zl {

// "" when no run has a target: every setting is as the study configured it.
std::string describe_operating_points(const std::vector<const ClaimRun*>& runs);

}  // namespace zl
