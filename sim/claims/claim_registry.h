// The claims registry (ablations/claims.registry, whose header documents the
// format): one ClaimSpec per [claim ID] section, and one per reference row
// beside a claim (known.NAME, projected.NAME, served.NAME). Each section is
// checked as it is read; its comparison against the kinds of
// sim/claims/claim_measurement.h.
#pragma once
#include <string>
#include <vector>

namespace zl {

// A reading changed after its data was seen (registry key `revised.DATE`,
// docs/claims.md#pre-registration): kept in the registry, so that the table
// and the report can mark the row.
struct ClaimRevision {
  std::string date;     // YYYY-MM-DD
  std::string reading;  // the reading before (a metric, a comparison, a region)
  std::string value;    // the value it gave
  std::string reason;   // why it changed
};

// One [claim ID] section of the registry.
struct ClaimSpec {
  std::string id, source, claim, metric, comparison;
  std::string treatment, control;  // run selectors: "variant=sfvl verify.threshold=0.82"
  std::string over;                // argmin: the config key swept
  std::string table, x, y;         // trend: per-run table and its columns
  std::string rows;                // trend: a selector over the table's columns ("first=1 pass=quality|context")
  std::string claimed_text;        // as written ("0.37", "0.25 .. 0.44")
  double region_lo = 0, region_hi = 0;  // the claimed region the value must lie in
  std::string untestable;          // reason, or empty
  // Why the value follows from the design, not from a measurement
  // (docs/design.md#claims-and-statistics): the row keeps its verdict as a
  // manipulation check, is printed apart, and is left out of the Holm family
  // and the seeds plan.
  std::string by_construction;
  // The competence floor its control must clear (registry key `requires`,
  // sim/claims/competence_floor.h); "" = none.
  std::string requires_floor;
  std::string file;                // where the section is, for errors
  int line = 0;
  // A known method's row beside the claim (registry key `known.NAME`): the
  // claim's comparison with `treatment` the method's runs, id "CLAIM@NAME".
  // It reads the method against the claimed region and takes no part in the
  // Holm family or the seeds plan: it is a reference, not a claim.
  std::string known_method;  // NAME; empty for the article's own claims
  std::string of_claim;      // the claim it stands beside
  // A projected row (registry key `projected.NAME = METRIC`): the claim's own
  // runs and comparison on a projected metric (the serving simulator on named
  // hardware, sim/serving/projection.h), id "CLAIM@NAME". A reference beside
  // the claim like a known method's row, and labelled "projected".
  bool projected = false;
  // A served row (registry key `served.NAME = METRIC`): the same on a metric
  // of the real server here (serve_*, sim/serving/serving_run.h), labelled
  // "served"; otherwise a projected row (projected = true, name in the
  // /claims projection column).
  bool served = false;
  // Its readings changed after their data was seen, oldest first.
  std::vector<ClaimRevision> revisions;
};

// Parses a registry; each claim's `known.NAME` rows follow it in the list.
// Throws std::runtime_error naming the file, line and key
// on an unknown key, a missing required key, a bad number or comparison, or
// a metric expression that does not parse.
std::vector<ClaimSpec> parse_registry(const std::string& text, const std::string& file);
std::vector<ClaimSpec> load_registry(const std::string& path);

// The dates of a claim's revisions, oldest first, comma-separated ("" for none):
// the /claims column `revised`.
std::string revision_dates(const ClaimSpec& s);

// The registry file's text (throws naming the path when it cannot be read).
std::string read_registry(const std::string& path);

// The registry's content hash (FNV-1a, 12 hex digits, as a run id): stored
// with the table it judged, so that a table says which registry decided it.
std::string registry_hash(const std::string& text);

}  // namespace zl
