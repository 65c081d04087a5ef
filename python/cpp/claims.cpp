// The claims table (sim/claims/claims.h) from Python.
#include <pybind11/stl.h>

#include <cmath>
#include <utility>

#include "python/cpp/module.h"
#include "sim/claims/claims.h"
#include "sim/claims/claims_file.h"
#include "sim/claims/scaling.h"

namespace py = pybind11;

namespace zl::python {

namespace {

py::dict row_of(const ClaimResult& r, const ModelSize& size) {
  py::dict d;
  d["id"] = r.spec->id;
  d["source"] = r.spec->source;
  d["claim"] = r.spec->claim;
  d["metric"] = r.spec->metric;
  d["comparison"] = r.spec->comparison;
  d["claimed"] = r.spec->claimed_text;
  d["region_lo"] = r.spec->region_lo;
  d["region_hi"] = r.spec->region_hi;
  d["value"] = r.value;
  d["ci_lo"] = r.lo;
  d["ci_hi"] = r.hi;
  d["seeds"] = r.seeds;
  d["verdict"] = r.verdict;
  d["note"] = r.note;
  d["method"] = r.seeds > 0 ? method_name(r.method) : "";
  const bool any = r.seeds > 0;
  for (auto [name, ci] : {std::pair{"t", &r.t}, std::pair{"boot", &r.percentile}, std::pair{"bca", &r.bca}}) {
    d[(std::string(name) + "_lo").c_str()] = any ? ci->lo : NAN;
    d[(std::string(name) + "_hi").c_str()] = any ? ci->hi : NAN;
  }
  d["p_support"] = r.p_support;
  d["p_refute"] = r.p_refute;
  d["verdict_holm"] = r.verdict_holm;
  d["seeds_needed"] = r.seeds_needed;
  d["known_method"] = r.spec->known_method;
  d["of_claim"] = r.spec->of_claim;
  d["by_construction"] = r.spec->by_construction;
  d["revised"] = revision_dates(*r.spec);
  d["operating_point"] = r.operating_point;
  d["per_seed"] = r.per_seed;
  d["size"] = size.label;
  d["params"] = size.params;
  return d;
}

py::dict trend_of(const ClaimTrend& t) {
  py::dict d;
  d["id"] = t.spec->id;
  d["sizes"] = t.sizes;
  d["params"] = t.params;
  d["values"] = t.values;
  d["verdicts"] = t.verdicts;
  d["seeds"] = t.seeds;
  d["slope"] = t.slope;
  d["slope_lo"] = t.lo;
  d["slope_hi"] = t.hi;
  d["slope_t_lo"] = t.t_lo;
  d["slope_t_hi"] = t.t_hi;
  d["region_lo"] = t.spec->region_lo;
  d["region_hi"] = t.spec->region_hi;
  d["direction"] = t.direction;
  d["note"] = t.note;
  return d;
}

// Judges the file size by size; writes /claims, /claims_seeds and, for
// several sizes, /claims_trend when asked.
std::vector<SizedClaims> judge(const std::vector<ClaimSpec>& specs, const RegistryStamp& stamp,
                               const std::string& results, double level, const std::string& method, bool write,
                               std::vector<ClaimTrend>* trends) {
  ClaimsOptions opt;
  opt.level = level;
  opt.method = method;
  if (method != "auto") parse_method(method);  // names the choices
  auto sized = evaluate_claims_by_size(specs, load_claims_input(results), opt);
  *trends = sized.size() > 1 ? claim_trends(sized, level) : std::vector<ClaimTrend>{};
  if (write) write_claims(results, sized, *trends, stamp);
  return sized;
}

std::string registry_or_default(const std::string& registry) {
  return registry.empty() ? std::string(ZL_SOURCE_DIR) + "/ablations/claims.registry" : registry;
}

}  // namespace

void register_claims(py::module& m) {
  m.def(
      "claims",
      [](const std::string& results, const std::string& registry, double level, const std::string& method,
         bool write) {
        std::vector<ClaimSpec> specs;
        std::vector<SizedClaims> sized;
        std::vector<ClaimTrend> trends;
        {
          py::gil_scoped_release release;
          const std::string path = registry_or_default(registry);
          const std::string text = read_registry(path);
          specs = parse_registry(text, path);
          sized = judge(specs, registry_stamp(path, text, ZL_SOURCE_DIR), results, level, method, write, &trends);
        }
        py::list rows;
        for (const auto& sc : sized)
          for (const auto& r : sc.results) rows.append(row_of(r, sc.size));
        return rows;
      },
      py::arg("results"), py::arg("registry") = "", py::arg("level") = 0.95, py::arg("method") = "auto",
      py::arg("write") = true,
      R"doc(Judges every claim of the registry on a results file, as `zerolayer claims`.

Returns one dict per claim (id, claim, value, ci_lo, ci_hi, seeds, verdict,
note, method, t_lo/t_hi, boot_lo/boot_hi, bca_lo/bca_hi, p_support,
p_refute, verdict_holm, seeds_needed, known_method, of_claim,
by_construction (why the value is fixed by the design; such a row is outside
the Holm family), revised (the dates its reading changed after its data was
seen, docs/claims.md#pre-registration), operating_point (the calibrated targets of its runs), per_seed:
{seed: value}, and size, params: the model shape, "LAYERSxDIM", and its
parameter count). A file of several model sizes (ablations/scale.ini) gives
each claim once per size, smallest first, each size judged on its own runs;
claim_trends() gives the trend across them. A known method's row (registry
key known.NAME) has id CLAIM@NAME, known_method NAME and of_claim CLAIM; it
is left out when the file has no runs of it. `method` is auto (the interval
whose simulated coverage at the row's n is nearest `level`), t, percentile
or bca. With write=True the tables are also stored as /claims and
/claims_seeds (and /claims_trend for several sizes) in the file.
`registry` defaults to ablations/claims.registry in the source tree.)doc");
  m.def(
      "claim_trends",
      [](const std::string& results, const std::string& registry, double level, const std::string& method) {
        std::vector<ClaimTrend> trends;
        std::vector<ClaimSpec> specs;
        {
          py::gil_scoped_release release;
          specs = load_registry(registry_or_default(registry));
          judge(specs, {}, results, level, method, false, &trends);
        }
        py::list rows;
        for (const auto& t : trends) rows.append(trend_of(t));
        return rows;
      },
      py::arg("results"), py::arg("registry") = "", py::arg("level") = 0.95, py::arg("method") = "auto",
      R"doc(Each claim's trend across the model sizes of a results file, as `zerolayer claims` prints it.

One dict per claim: id, sizes (labels, smallest first), params, values (means
over the seeds common to the sizes), verdicts (per size), seeds, slope (the
value per decade of parameters, least squares on log10(params)),
slope_lo/slope_hi (percentile bootstrap, seeds resampled whole),
slope_t_lo/slope_t_hi (t over the per-seed slopes), region_lo/region_hi,
direction (toward | away | flat | "" with a note). Empty for a file of one
size. Nothing is written.)doc");
}

}  // namespace zl::python
