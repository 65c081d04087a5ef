#include "sim/claims/scaling.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <variant>

#include "sim/claims/least_squares.h"
#include "sim/metrics.h"

namespace zl {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string signature_of(const ClaimRun& run) {
  std::string sig;
  for (const auto& [key, value] : run.config)
    if (key.rfind("model.", 0) == 0) sig += key + "=" + value + " ";
  return sig;
}

std::string config_or(const ClaimRun& run, const std::string& key, const std::string& fallback) {
  auto it = run.config.find(key);
  return it == run.config.end() ? fallback : it->second;
}

double param_count(const ClaimRun& run) {
  auto it = run.metrics.find("params");
  return it == run.metrics.end() ? kNaN : it->second;
}

// Appends t's rows to `into` (same columns, same order: both from one builder).
void append_rows(Table& into, const Table& t) {
  if (into.names.empty()) {
    into = t;
    return;
  }
  for (size_t c = 0; c < t.columns.size(); ++c)
    std::visit(
        [&](auto& dst) {
          const auto& src = std::get<std::decay_t<decltype(dst)>>(t.columns[c]);
          dst.insert(dst.end(), src.begin(), src.end());
        },
        into.columns[c]);
}

// Adds the size's label and parameter count to each of `rows` rows.
void add_size_columns(Table& t, const ModelSize& size, size_t rows) {
  t.add("size", std::vector<std::string>(rows, size.label));
  t.add("params", std::vector<double>(rows, size.params));
}

// The least-squares slope of y against x for `resamples` draws of the seeds
// with replacement, each seed drawn whole: its values at every size together
// (by_seed[size][seed]), so a draw keeps the pairing the per-size rows use.
std::vector<double> bootstrap_slopes(const std::vector<double>& x, const std::vector<std::vector<double>>& by_seed,
                                     int resamples, unsigned seed) {
  const size_t n = by_seed.front().size();
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  std::vector<double> slopes, y(by_seed.size());
  std::vector<size_t> draw(n);
  slopes.reserve(resamples);
  for (int b = 0; b < resamples; ++b) {
    for (auto& d : draw) d = pick(rng);
    for (size_t i = 0; i < by_seed.size(); ++i) {
      double sum = 0;
      for (size_t d : draw) sum += by_seed[i][d];
      y[i] = sum / n;
    }
    slopes.push_back(fit_line(x, y).slope);
  }
  return slopes;
}

std::string params_text(double p) {
  if (std::isnan(p)) return "? parameters";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3gM parameters", p / 1e6);
  return buf;
}

}  // namespace

std::vector<ModelSize> model_sizes(const std::vector<ClaimRun>& runs) {
  std::map<std::string, ModelSize> by_sig;
  std::map<std::string, std::vector<double>> baseline_params, any_params;
  for (const auto& r : runs) {
    const std::string sig = signature_of(r);
    ModelSize& s = by_sig[sig];
    if (s.runs++ == 0) {
      s.signature = sig;
      s.label = config_or(r, "model.layers", "?") + "x" + config_or(r, "model.dim", "?");
    }
    const double p = param_count(r);
    if (std::isnan(p)) continue;
    any_params[sig].push_back(p);
    if (config_or(r, "variant", "") == "baseline") baseline_params[sig].push_back(p);
  }
  std::vector<ModelSize> out;
  for (auto& [sig, s] : by_sig) {
    if (!baseline_params[sig].empty()) s.params = percentile(baseline_params[sig], 50);  // the median
    else if (!any_params[sig].empty()) s.params = *std::min_element(any_params[sig].begin(), any_params[sig].end());
    out.push_back(s);
  }
  // Two shapes with one label (a context or head count apart) keep their own
  // signatures; their labels say which differs.
  std::map<std::string, int> label_count;
  for (const auto& s : out) ++label_count[s.label];
  for (auto& s : out)
    if (label_count[s.label] > 1) s.label += " (" + s.signature.substr(0, s.signature.size() - 1) + ")";
  std::sort(out.begin(), out.end(), [](const ModelSize& a, const ModelSize& b) {
    const double pa = std::isnan(a.params) ? INFINITY : a.params, pb = std::isnan(b.params) ? INFINITY : b.params;
    return pa != pb ? pa < pb : a.label < b.label;
  });
  return out;
}

ClaimsInput runs_of_size(const ClaimsInput& in, const ModelSize& size) {
  ClaimsInput out;
  out.table = in.table;
  for (const auto& r : in.runs)
    if (signature_of(r) == size.signature) out.runs.push_back(r);
  return out;
}

std::vector<SizedClaims> evaluate_claims_by_size(const std::vector<ClaimSpec>& specs, const ClaimsInput& input,
                                                 const ClaimsOptions& options) {
  std::vector<SizedClaims> out;
  const auto sizes = model_sizes(input.runs);
  if (sizes.size() <= 1) {
    out.push_back({sizes.empty() ? ModelSize{} : sizes.front(), evaluate_claims(specs, input, options)});
    return out;
  }
  for (const auto& size : sizes) out.push_back({size, evaluate_claims(specs, runs_of_size(input, size), options)});
  return out;
}

int toward_region(double value, double lo, double hi) {
  if (value < lo) return +1;
  if (value > hi) return -1;
  const bool lo_finite = std::isfinite(lo), hi_finite = std::isfinite(hi);
  if (lo_finite && hi_finite) {
    const double mid = (lo + hi) / 2;
    return value < mid ? +1 : value > mid ? -1 : 0;
  }
  if (lo_finite) return +1;  // lo .. inf: higher is deeper in
  if (hi_finite) return -1;
  return 0;
}

std::vector<ClaimTrend> claim_trends(const std::vector<SizedClaims>& sized, double level, int resamples,
                                     unsigned seed) {
  std::vector<ClaimTrend> out;
  if (sized.empty()) return out;
  // Rows by claim id across sizes (a known method's row can be absent at a size).
  std::vector<std::string> ids;
  std::map<std::string, std::vector<std::pair<const SizedClaims*, const ClaimResult*>>> rows;
  for (const auto& sc : sized)
    for (const auto& r : sc.results) {
      if (!rows.count(r.spec->id)) ids.push_back(r.spec->id);
      rows[r.spec->id].push_back({&sc, &r});
    }
  for (const auto& id : ids) {
    ClaimTrend t;
    t.spec = rows[id].front().second->spec;
    // The sizes that measured it, and the seeds every one of them has.
    std::vector<std::pair<const SizedClaims*, const ClaimResult*>> have;
    for (const auto& [sc, r] : rows[id])
      if (!r->per_seed.empty() && !std::isnan(sc->size.params)) have.push_back({sc, r});
    std::set<int64_t> common;
    for (size_t i = 0; i < have.size(); ++i) {
      std::set<int64_t> both;
      for (const auto& [k, v] : have[i].second->per_seed)
        if (i == 0 || common.count(k)) both.insert(k);
      common.swap(both);
    }
    t.seeds = static_cast<int>(common.size());
    if (have.size() < 2 || common.empty()) {
      t.note = have.size() < 2 ? "a trend needs a value at two sizes or more; " + std::to_string(have.size()) +
                                     " of " + std::to_string(sized.size()) + " have one"
                               : "no seed has a value at every size";
      out.push_back(std::move(t));
      continue;
    }
    const std::vector<int64_t> seeds(common.begin(), common.end());
    std::vector<double> x;
    std::vector<std::vector<double>> by_seed(have.size());  // [size][seed]
    for (size_t i = 0; i < have.size(); ++i) {
      t.sizes.push_back(have[i].first->size.label);
      t.params.push_back(have[i].first->size.params);
      t.verdicts.push_back(have[i].second->verdict);
      x.push_back(std::log10(have[i].first->size.params));
      double sum = 0;
      for (int64_t s : seeds) {
        by_seed[i].push_back(have[i].second->per_seed.at(s));
        sum += by_seed[i].back();
      }
      t.values.push_back(sum / seeds.size());
    }
    const LineFit fit = fit_line(x, t.values);
    t.slope = fit.slope;
    if (seeds.size() >= 2) {
      const auto boot = bootstrap_slopes(x, by_seed, resamples, seed);
      const double a = 100 * (1 - level) / 2;
      t.lo = percentile(boot, a);
      t.hi = percentile(boot, 100 - a);
      // Each seed's own slope; their t interval does not shrink to the range
      // of three values as the bootstrap does.
      std::vector<double> per_seed;
      for (size_t d = 0; d < seeds.size(); ++d) {
        std::vector<double> ys;
        for (size_t i = 0; i < have.size(); ++i) ys.push_back(by_seed[i][d]);
        per_seed.push_back(fit_line(x, ys).slope);
      }
      const Interval ti = MeanEstimate(per_seed).interval(CiMethod::t, level);
      t.t_lo = ti.lo;
      t.t_hi = ti.hi;
      const double at_largest = fit.intercept + fit.slope * *std::max_element(x.begin(), x.end());
      const int want = toward_region(at_largest, t.spec->region_lo, t.spec->region_hi);
      if (t.lo <= 0 && t.hi >= 0) t.direction = "flat";
      else if (want == 0) t.note = "the claimed region is the whole line: no direction";
      else t.direction = (t.slope > 0) == (want > 0) ? "toward" : "away";
    } else {
      t.note = "one seed common to the sizes: no interval";
    }
    out.push_back(std::move(t));
  }
  return out;
}

namespace {

// One table of every size's rows: `build` makes a size's, then its size columns.
Table per_size(const std::vector<SizedClaims>& sized, Table (*build)(const std::vector<ClaimResult>&)) {
  Table out;
  for (const auto& sc : sized) {
    Table t = build(sc.results);
    add_size_columns(t, sc.size, t.rows());
    append_rows(out, t);
  }
  return out;
}

}  // namespace

Table sized_claims_table(const std::vector<SizedClaims>& sized) { return per_size(sized, claims_table); }

Table sized_claim_seeds_table(const std::vector<SizedClaims>& sized) { return per_size(sized, claim_seeds_table); }

Table claim_trends_table(const std::vector<ClaimTrend>& trends) {
  std::vector<std::string> id, direction, note, sizes;
  std::vector<int64_t> n_sizes, seeds;
  std::vector<double> slope, lo, hi, t_lo, t_hi, p_small, p_large, v_small, v_large, r_lo, r_hi;
  for (const auto& t : trends) {
    id.push_back(t.spec->id);
    std::string joined;
    for (const auto& s : t.sizes) joined += (joined.empty() ? "" : ",") + s;
    sizes.push_back(joined);
    n_sizes.push_back(static_cast<int64_t>(t.sizes.size()));
    seeds.push_back(t.seeds);
    slope.push_back(t.slope);
    lo.push_back(t.lo);
    hi.push_back(t.hi);
    t_lo.push_back(t.t_lo);
    t_hi.push_back(t.t_hi);
    p_small.push_back(t.params.empty() ? kNaN : t.params.front());
    p_large.push_back(t.params.empty() ? kNaN : t.params.back());
    v_small.push_back(t.values.empty() ? kNaN : t.values.front());
    v_large.push_back(t.values.empty() ? kNaN : t.values.back());
    r_lo.push_back(t.spec->region_lo);
    r_hi.push_back(t.spec->region_hi);
    direction.push_back(t.direction);
    note.push_back(t.note);
  }
  Table t;
  t.add("id", id);
  t.add("sizes", sizes);
  t.add("n_sizes", n_sizes);
  t.add("seeds", seeds);
  t.add("slope", slope);  // value per decade of parameters
  t.add("slope_lo", lo);
  t.add("slope_hi", hi);
  t.add("slope_t_lo", t_lo);
  t.add("slope_t_hi", t_hi);
  t.add("params_smallest", p_small);
  t.add("params_largest", p_large);
  t.add("value_smallest", v_small);
  t.add("value_largest", v_large);
  t.add("region_lo", r_lo);
  t.add("region_hi", r_hi);
  t.add("direction", direction);
  t.add("note", note);
  return t;
}

std::string format_sized_claims(const std::vector<SizedClaims>& sized, bool holm) {
  if (sized.size() == 1) return format_claims(sized.front().results, holm);
  std::ostringstream out;
  for (const auto& sc : sized)
    out << "== size " << sc.size.label << ": " << params_text(sc.size.params) << ", " << sc.size.runs
        << " runs ==\n"
        << format_claims(sc.results, holm) << "\n";
  return out.str();
}

std::string format_trends(const std::vector<ClaimTrend>& trends, double level) {
  std::ostringstream out;
  char line[512];
  const std::string ci = std::to_string(static_cast<int>(std::lround(level * 100))) + "% bootstrap";
  out << "Trend across sizes: the value's slope per 10x parameters (least squares on log10(parameters)), its "
      << ci << " interval with seeds resampled whole, and the t interval of the per-seed slopes.\n";
  std::snprintf(line, sizeof line, "%-28s %-22s %-34s %-24s %-22s %s\n", "claim", "smallest -> largest",
                ("slope per 10x [" + ci + "]").c_str(), "t over seeds", "claimed", "trend");
  out << line;
  std::string without;  // claims with a value at fewer than two sizes, named once at the end
  for (const auto& t : trends) {
    if (t.sizes.size() < 2) {
      without += (without.empty() ? "" : ", ") + t.spec->id;
      continue;
    }
    const std::string span = format_value(t.values.front()) + " -> " + format_value(t.values.back());
    const std::string slope = std::isnan(t.lo) ? format_value(t.slope)
                                               : format_value(t.slope) + " [" + format_value(t.lo) + ", " +
                                                     format_value(t.hi) + "]";
    const std::string tci =
        std::isnan(t.t_lo) ? "-" : "[" + format_value(t.t_lo) + ", " + format_value(t.t_hi) + "]";
    std::snprintf(line, sizeof line, "%-28s %-22s %-34s %-24s %-22s %s\n", t.spec->id.c_str(), span.c_str(),
                  slope.c_str(), tci.c_str(), t.spec->claimed_text.c_str(),
                  t.direction.empty() ? "-" : t.direction.c_str());
    out << line << "   ";
    for (size_t i = 0; i < t.sizes.size(); ++i)
      out << " " << t.sizes[i] << ": " << format_value(t.values[i]) << " " << t.verdicts[i]
          << (i + 1 < t.sizes.size() ? ";" : "");
    out << "\n";
    if (!t.note.empty()) out << "    " << t.note << "\n";
  }
  if (!without.empty()) out << "No trend (a value at fewer than two sizes): " << without << "\n";
  return out.str();
}

}  // namespace zl
