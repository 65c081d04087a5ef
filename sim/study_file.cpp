#include "sim/study_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace zl {
namespace {

namespace fs = std::filesystem;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

struct Line {
  std::string section, key, value;
  Origin origin;
};

bool is_grid(const std::string& section) { return section == "grid"; }
bool is_zip(const std::string& section) { return section == "zip" || section.rfind("zip.", 0) == 0; }

// The study's own sections, and every section a config key lives in.
bool known_section(const std::string& section) {
  if (section == "study" || is_grid(section) || is_zip(section)) return true;
  for (const auto& k : config_keys())
    if (k.name.rfind(section + ".", 0) == 0) return true;
  return false;
}

// INI lines with their origin; comments start with # or ; at line start.
std::vector<Line> read_lines(const std::string& text, const std::string& path) {
  std::vector<Line> out;
  std::istringstream in(text);
  std::string raw, section;
  int n = 0;
  while (std::getline(in, raw)) {
    ++n;
    std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    Origin where{path, n};
    if (line.front() == '[') {
      if (line.back() != ']') throw ConfigError(path + ":" + std::to_string(n) + ": malformed section header '" + line + "'");
      section = trim(line.substr(1, line.size() - 2));
      if (!known_section(section))
        throw ConfigError(path + ":" + std::to_string(n) + ": unknown section [" + section +
                          "] (sections: study, grid, zip.NAME, and those of the config keys: model, data, train, ...)");
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos)
      throw ConfigError(path + ":" + std::to_string(n) + ": expected 'key = value', got '" + line + "'");
    out.push_back({section, trim(line.substr(0, eq)), trim(line.substr(eq + 1)), where});
  }
  return out;
}

std::string dotted(const std::string& section, const std::string& key) {
  return section.empty() ? key : section + "." + key;
}

std::string read_file(const std::string& path, const std::string& named_at) {
  const std::string where = named_at.empty() ? "" : named_at + ": ";
  if (std::string why = path_text_problem(path); !why.empty()) throw ConfigError(where + "study file path " + why);
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))  // not a device or a folder read forever
    throw ConfigError(where + path + ": not a regular file");
  std::ifstream in(path);
  if (!in) throw ConfigError(where + path + ": cannot open study file");
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// A study that names `[study] base = FILE` (relative to its own folder) is
// that file with its own lines laid over: a plain key replaces the base's,
// a [zip.NAME] section replaces the base's section of that name whole, a
// [grid] key the base's sweep of that key, and name and description the
// base's. So the scale ladder is the claims study plus what differs, and a
// change to the claims study's arms reaches it.
std::vector<Line> with_base(std::vector<Line> lines, const std::string& path, int depth) {
  auto it = std::find_if(lines.begin(), lines.end(),
                         [](const Line& l) { return l.section == "study" && l.key == "base"; });
  if (it == lines.end()) return lines;
  const Line base_line = *it;
  lines.erase(it);
  if (depth >= 8) throw ConfigError(base_line.origin.str("study.base") + ": bases nest more than 8 deep (a cycle?)");
  if (base_line.value.empty()) throw ConfigError(base_line.origin.str("study.base") + ": names no file");
  fs::path base_path = base_line.value;
  if (base_path.is_relative()) base_path = fs::path(path).parent_path() / base_path;
  const std::string bp = base_path.lexically_normal().string();
  std::vector<Line> base =
      with_base(read_lines(read_file(bp, base_line.origin.str("study.base")), bp), bp, depth + 1);
  std::set<std::string> plain, zips, grid, study;
  for (const Line& l : lines) {
    if (l.section == "study") study.insert(l.key);
    else if (is_grid(l.section)) grid.insert(l.key);
    else if (is_zip(l.section)) zips.insert(l.section);
    else plain.insert(dotted(l.section, l.key));
  }
  std::vector<Line> out;
  for (const Line& l : base) {
    if ((is_grid(l.section) || is_zip(l.section)) && plain.count(l.key) && !zips.count(l.section) &&
        !grid.count(l.key))
      throw ConfigError(base_line.origin.str("study.base") + ": this file sets " + l.key + ", which the base sweeps at " +
                        l.origin.file + ":" + std::to_string(l.origin.line) + "; replace the base's [" + l.section +
                        "] or override the key on the command line");
    const bool replaced = l.section == "study"  ? study.count(l.key) > 0
                          : is_grid(l.section)  ? grid.count(l.key) > 0
                          : is_zip(l.section)   ? zips.count(l.section) > 0
                                                : plain.count(dotted(l.section, l.key)) > 0;
    if (!replaced) out.push_back(l);
  }
  out.insert(out.end(), lines.begin(), lines.end());
  return out;
}

}  // namespace

Study parse_study(const std::string& text, const std::string& path, const Overrides& overrides) {
  Study s;
  s.path = path;
  std::map<std::string, GridAxis> zips;
  std::set<std::string> swept;

  for (const Line& l : with_base(read_lines(text, path), path, 0)) {
    if (l.section == "study") {
      if (l.key == "name") s.name = l.value;
      else if (l.key == "description") s.description = l.value;
      else throw ConfigError(l.origin.str("study." + l.key) + ": unknown key (study takes name, description, base)");
      continue;
    }
    bool grid = is_grid(l.section), zip = is_zip(l.section);
    std::string key = (grid || zip) ? l.key : dotted(l.section, l.key);
    if (!find_key(key)) throw ConfigError(l.origin.str(key) + ": unknown key");
    if (!grid && !zip) {
      // A key set twice is a mistake (which one was meant?), never "the last wins".
      if (auto first = s.origins.find(key); first != s.origins.end())
        throw ConfigError(l.origin.str(key) + ": given twice (first at " + first->second.file + ":" +
                          std::to_string(first->second.line) + ")");
      set_key(s.base, key, l.value, l.origin);
      s.origins[key] = l.origin;
      continue;
    }
    if (!swept.insert(key).second) throw ConfigError(l.origin.str(key) + ": swept twice in the grid");
    auto values = split_list(l.value);
    // Check every value now, so a bad one is reported at its line.
    for (const auto& v : values) {
      RunConfig probe;
      set_key(probe, key, v, l.origin);
    }
    if (grid) {
      GridAxis axis;
      axis.keys = {key};
      axis.origins = {l.origin};
      for (const auto& v : values) axis.values.push_back({v});
      s.axes.push_back(axis);
    } else {
      GridAxis& axis = zips[l.section];
      if (!axis.keys.empty() && axis.values.size() != values.size())
        throw ConfigError(l.origin.str(key) + ": zipped lists in [" + l.section + "] must have one length (" +
                          std::to_string(axis.values.size()) + "), got " + std::to_string(values.size()));
      if (axis.keys.empty()) axis.values.resize(values.size());
      axis.keys.push_back(key);
      axis.origins.push_back(l.origin);
      for (size_t i = 0; i < values.size(); ++i) axis.values[i].push_back(values[i]);
    }
  }
  for (auto& [name, axis] : zips) s.axes.push_back(axis);

  for (const auto& [key, value] : overrides) {
    Origin cli{"command line", 0};
    // A comma list sweeps the key instead (`--seed 1,2,3,4,5`: more seeds for
    // a study; the base takes the first value, for `train`), unless the
    // key's value is a list itself (`--serve.rates 100,200,inf`: one run).
    const KeySpec* spec = find_key(key);
    auto values = spec && spec->list ? std::vector<std::string>{value} : split_list(value);
    if (values.empty()) values.push_back("");  // `--key ""`: one empty value, for the key's check to judge
    for (const auto& v : values) set_key(s.base, key, v, cli);
    set_key(s.base, key, values.front(), cli);
    s.origins[key] = cli;
    // An override fixes a swept key: drop it from its axis.
    for (auto it = s.axes.begin(); it != s.axes.end();) {
      for (size_t j = 0; j < it->keys.size(); ++j) {
        if (it->keys[j] != key) continue;
        it->keys.erase(it->keys.begin() + j);
        it->origins.erase(it->origins.begin() + j);
        for (auto& point : it->values) point.erase(point.begin() + j);
        break;
      }
      it = it->keys.empty() ? s.axes.erase(it) : it + 1;
    }
    if (values.size() > 1) {
      GridAxis axis;
      axis.keys = {key};
      axis.origins = {cli};
      for (const auto& v : values) axis.values.push_back({v});
      s.axes.push_back(axis);
    }
  }
  validate(s.base, s.origins);
  return s;
}

Study load_study(const std::string& path, const Overrides& overrides) {
  return parse_study(read_file(path, ""), path, overrides);
}

RunConfig Study::single() const { return base; }

std::vector<RunConfig> Study::expand() const {
  std::vector<RunConfig> runs{base};
  std::vector<std::map<std::string, Origin>> run_origins{origins};
  for (const GridAxis& axis : axes) {
    std::vector<RunConfig> next;
    std::vector<std::map<std::string, Origin>> next_origins;
    for (size_t r = 0; r < runs.size(); ++r)
      for (const auto& point : axis.values) {
        RunConfig c = runs[r];
        auto o = run_origins[r];
        for (size_t j = 0; j < axis.keys.size(); ++j) {
          set_key(c, axis.keys[j], point[j], axis.origins[j]);
          o[axis.keys[j]] = axis.origins[j];
        }
        next.push_back(c);
        next_origins.push_back(o);
      }
    runs.swap(next);
    run_origins.swap(next_origins);
  }
  for (size_t r = 0; r < runs.size(); ++r) validate(runs[r], run_origins[r]);
  return runs;
}

}  // namespace zl
