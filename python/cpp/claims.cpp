// The claims table (sim/claims.h) from Python.
#include <pybind11/stl.h>

#include "python/cpp/module.h"
#include "sim/claims.h"

namespace py = pybind11;

namespace zl::python {

void register_claims(py::module& m) {
  m.def(
      "claims",
      [](const std::string& results, const std::string& registry, double level, bool write) {
        std::vector<ClaimSpec> specs;
        std::vector<ClaimResult> table;
        {
          py::gil_scoped_release release;
          specs = load_registry(registry.empty() ? std::string(ZL_SOURCE_DIR) + "/ablations/claims.registry"
                                                 : registry);
          table = evaluate_claims(specs, load_claims_input(results), level);
          if (write) write_table(results, "claims", claims_table(table));
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
          rows.append(d);
        }
        return rows;
      },
      py::arg("results"), py::arg("registry") = "", py::arg("level") = 0.95, py::arg("write") = true,
      R"doc(Judges every claim of the registry on a results file, as `zerolayer claims`.

Returns one dict per claim (id, claim, value, ci_lo, ci_hi, seeds, verdict,
note, ...). With write=True the table is also stored as /claims in the file.
`registry` defaults to ablations/claims.registry in the source tree.)doc");
}

}  // namespace zl::python
