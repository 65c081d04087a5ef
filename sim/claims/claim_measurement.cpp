// The comparison kinds: one function each, and the table that names them.
// Each function fills the per-seed values of one claim from its selected runs.
#include "sim/claims/claim_measurement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>
#include <variant>

#include "sim/claims/claim_tables.h"
#include "sim/claims/least_squares.h"
#include "sim/util/format.h"

namespace zl {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// value: the metric of the treatment runs, one run per seed.
void measure_value(const ComparisonInput& in, Measurement& out) {
  if (!one_per_seed(in.treatment, in.spec.treatment, &out.problem)) return;
  for (const auto& [seed, runs] : in.treatment) {
    double t = in.metric->eval(runs[0]->metrics, &out.unmeasured);
    if (std::isfinite(t)) out.per_seed[seed] = t;
  }
}

// The treatment's metric against the control's, one run each per seed,
// paired by seed through `combine`; a treatment seed without a control run
// is left out and counted in the note.
void measure_paired(const ComparisonInput& in, Measurement& out, double (*combine)(double t, double c)) {
  if (!one_per_seed(in.treatment, in.spec.treatment, &out.problem)) return;
  if (in.control.empty()) {
    out.problem = "missing: " + why_missing(in.spec.control, in.input);
    return;
  }
  if (!one_per_seed(in.control, in.spec.control, &out.problem)) return;
  int unpaired = 0;
  for (const auto& [seed, runs] : in.treatment) {
    double t = in.metric->eval(runs[0]->metrics, &out.unmeasured);
    auto it = in.control.find(seed);
    if (it == in.control.end()) {
      ++unpaired;
      continue;
    }
    double c = in.metric->eval(it->second[0]->metrics, &out.unmeasured);
    double v = combine(t, c);
    if (std::isfinite(v)) out.per_seed[seed] = v;
  }
  if (unpaired) out.note = std::to_string(unpaired) + " treatment seed(s) without a control run";
}

// difference: metric(treatment) - metric(control), paired by seed.
void measure_difference(const ComparisonInput& in, Measurement& out) {
  measure_paired(in, out, [](double t, double c) { return t - c; });
}

// relative: (metric(treatment) - metric(control)) / metric(control), paired by seed.
void measure_relative(const ComparisonInput& in, Measurement& out) {
  measure_paired(in, out, [](double t, double c) { return c != 0 ? (t - c) / c : kNaN; });
}

// One seed's treatment runs by their value of the swept key `over`; false,
// with out.problem, when a run has no numeric value of it or two share one.
bool by_swept_value(const ComparisonInput& in, int64_t seed, const std::vector<const ClaimRun*>& runs,
                    std::map<double, const ClaimRun*>* by_value, Measurement& out) {
  const ClaimSpec& s = in.spec;
  for (const ClaimRun* r : runs) {
    auto it = r->config.find(s.over);
    double x;
    if (it == r->config.end() || !parse_number(it->second, &x)) {
      out.problem = "missing: run " + r->run_id + " has no numeric config key " + s.over;
      return false;
    }
    if (!by_value->emplace(x, r).second) {
      out.problem = "ambiguous: two runs with seed=" + std::to_string(seed) + " and " + s.over + "=" +
                    format_value(x) + " match " + s.treatment + "; name the key they differ in";
      return false;
    }
  }
  return true;
}

// A sweep that gave no value anywhere, with every metric measured: too few
// values of the swept key per seed.
void too_few_swept_values(const ComparisonInput& in, Measurement& out, const char* fewest) {
  if (out.per_seed.empty() && out.unmeasured.empty())
    out.problem = "missing: fewer than " + std::string(fewest) + " values of " + in.spec.over +
                  " per seed among runs with " + in.spec.treatment;
}

// argmin: the value of `over` at which the metric is lowest among one seed's
// treatment runs (e.g. the best temperature).
void measure_argmin(const ComparisonInput& in, Measurement& out) {
  for (const auto& [seed, runs] : in.treatment) {
    std::map<double, const ClaimRun*> by_value;
    if (!by_swept_value(in, seed, runs, &by_value, out)) return;
    if (by_value.size() < 2) continue;  // nothing to choose between
    double best_x = kNaN, best = kInf;
    for (const auto& [x, r] : by_value) {
      double v = in.metric->eval(r->metrics, &out.unmeasured);
      if (std::isfinite(v) && v < best) best = v, best_x = x;
    }
    if (std::isfinite(best_x)) out.per_seed[seed] = best_x;
  }
  too_few_swept_values(in, out, "2");
}

// breakpoint: the value of `over` where the metric's slope against it
// changes, per seed: the knot of a hinge fit (least_squares.h).
void measure_breakpoint(const ComparisonInput& in, Measurement& out) {
  for (const auto& [seed, runs] : in.treatment) {
    std::map<double, const ClaimRun*> by_value;
    if (!by_swept_value(in, seed, runs, &by_value, out)) return;
    std::vector<double> xs, ys;
    for (const auto& [x, r] : by_value) {
      xs.push_back(x);
      ys.push_back(in.metric->eval(r->metrics, &out.unmeasured));
    }
    const HingeFit f = fit_hinge(xs, ys);
    if (std::isfinite(f.knot)) out.per_seed[seed] = f.knot;
  }
  too_few_swept_values(in, out, "4");
}

double column_value(const Table::Column& col, size_t i) {
  if (auto* d = std::get_if<std::vector<double>>(&col)) return (*d)[i];
  if (auto* n = std::get_if<std::vector<int64_t>>(&col)) return static_cast<double>((*n)[i]);
  return kNaN;
}

// A numeric cell as a selector compares it: integers without a decimal point.
std::string format_exact(double v) { return significant(v, 17); }

// trend: per run (one per seed), the relative change of a least-squares line
// fitted to column `y` against column `x` of the per-run table `table` (its
// rows that `rows` keeps), from x's smallest to its largest value, the fitted
// values clipped to [0, 1] (the columns are rates or 0/1 indicators).
void measure_trend(const ComparisonInput& in, Measurement& out) {
  const ClaimSpec& s = in.spec;
  if (!one_per_seed(in.treatment, s.treatment, &out.problem)) return;
  for (const auto& [seed, runs] : in.treatment) {
    const Table* t = in.input.table ? in.input.table(runs[0]->run_id, s.table) : nullptr;
    if (t == nullptr) {
      out.problem = "missing: run " + runs[0]->run_id + " (" + s.treatment + ") has no table " + s.table;
      return;
    }
    const Table::Column* xc = t->find(s.x);
    const Table::Column* yc = t->find(s.y);
    if (!xc || !yc) {
      out.problem = "missing: table " + s.table + " of run " + runs[0]->run_id + " has no column " + (xc ? s.y : s.x);
      return;
    }
    // `rows`: only the table rows whose columns match (a selector over columns).
    std::vector<std::pair<const Table::Column*, const SelectorTerm*>> filters;
    const std::vector<SelectorTerm> keep = parse_selector(s.rows);
    for (const SelectorTerm& c : keep) {
      const Table::Column* col = t->find(c.key);
      if (!col) {
        out.problem = "missing: table " + s.table + " of run " + runs[0]->run_id + " has no column " + c.key;
        return;
      }
      filters.emplace_back(col, &c);
    }
    auto kept = [&](size_t i) {
      for (const auto& [col, c] : filters) {
        const auto* str = std::get_if<std::vector<std::string>>(col);
        const std::string have = str ? (*str)[i] : format_exact(column_value(*col, i));
        bool any = false;
        for (const auto& v : c->values) any = any || same_value(have, v);
        if (!any) return false;
      }
      return true;
    };
    std::vector<double> xs, ys;
    for (size_t i = 0; i < t->rows(); ++i) {
      if (!kept(i)) continue;
      xs.push_back(column_value(*xc, i));
      double y = column_value(*yc, i);
      ys.push_back(y);
    }
    if (xs.size() < 2) continue;
    LineFit f = fit_line(xs, ys);
    if (!std::isfinite(f.slope)) continue;
    double lo_x = *std::min_element(xs.begin(), xs.end()), hi_x = *std::max_element(xs.begin(), xs.end());
    double y0 = std::clamp(f.intercept + f.slope * lo_x, 0.0, 1.0);
    double y1 = std::clamp(f.intercept + f.slope * hi_x, 0.0, 1.0);
    if (y0 > 0) out.per_seed[seed] = (y1 - y0) / y0;
  }
  if (out.per_seed.empty()) out.problem = "missing: no run's " + s.table + " spans two values of " + s.x;
}

}  // namespace

const std::vector<ComparisonKind>& comparison_kinds() {
  // The order is the registry header's, and that of the error that lists them.
  static const std::vector<ComparisonKind> kinds = {
      // name        control over   table  measure
      {"value",      false,  false, false, measure_value},
      {"difference", true,   false, false, measure_difference},
      {"relative",   true,   false, false, measure_relative},
      {"argmin",     false,  true,  false, measure_argmin},
      {"breakpoint", false,  true,  false, measure_breakpoint},
      {"trend",      false,  false, true,  measure_trend},
  };
  return kinds;
}

const ComparisonKind* find_comparison(const std::string& name) {
  for (const ComparisonKind& k : comparison_kinds())
    if (name == k.name) return &k;
  return nullptr;
}

std::string comparison_names() {
  std::string out;
  for (const ComparisonKind& k : comparison_kinds()) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

bool reads_table(const ClaimSpec& spec) {
  const ComparisonKind* k = find_comparison(spec.comparison);
  return k != nullptr && k->reads_table;
}

Measurement measure(const ClaimSpec& s, const ClaimsInput& input) {
  const ComparisonKind* kind = find_comparison(s.comparison);
  if (kind == nullptr)
    throw std::invalid_argument("claim " + s.id + ": comparison '" + s.comparison + "' is not one of " +
                                comparison_names());
  Measurement out;
  const RunsBySeed treatment = select_runs(s.treatment, input);
  if (treatment.empty()) {
    out.problem = "missing: " + why_missing(s.treatment, input);
    return out;
  }
  // The control's runs, selected once: the comparison pairs them, and the row's operating point reads them.
  const RunsBySeed control = s.control.empty() ? RunsBySeed() : select_runs(s.control, input);
  for (const auto* side : {&treatment, &control})
    for (const auto& [seed, runs] : *side) out.runs.insert(out.runs.end(), runs.begin(), runs.end());
  if (!s.requires_floor.empty()) {
    out.floors = parse_floors(s.requires_floor);
    for (const CompetenceFloor& floor : out.floors) {
      const bool on_control = floor.on == "control" || (floor.on.empty() && !s.control.empty());
      out.competence.push_back(read_floor(floor, on_control ? control : treatment, on_control ? "control" : "treatment"));
    }
  }
  std::unique_ptr<MetricExpression> metric;
  if (!s.metric.empty()) metric = std::make_unique<MetricExpression>(s.metric);
  kind->measure(ComparisonInput{s, input, treatment, control, metric.get()}, out);
  if (out.per_seed.empty() && out.problem.empty())
    out.problem = "missing: " + (out.unmeasured.empty() ? std::string("no finite value of ") + s.metric
                                                        : "metric " + out.unmeasured + " not measured") +
                  " in runs with " + s.treatment;
  return out;
}

}  // namespace zl
