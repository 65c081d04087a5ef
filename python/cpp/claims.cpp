// The claims table (sim/claims/claims.h) from Python.
#include <pybind11/stl.h>

#include <cmath>
#include <utility>

#include "python/cpp/module.h"
#include "sim/claims/claims.h"

namespace py = pybind11;

namespace zl::python {

void register_claims(py::module& m) {
  m.def(
      "claims",
      [](const std::string& results, const std::string& registry, double level, const std::string& method,
         bool write) {
        std::vector<ClaimSpec> specs;
        std::vector<ClaimResult> table;
        {
          py::gil_scoped_release release;
          specs = load_registry(registry.empty() ? std::string(ZL_SOURCE_DIR) + "/ablations/claims.registry"
                                                 : registry);
          ClaimsOptions opt;
          opt.level = level;
          opt.method = method;
          if (method != "auto") parse_method(method);  // names the choices
          table = evaluate_claims(specs, load_claims_input(results), opt);
          if (write) {
            write_table(results, "claims", claims_table(table));
            write_table(results, "claims_seeds", claim_seeds_table(table));
          }
        }
        py::list rows;
        for (const auto& r : table) {
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
          d["per_seed"] = r.per_seed;
          rows.append(d);
        }
        return rows;
      },
      py::arg("results"), py::arg("registry") = "", py::arg("level") = 0.95, py::arg("method") = "auto",
      py::arg("write") = true,
      R"doc(Judges every claim of the registry on a results file, as `zerolayer claims`.

Returns one dict per claim (id, claim, value, ci_lo, ci_hi, seeds, verdict,
note, method, t_lo/t_hi, boot_lo/boot_hi, bca_lo/bca_hi, p_support,
p_refute, verdict_holm, seeds_needed, known_method, of_claim, and per_seed:
{seed: value}). A known method's row (registry key known.NAME) has id
CLAIM@NAME, known_method NAME and of_claim CLAIM; it is left out when the file
has no runs of it. `method`
is auto (the interval whose simulated coverage at the row's n is nearest
`level`), t, percentile or bca. With write=True the tables are also stored as
/claims and /claims_seeds in the file.
`registry` defaults to ablations/claims.registry in the source tree.)doc");
}

}  // namespace zl::python
