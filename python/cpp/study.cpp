// Running a study (every run of its grid) or a single run from Python, with
// overrides given as a dict of dotted keys, as on the command line.
#include <pybind11/stl.h>

#include <cstdio>
#include <filesystem>

#include "python/cpp/module.h"
#include "sim/claims/summary.h"
#include "sim/study/study.h"

namespace py = pybind11;

namespace zl::python {
namespace {

// {"train.steps": 200, "fused.gate": True} -> [("train.steps", "200"), ("fused.gate", "true")].
Overrides to_overrides(const py::dict& d) {
  Overrides o;
  for (auto item : d) {
    const std::string key = py::str(item.first);
    py::handle v = item.second;
    std::string text;
    if (py::isinstance<py::bool_>(v))
      text = v.cast<bool>() ? "true" : "false";
    else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v))
      throw ConfigError("override " + key + ": one value per key (sweeps belong in the study's [grid])");
    else
      text = py::str(v);
    o.emplace_back(key, text);
  }
  return o;
}

py::dict run(const std::string& config, const py::dict& overrides, bool single, const std::string& shard,
             bool dry_run) {
  Study study = load_study(config, to_overrides(overrides));
  StudyOptions so;
  so.command_line = "python: zerolayer." + std::string(single ? "run" : "run_study") + "(" + config + ")";
  so.dry_run = dry_run;
  so.summarize = print_summary;
  if (!shard.empty() &&
      (std::sscanf(shard.c_str(), "%d/%d", &so.shard_index, &so.shard_count) != 2 || so.shard_count < 1 ||
       so.shard_index < 0 || so.shard_index >= so.shard_count))
    throw ConfigError("shard: expected 'i/n' with 0 <= i < n, got '" + shard + "'");
  if (single) study.axes.clear();
  int code;
  {
    py::gil_scoped_release release;  // minutes of training: let other Python threads run
    code = run_study(study, so);
    std::fflush(stdout);
  }
  py::dict out;
  out["exit_code"] = code;
  const auto results = std::filesystem::path(study.base.output.dir) / "results.h5";
  out["results"] = so.shard_count == 1 && !dry_run ? py::object(py::str(results.string())) : py::object(py::none());
  out["output_dir"] = study.base.output.dir;
  return out;
}

}  // namespace

void register_study(py::module& m) {
  m.def(
      "run_study",
      [](const std::string& config, const py::dict& overrides, const std::string& shard, bool dry_run) {
        return run(config, overrides, false, shard, dry_run);
      },
      py::arg("config"), py::arg("overrides") = py::dict(), py::arg("shard") = "", py::arg("dry_run") = false,
      R"doc(Runs every run of a study file's grid, as `zerolayer ablate CONFIG`.

Complete runs are skipped (resume); a failed run is recorded and the study
goes on. `overrides` maps dotted config keys to values ({"train.steps": 200});
an overridden key that the grid sweeps is fixed. `shard` is "i/n" to run one
slice (no results file is merged then: call it per slice, then `zerolayer merge`).
Returns {"exit_code": 0 when every run completed, "results": path of
results.h5 or None, "output_dir": ...}. Raises ValueError naming the key on
a bad config.)doc");
  m.def(
      "run",
      [](const std::string& config, const py::dict& overrides) { return run(config, overrides, true, "", false); },
      py::arg("config"), py::arg("overrides") = py::dict(),
      R"doc(Performs one run of a study file (its grid not expanded), as `zerolayer train CONFIG`.

Same overrides and return value as run_study.)doc");
  m.def(
      "config_keys",
      [] {
        py::dict d;
        for (const auto& k : config_keys()) d[py::str(k.name)] = py::make_tuple(k.type, k.help);
        return d;
      },
      "Every config key: {dotted name: (type, help)}.");
}

}  // namespace zl::python
