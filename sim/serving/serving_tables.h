// The rows a served run writes (sim/serving/serving_run.h): serve/loads,
// serve/sensitivity, serve/steps and serve/review, and the columns
// serve/profile and serve/steps share. Layout: docs/results_schema.md.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/results.h"
#include "sim/serving/cost_model.h"
#include "sim/serving/resample.h"
#include "sim/serving/serve_loop.h"
#include "sim/serving/serving_metrics.h"

namespace zl {

// What serve/profile and serve/steps both say of a step's shape, in this
// column order: parts, tokens, decodes, prefill_tokens, keys, after_idle,
// prefilled_last, prefilled_earlier, samples.
struct ShapeColumns {
  std::vector<int64_t> parts, tokens, decodes, prefill, keys, after_idle, prefilled_last, prefilled_earlier, samples;
  void add(const StepShape& shape);
  void into(Table& t) const;
};

// Every figure of a list of ServingMetrics, one column per name: what
// serve/loads and serve/sensitivity share after their own key columns.
struct FigureColumns {
  std::map<std::string, std::vector<double>> columns;
  void add(const ServingMetrics& m);
  void into(Table& t) const;
};

// Rows of serve/loads: each measured repeat (0, 1, ...) and the simulated
// (repeat 0).
struct LoadRows {
  std::vector<std::string> side;
  std::vector<double> load, rate;
  std::vector<int64_t> repeat;
  FigureColumns figures;
  void add(const std::string& s, double l, double rt, const ServingMetrics& m, int64_t rep = 0);
  Table table() const;
};

// Rows of serve/sensitivity: per load, the simulated figures with every
// step `step_scale` times as long as the cost model says: a fixed scale
// (matched = -1), or the speed measured repeat `matched` ran at against
// the model (its time-weighted measured / predicted step time).
struct SensitivityRows {
  std::vector<double> load, rate, step_scale;
  std::vector<int64_t> matched;
  FigureColumns figures;
  void add(double l, double rt, double scale, const ServingMetrics& m, int64_t repeat = -1);
  Table table() const;
};

// Rows of serve/steps: every measured step, the load and repeat it served,
// and what the load's cost model predicted for it.
struct StepRows {
  std::vector<StepRecord> steps;
  std::vector<double> load;
  std::vector<int64_t> repeat, predicted_ns;
  // Adds one repeat's steps; returns how fast it ran against `cost`: its
  // time-weighted measured / predicted step time (0 without steps).
  double add(double l, int64_t rep, std::vector<StepRecord> ran, const StepCostModel& cost);
  Table table() const;
};

// serve/review (a hook's): the rates the simulator draws fires at, by output
// position band and kind (NaN where the profile had too few: the kind's
// pooled rate answers).
Table review_table(const ResampleModel& m);

// The loads' main figures on stdout, a line per side and repeat.
void print_loads(const std::string& variant, const LoadRows& rows);

}  // namespace zl
