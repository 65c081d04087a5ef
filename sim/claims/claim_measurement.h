// Per-seed measurement: how a claim's value is formed from its runs, one value
// per seed (the registry key `comparison`). Each comparison kind is one
// function, and the kinds are declared once, in the table in
// claim_measurement.cpp, with what each needs from its registry section; the
// registry parser and the tables read that table. Adding a kind is one
// function and one row there, plus its line in the header of
// ablations/claims.registry.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/claims/claim_expression.h"
#include "sim/claims/claim_registry.h"
#include "sim/claims/claim_runs.h"
#include "sim/claims/claim_selectors.h"
#include "sim/claims/competence_floor.h"

namespace zl {

// A claim's values, one per seed, or why there are none.
struct Measurement {
  std::map<int64_t, double> per_seed;
  std::vector<const ClaimRun*> runs;  // every run the selectors matched
  std::string problem;     // a reason no value could be formed ("missing: ..." or "ambiguous: ...")
  std::string note;        // said beside the value (treatment seeds without a control run)
  std::string unmeasured;  // the first metric name a run lacked: the reason when no value came
  // The claim's competence floors (ClaimSpec::requires_floor), each read on its side's runs.
  std::vector<CompetenceFloor> floors;
  std::vector<FloorReading> competence;
};

// What a comparison kind measures from: the claim and its selected runs.
struct ComparisonInput {
  const ClaimSpec& spec;
  const ClaimsInput& input;
  const RunsBySeed& treatment;      // the complete runs of spec.treatment (at least one)
  const RunsBySeed& control;        // those of spec.control (none when it is not given)
  const MetricExpression* metric;   // spec.metric; null for a kind that reads a table
};

// One comparison kind: its registry name, the keys its section must give
// besides `treatment` (and `metric`, unless it reads a table), and its function.
struct ComparisonKind {
  const char* name;
  bool needs_control;  // `control`: runs paired with the treatment's by seed
  bool needs_over;     // `over`: a config key swept among one seed's treatment runs
  bool reads_table;    // `table`, `x`, `y` (and optional `rows`) of a per-run table instead of `metric`
  // Fills out.per_seed, or out.problem (and out.note, out.unmeasured).
  void (*measure)(const ComparisonInput& in, Measurement& out);

  // A projected or served row swaps in another metric of the claim's runs,
  // one run per seed: a kind that sweeps a key or reads a table has none.
  bool takes_projected_metric() const { return !needs_over && !reads_table; }
};

// Every kind, in the order the registry's header lists them.
const std::vector<ComparisonKind>& comparison_kinds();
// The kind called `name`; null when there is none.
const ComparisonKind* find_comparison(const std::string& name);
// The kinds' names for a message: "value, difference, relative, ...".
std::string comparison_names();
// Whether the claim's kind reads a per-run table (trend) rather than a metric.
bool reads_table(const ClaimSpec& spec);

// A claim's per-seed values: its treatment (and control) runs selected, then
// its kind's function. A spec whose comparison is no kind (parse_registry
// refuses those) throws std::invalid_argument naming it and the kinds.
Measurement measure(const ClaimSpec& spec, const ClaimsInput& input);

}  // namespace zl
