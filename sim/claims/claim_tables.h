// The claims as tables: /claims and /claims_seeds for the results file
// (docs/results_schema.md), and as text: the claims table, two lines per
// claim, and the seeds plan for the inconclusive rows.
#pragma once
#include <string>
#include <vector>

#include "sim/claims/claim_verdicts.h"
#include "sim/results.h"

namespace zl {

// The /claims table written into the results file: one row per claim.
Table claims_table(const std::vector<ClaimResult>& results);

// The per-seed values behind every row: id, seed, value (the /claims_seeds table).
Table claim_seeds_table(const std::vector<ClaimResult>& results);

// A value as the tables print it: 4 significant digits, nan and inf spelled out.
std::string format_value(double v);

// The table as text, two lines per claim; `holm` adds the Holm column.
std::string format_claims(const std::vector<ClaimResult>& results, bool holm = true);

// What would decide the inconclusive rows: per row the seeds needed, then the
// overrides that run them (`study` is the study file to name). It says that
// the seed is every row's unit, per-fact rows (many judged statements per
// seed) included.
std::string format_plan(const std::vector<ClaimResult>& results, const std::string& study, double power);

}  // namespace zl
