// A study file (docs/results_schema.md): INI sections for model, data, train, decode, verify,
// fused, sfcl, output; a [study] section (name, description); a [grid] section
// whose keys each take a comma list (a Cartesian axis); and [zip.NAME]
// sections whose keys take lists of one length and vary together.
// `[study] base = FILE` starts from another study file (relative to this
// one's folder) and lays this file's lines over it: a plain key replaces the
// base's, a [zip.NAME] section the base's section of that name, a [grid] key
// the base's sweep of it (ablations/scale.ini is claims.ini at four sizes).
// Priority: defaults < file < command line. A command-line override of a key
// that the grid sweeps fixes that key (the axis is dropped); an override with
// a comma list sweeps it over those values instead (`--seed 1,2,3,4,5`).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "sim/config.h"

namespace zl {

using Overrides = std::vector<std::pair<std::string, std::string>>;  // dotted key, value

struct GridAxis {
  std::vector<std::string> keys;                 // one key (Cartesian) or several (zipped)
  std::vector<std::vector<std::string>> values;  // values[i][j]: i-th point, j-th key
  std::vector<Origin> origins;                   // one per key
};

struct Study {
  std::string path;
  std::string name = "study";
  std::string description;
  RunConfig base;
  std::map<std::string, Origin> origins;  // where each non-default key was set
  std::vector<GridAxis> axes;

  // Every run of the grid, resolved and validated, in a stable order.
  std::vector<RunConfig> expand() const;
  // Just the base config (what `zerolayer train` runs; the grid is not expanded).
  RunConfig single() const;
};

Study load_study(const std::string& path, const Overrides& overrides);
// Parses INI text (the `path` only names it in errors); for tests.
Study parse_study(const std::string& text, const std::string& path, const Overrides& overrides);

}  // namespace zl
