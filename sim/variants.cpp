#include "sim/variants.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "sim/config.h"

namespace zl {
namespace {

// The sections every run reads, whatever its variant: their keys enter every
// identity by their own rules (sim/config.cpp: relevant()).
const char* const kSharedSections[] = {"model", "data", "train", "decode", "judge", "serve", "calibrate", "output"};

std::vector<std::string> words(const char* text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

void add_key(VariantInfo& v, VariantKey k) {
  (k.trains ? v.trains : v.decodes).push_back(k.name);
  v.keys.push_back(std::move(k));
}

std::deque<VariantInfo>& table() {
  static std::deque<VariantInfo> t = [] {
    std::deque<VariantInfo> rows;
#define VARIANT(name, family, stage, group, trains, decodes, ignores, colour, source, summary) \
  rows.push_back({#name, #family, group, words(trains), words(decodes), words(ignores), colour, source, summary, {}, {}});
#define VARIANT_KEY(variant, key, type, value, trains, help)          \
  for (auto& row : rows)                                               \
    if (row.name == #variant) add_key(row, {key, type, value, trains, help});
// A registered network's parameters beyond the baseline's: the row's
// expression of the config `c` (its builder is models/factory.cpp's to call).
#define VARIANT_NETWORK(variant, builder, parameters) \
  for (auto& row : rows)                              \
    if (row.name == #variant) row.own_parameters = [](const RunConfig& c) { return static_cast<double>(parameters); };
#include "sim/variants.def"
#undef VARIANT
#undef VARIANT_KEY
#undef VARIANT_NETWORK
    return rows;
  }();
  return t;
}

std::string section_of(const std::string& entry) {
  const auto dot = entry.find('.');
  return dot == std::string::npos ? entry : entry.substr(0, dot);
}

}  // namespace

const std::deque<VariantInfo>& variants() { return table(); }

const VariantInfo& add_variant_info(VariantInfo info) {
  if (find_variant(info.name)) throw std::invalid_argument("variant '" + info.name + "' exists already");
  std::vector<VariantKey> keys;
  keys.swap(info.keys);
  for (auto& k : keys) {
    if (section_of(k.name) == k.name || shared_section(section_of(k.name)))
      throw std::invalid_argument("variant " + info.name + "'s key '" + k.name + "': a key of its own section, as '" +
                                  info.name + ".name'");
    for (const auto& v : variants())
      if (names_key(v.trains, k.name) || names_key(v.decodes, k.name))
        throw std::invalid_argument("variant " + info.name + "'s key '" + k.name + "' is variant " + v.name + "'s");
    add_key(info, std::move(k));
  }
  table().push_back(std::move(info));
  return table().back();
}

const VariantInfo* find_variant(const std::string& name) {
  for (const auto& v : variants())
    if (v.name == name) return &v;
  return nullptr;
}

const VariantInfo& variant_info(const std::string& name) {
  if (const VariantInfo* v = find_variant(name)) return *v;
  throw std::invalid_argument("unknown variant '" + name + "' (known: " + variant_names() + ")");
}

std::string variant_names(const std::string& sep) {
  std::string out;
  for (const auto& v : variants()) out += (out.empty() ? "" : sep) + v.name;
  return out;
}

bool names_key(const std::vector<std::string>& list, const std::string& key) {
  for (const auto& entry : list)
    if (entry == key || (entry.back() == '.' && key.rfind(entry, 0) == 0)) return true;
  return false;
}

bool shared_section(const std::string& section) {
  for (const char* s : kSharedSections)
    if (section == s) return true;
  return false;
}

bool known_section(const std::string& section) {
  if (shared_section(section)) return true;
  for (const auto& v : variants())
    for (const auto* list : {&v.trains, &v.decodes})
      for (const auto& entry : *list)
        if (section_of(entry) == section) return true;
  return false;
}

std::string format_variants(const std::string& format) {
  std::ostringstream out;
  auto keys = [](const VariantInfo& v) {
    std::string s;
    for (const auto* list : {&v.trains, &v.decodes})
      for (const auto& k : *list) s += (s.empty() ? "" : " ") + k;
    return s.empty() ? std::string("-") : s;
  };
  if (format == "md") {
    out << "| variant | group | decodes the model of | its keys | follows | what it is |\n"
        << "| --- | --- | --- | --- | --- | --- |\n";
    for (const auto& v : variants())
      out << "| `" << v.name << "` | " << v.group << " | `" << v.family << "` | `" << keys(v) << "` | "
          << (v.source.empty() ? "-" : v.source) << " | " << v.summary << " |\n";
  } else if (format == "json") {
    // The table's strings hold no quote, backslash or control character
    // (VariantTable.JsonIsTheTable checks), so they are written as they are.
    auto list = [](const std::vector<std::string>& l) {
      std::string s = "[";
      for (size_t i = 0; i < l.size(); ++i) s += (i ? ", \"" : "\"") + l[i] + "\"";
      return s + "]";
    };
    out << "[\n";
    for (size_t i = 0; i < variants().size(); ++i) {
      const VariantInfo& v = variants()[i];
      out << "  {\"name\": \"" << v.name << "\", \"family\": \"" << v.family << "\", \"group\": \"" << v.group
          << "\", \"trains\": " << list(v.trains) << ", \"decodes\": " << list(v.decodes)
          << ", \"ignores\": " << list(v.ignores) << ", \"colour\": \"" << v.colour << "\", \"source\": \""
          << v.source << "\", \"summary\": \"" << v.summary << "\"}" << (i + 1 < variants().size() ? "," : "")
          << "\n";
    }
    out << "]\n";
  } else if (format == "text") {
    char line[512];
    std::snprintf(line, sizeof line, "%-15s %-10s %-11s %s\n", "variant", "group", "family", "what it is");
    out << line;
    for (const auto& v : variants()) {
      std::snprintf(line, sizeof line, "%-15s %-10s %-11s %s\n", v.name.c_str(), v.group.c_str(), v.family.c_str(),
                    v.summary.c_str());
      out << line;
    }
  } else {
    throw std::invalid_argument("--format: text, md or json, not '" + format + "'");
  }
  return out.str();
}

}  // namespace zl
