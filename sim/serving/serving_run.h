// A run, served (issue 14): after the quality pass, when serve.enabled, the
// trained model is served by continuous batching at each load. The real
// server's step is profiled first and a cost model fitted to it
// (sim/serving/calibration.h); the simulator, on that model, gives the
// capacity the loads are shares of, then predicts each load's figures
// beside the measured ones, and finds the highest rate that meets the SLOs.
// Last, the same scheduler runs on a roofline of each named accelerator and
// model shape (sim/serving/roofline.h): figures labelled "projected".
//
// Into the run's record: tables serve/loads (one row per load and side:
// measured, simulated, with every figure under vLLM's names), serve/steps
// (each measured step: start, end, shape), serve/profile (the calibration
// profile and the fitted prediction), serve/projected; and scalars serve_*
// (here) and projected_* (the first accelerator and shape) for the claims.
#pragma once
#include "sim/open_run.h"
#include "sim/results.h"

namespace zl {

void serve_run(OpenRun& run, RunRecord& r);

}  // namespace zl
