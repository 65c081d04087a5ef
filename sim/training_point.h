// The operating point of a knob that shapes training (sim/operating_point.h):
// sfcl's width, solved for seed 000 §2.1's 11.7% time share before the model
// trains. A step's time follows its shapes, not its weights, so the metric is
// measured on untrained models of each width, or, for the analytic target
// (flops_share_correction), computed from the shapes. It is solved once per
// study (docs/design.md#operating-points): the first run writes it to the study's folder
// (study_operating_point_path) under a lock, and every other seed, shard and
// resumed pass reads it back. A copy is written beside the checkpoint
// (operating_point.ini) under the checkpoint's lock: every run that decodes
// the checkpoint (sfcl's, oet's, a paired-timing reopen) reads the width it
// was trained at.
#pragma once
#include "sim/config.h"
#include "sim/data.h"
#include "sim/operating_point.h"
#include "sim/results.h"

namespace zl {

// Sets `cfg`'s knob if the run has a training target
// (training_operating_point), from the checkpoint's operating_point.ini or,
// when there is none yet, by solving it (solve_on_grid) and writing it there.
// `r` gets calibrated_target, calibrated_knob_value, calibrated_reached,
// calibrated_probes, the table calibration/probes and the config with the
// solved knob. Returns whether the run had a training target.
bool settle_training_point(RunConfig& cfg, const Dataset& data, RunRecord& r);

// Where the study keeps the solution for `cfg`'s target: a file under
// output.dir/operating_points/ named by what the knob's metric depends on (the
// train_id with the seed and the training schedule set aside), so that every
// seed, shard and later pass of the study reads one solution.
std::string study_operating_point_path(const RunConfig& cfg);

// What a run records of its solved operating point (either kind): the
// target, the knob, the value reached where it was solved, the probes
// (calibration/probes), and `cfg` (with the knob set) as its config.
void record_solved_point(const OperatingPoint& op, const SolvedPoint& s, const RunConfig& cfg, RunRecord& r);

}  // namespace zl
