// The competence floor of a claim (docs/design.md#competence): a quality
// difference between two models that both fail the task says little about
// models that do it, so a quality row states what its control must reach
// before the row is judged. Registry key `requires`:
//   requires = violation_rate <= 0.5              # on the control's runs
//   requires = violation_rate <= 0.5 on treatment # where the row has no control
//   requires = violation_rate <= 0.5; val_loss - judge_val_loss > 0
// Floors joined by ';' must all hold (the second: the independent judge is
// better than the model whose output it scores, docs/claims.md).
// An expression over one run's /index metrics (as `metric`), a comparison
// (<=, <, >=, >) and a number; the value is the mean over seeds of the
// per-seed means of the runs the side selects. Below the floor the row is
// "untestable at this competence", with the measured value, and takes no part
// in Holm's family or the seeds plan.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/claims/claim_selectors.h"

namespace zl {

struct CompetenceFloor {
  std::string text;    // as written
  std::string metric;  // the expression
  std::string op;      // <=, <, >= or >
  double bound = 0;
  std::string on;      // "control" or "treatment"; "" = the control, or the treatment where there is none
};

// Throws std::invalid_argument naming what is wrong with `text`.
CompetenceFloor parse_floor(const std::string& text);
// Every floor of a `requires` value (joined by ';'); throws naming an empty one.
std::vector<CompetenceFloor> parse_floors(const std::string& text);

// The floor read on a side's runs.
struct FloorReading {
  bool measured = false;           // some seed gave a finite value
  bool met = false;                // the mean clears the floor
  double value = 0;                // mean over seeds
  std::map<int64_t, double> per_seed;
  std::string side;                // "control" or "treatment"
};
FloorReading read_floor(const CompetenceFloor& floor, const RunsBySeed& runs, const std::string& side);

// "untestable at this competence: the control's violation_rate is 0.83 (seeds 1: 0.80, 2: 0.85, 3: 0.84),
// outside the floor violation_rate <= 0.5" (or "competent: ... within the floor ...").
std::string floor_note(const CompetenceFloor& floor, const FloorReading& reading);

}  // namespace zl
