// The served run carried to named hardware (issue 14 §4): the same scheduler
// and workload shape, on a roofline of each accelerator in serve.hardware
// (ablations/hardware.ini: spec-sheet figures with their sources) for each
// model shape in serve.shapes, the variant's cost carried over from what
// was measured here (sim/serving/roofline.h, VariantScaling). Every figure
// is labelled "projected": table serve/projected, and scalars projected_*
// for the first accelerator and shape.
#pragma once
#include <string>

#include "models/eviction.h"
#include "sim/open_run.h"
#include "sim/results.h"
#include "sim/serving/simulator.h"

namespace zl {

// The catalog serve.hardware and serve.shapes name: this source tree's
// ablations/hardware.ini.
std::string hardware_catalog_path();

// `kv_bytes_per_token`: what the variant's cache holds per token, as a large
// model's would (sim/serving/serving_run.cpp, projected_kv_bytes).
void project(OpenRun& run, const ResampleModel& resample, double kv_bytes_per_token, const EvictionOptions& eviction,
             RunRecord& r);

}  // namespace zl
