// The claims table (docs/design.md#claims-and-statistics): each claim of the
// seed articles (docs/articles.md), as data in a registry file
// (ablations/claims.registry, whose header documents the format, the
// comparisons and the verdict rule), measured on a results file with a 95%
// interval over seeds, paired by seed, and judged supported, refuted or
// inconclusive; beside it the verdict under a Holm correction across the
// table, and for an inconclusive row the seeds that would decide it. The
// interval's method is the one whose simulated coverage at the row's number
// of seeds is nearest the nominal level (sim/claims/claims_calibration.h). A
// claim whose runs are missing says which.
//
// This header is the entry point; each concern has its own file:
//   claim_registry.h     the registry file -> ClaimSpec
//   claim_expression.h   metric expressions ("1 - violation_rate")
//   claim_runs.h         a results file's runs, configs and setting labels
//   claim_selectors.h    run selectors: which runs a claim compares
//   claim_measurement.h  the comparison kinds: per-seed values of a claim
//   claim_verdicts.h     intervals, verdicts, Holm's correction, seeds needed
//   claim_tables.h       /claims, /claims_seeds and the text tables
#pragma once
#include <string>
#include <vector>

#include "sim/claims/claim_expression.h"
#include "sim/claims/claim_measurement.h"
#include "sim/claims/claim_registry.h"
#include "sim/claims/claim_runs.h"
#include "sim/claims/claim_selectors.h"
#include "sim/claims/claim_tables.h"
#include "sim/claims/claim_verdicts.h"
#include "sim/claims/stats.h"
#include "sim/results.h"

namespace zl {

// Evaluates every claim: measures it, picks each row's interval method,
// judges it, then applies Holm across the rows. A known method's row whose
// runs are not in the file is left out (a study that did not run the method
// has nothing to say about it); known_without_runs names them.
std::vector<ClaimResult> evaluate_claims(const std::vector<ClaimSpec>& specs, const ClaimsInput& input,
                                         const ClaimsOptions& options = {});

// The known-method rows of the registry that evaluate_claims left out for want
// of runs: "S000-kv@h2o (variant=h2o)", one per row.
std::vector<std::string> known_without_runs(const std::vector<ClaimSpec>& specs,
                                            const std::vector<ClaimResult>& results);

}  // namespace zl
