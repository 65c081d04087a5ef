// The variant table (sim/variants.def), as the config, the CLI and the Python
// module read it. LibTorch-free: a run's stage comes from the same table in
// sim/stages/variant.cpp.
#pragma once
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace zl {

struct RunConfig;  // sim/config.h, which reads this table

// A config key a variant declares for itself (VARIANT_KEY in
// sim/variants.def): no struct field in sim/config.h, no line in
// sim/config.cpp. Its value lives in RunConfig::options; read it with
// option_number / option_flag / option_text (sim/config.h).
struct VariantKey {
  std::string name;   // "toy.scale": the section is the variant's own
  std::string type;   // int | float | bool | string
  std::string value;  // its default, as text
  bool trains = false;  // shapes the trained model (its family's train_id) or only decoding (its run id)
  std::string help;
};

struct VariantInfo {
  std::string name;
  std::string family;  // the trained model it decodes (sim/variants.def)
  std::string group;   // article | reference | known | control
  std::vector<std::string> trains, decodes, ignores;  // keys and "section." prefixes
  std::string colour, source, summary;
  std::vector<VariantKey> keys;  // its own keys, also listed in trains or decodes
  // A variant whose network is registered (models/factory.h: add_network;
  // VARIANT_NETWORK in sim/variants.def): the parameters that network adds
  // to the baseline's, from the run's config. The memory estimate counts
  // them without building a model (sim/memory_estimate.h). Empty: none (the
  // built-in networks are counted by the estimate itself).
  std::function<double(const RunConfig&)> own_parameters;
};

// Every variant, in the table's order, then those added by add_variant_info.
// A deque: a row found once stays where it is when another is added.
const std::deque<VariantInfo>& variants();

// Adds a row after the table's: a mechanism kept outside the tree (the toy
// mechanism of tests/cpp/test_toy_mechanism.cpp). Its keys are added to the
// row's trains or decodes. std::invalid_argument for a name, or a key's
// section, that another variant already has. Call it before any config is
// read; sim/config.h's register_variant adds the keys to the config too.
const VariantInfo& add_variant_info(VariantInfo info);

// The row of `name`, or nullptr.
const VariantInfo* find_variant(const std::string& name);

// The row of `name`; std::invalid_argument naming the known variants if none.
const VariantInfo& variant_info(const std::string& name);

// "baseline, sfvl, ...", in the table's order.
std::string variant_names(const std::string& sep = ", ");

// Whether `key` is in `list`: the key itself, or its section as "section.".
bool names_key(const std::vector<std::string>& list, const std::string& key);

// Whether a key of `section` ("model", "sfcl", ...) reads the same for every
// variant (model, data, train, decode, ...) or belongs to a row of the table.
bool shared_section(const std::string& section);
bool known_section(const std::string& section);

// The table as `zerolayer variants --format` prints it: "text" (aligned),
// "md" (the list in docs/variants.md) or "json" (python/zerolayer/variants.json,
// which the plots read without loading the native module).
std::string format_variants(const std::string& format);

}  // namespace zl
