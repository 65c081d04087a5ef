// The variant table (sim/variants.def): every row builds, and what the table
// says about keys is what run identity does.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "models/factory.h"
#include "sim/config.h"
#include "sim/model_options.h"
#include "sim/operating_point.h"
#include "sim/stages/variant.h"
#include "sim/variants.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

RunConfig config_of(const std::string& variant) {
  RunConfig c;
  c.variant = variant;
  const ModelConfig tiny = tiny_model();
  c.model.layers = tiny.layers;
  c.model.heads = tiny.heads;
  c.model.dim = tiny.dim;
  c.model.context = tiny.context;
  c.sfcl.hidden = 4;
  return c;
}

std::string section_of(const std::string& key) { return key.substr(0, key.find('.')); }

// A value of `key` other than its current one, for the types that have an
// obvious one; "" for the others (strings are checked against their own lists).
std::string other_value(const KeySpec& k, const RunConfig& c) {
  const std::string now = k.get(c);
  if (k.type == "bool") return now == "true" ? "false" : "true";
  if (k.type == "int") return std::to_string(std::stoll(now) + 1);
  if (k.type == "double") return std::to_string(std::stod(now) * 0.5 + 0.25);
  return "";
}

TEST(VariantTable, EveryVariantHasAStageAndItsFamilyANetwork) {
  for (const auto& v : variants()) {
    const RunConfig c = config_of(v.name);
    EXPECT_NE(make_variant_stage(c), nullptr) << v.name;
    EXPECT_NO_THROW(make_model(trained_family(c), model_config(c, 50))) << v.name;
  }
}

TEST(VariantTable, EveryFamilyIsAVariantThatTrainsItself) {
  for (const auto& v : variants()) {
    const VariantInfo* f = find_variant(v.family);
    ASSERT_NE(f, nullptr) << v.name << "'s family " << v.family;
    EXPECT_EQ(f->family, f->name) << v.name << "'s family " << v.family << " decodes another's model";
    EXPECT_TRUE(v.trains.empty() || v.family == v.name) << v.name << " trains keys but decodes " << v.family;
  }
}

TEST(VariantTable, NamesAreUniqueAndColoursTellThemApart) {
  std::set<std::string> names, colours;
  for (const auto& v : variants()) {
    EXPECT_TRUE(names.insert(v.name).second) << v.name;
    EXPECT_TRUE(colours.insert(v.colour).second) << v.name << " " << v.colour;
    EXPECT_EQ(v.colour.size(), 7u) << v.name;
    for (const std::string* s : {&v.name, &v.source, &v.summary})
      EXPECT_EQ(s->find_first_of("\"\\\n|"), std::string::npos) << *s;  // JSON and Markdown as they are
  }
}

TEST(VariantTable, EveryConfigKeyBelongsToASectionTheTableKnows) {
  for (const auto& k : config_keys())
    if (k.name.find('.') != std::string::npos)
      EXPECT_TRUE(known_section(section_of(k.name))) << k.name << ": add its section to sim/variants.def";
  EXPECT_FALSE(known_section("nonsense"));
}

TEST(VariantTable, EveryKeyARowNamesExists) {
  for (const auto& v : variants())
    for (const auto* list : {&v.trains, &v.decodes, &v.ignores})
      for (const auto& entry : *list) {
        bool found = false;
        for (const auto& k : config_keys()) found = found || names_key({entry}, k.name);
        EXPECT_TRUE(found) << v.name << " names '" << entry << "', which is no config key";
      }
}

TEST(VariantTable, OperatingTargetsBelongToKnownVariants) {
  for (const auto& t : operating_targets()) EXPECT_NE(find_variant(t.variant), nullptr) << t.variant;
}

TEST(VariantTable, DecodeKeysEnterTheirVariantsRunIdAlone) {
  int checked = 0;
  for (const auto& v : variants())
    for (const auto& k : config_keys()) {
      if (!names_key(v.decodes, k.name)) continue;
      EXPECT_TRUE(relevant_key(k.name, v.name)) << v.name << " " << k.name;
      EXPECT_FALSE(relevant_key(k.name, "baseline")) << k.name;
      const std::string other = other_value(k, config_of(v.name));
      if (other.empty()) continue;
      RunConfig a = config_of(v.name), b = a;
      set_key(b, k.name, other, {"test", 1});
      EXPECT_NE(run_id(a), run_id(b)) << v.name << " " << k.name;
      EXPECT_EQ(train_id(a), train_id(b)) << v.name << " " << k.name << " shapes no trained model";
      ++checked;
    }
  EXPECT_GT(checked, 10);
}

TEST(VariantTable, TrainedSectionsEnterTheIdentityOfEveryVariantOfTheFamily) {
  int checked = 0;
  for (const auto& owner : variants())
    for (const auto& k : config_keys()) {
      if (!names_key(owner.trains, k.name)) continue;
      const std::string other = other_value(k, config_of(owner.name));
      if (other.empty()) continue;
      for (const auto& v : variants()) {
        RunConfig a = config_of(v.name), b = a;
        // latent_kv's keys by its mode: svd_* factorise the baseline, the rest shape MLA.
        if (owner.name == "latent_kv") a.latent.mode = b.latent.mode = k.name.rfind("latent.svd_", 0) == 0 ? "svd" : "trained";
        set_key(b, k.name, other, {"test", 1});
        if (v.family == owner.name) {
          // The section is the family's; a key's role says which identity:
          // a training key its train_id, an evaluation key (sfcl.at_inference)
          // the run id of every variant decoding the family's model.
          if (k.role == KeyRole::Training)
            EXPECT_NE(train_id(a), train_id(b)) << v.name << " " << k.name;
          else
            EXPECT_NE(run_id(a), run_id(b)) << v.name << " " << k.name;
          ++checked;
        } else {
          EXPECT_EQ(run_id(a), run_id(b)) << v.name << " does not read " << k.name;
        }
      }
    }
  EXPECT_GT(checked, 10);
}

TEST(VariantTable, IgnoredKeysLeaveTheRunId) {
  for (const auto& v : variants())
    for (const auto& k : config_keys())
      if (names_key(v.ignores, k.name)) {
        EXPECT_FALSE(relevant_key(k.name, v.name)) << v.name << " " << k.name;
        EXPECT_TRUE(relevant_key(k.name, "baseline")) << k.name;
      }
}

TEST(VariantTable, AnUnknownVariantIsRefusedNamingTheKnownOnes) {
  RunConfig c;
  try {
    set_key(c, "variant", "sfvl2", {"study.ini", 3});
    FAIL() << "sfvl2 was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("study.ini:3"), std::string::npos) << what;
    EXPECT_NE(what.find("sfvl2"), std::string::npos) << what;
    EXPECT_NE(what.find(variant_names()), std::string::npos) << what;
  }
  EXPECT_THROW(variant_info("sfvl2"), std::invalid_argument);
}

TEST(VariantTable, FormatsAreTheTable) {
  const std::string md = format_variants("md"), json = format_variants("json"), text = format_variants("text");
  for (const auto& v : variants()) {
    EXPECT_NE(md.find("| `" + v.name + "` |"), std::string::npos) << v.name;
    EXPECT_NE(json.find("\"name\": \"" + v.name + "\""), std::string::npos) << v.name;
    EXPECT_NE(text.find(v.name + " "), std::string::npos) << v.name;
  }
  EXPECT_THROW(format_variants("yaml"), std::invalid_argument);
}

// A variant added at runtime with a key of its own (VARIANT_KEY's path):
// parsed by its type, printed in its section, part of its run id alone.
TEST(VariantTable, AVariantAddedAtRuntimeHasItsOwnKeys) {
  VariantInfo toy;
  toy.name = "toy_table";
  toy.family = "baseline";
  toy.group = "known";
  toy.colour = "#010203";
  toy.summary = "a row added by a test";
  toy.keys = {{"toy_table.factor", "float", "0.5", /*trains=*/false, "a factor"}};
  add_variant(toy, [](const RunConfig&) { return std::make_unique<VariantStage>(); });
  EXPECT_THROW(add_variant(toy, nullptr), std::invalid_argument);  // the name is taken

  RunConfig a = config_of("toy_table"), b = a;
  EXPECT_DOUBLE_EQ(option_number(a, "toy_table.factor"), 0.5);  // its default
  set_key(b, "toy_table.factor", "0.25", {"toy.ini", 4});
  EXPECT_DOUBLE_EQ(option_number(b, "toy_table.factor"), 0.25);
  EXPECT_NE(run_id(a), run_id(b));
  EXPECT_EQ(train_id(a), train_id(b));
  EXPECT_NE(to_ini(b).find("[toy_table]\nfactor = 0.25"), std::string::npos) << to_ini(b);
  RunConfig base = config_of("baseline"), base_b = base;
  set_key(base_b, "toy_table.factor", "0.25", {"toy.ini", 4});
  EXPECT_EQ(run_id(base), run_id(base_b));  // not a key the baseline reads
  try {
    set_key(b, "toy_table.factor", "half", {"toy.ini", 5});
    FAIL() << "'half' was accepted as a float";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("toy.ini:5: toy_table.factor"), std::string::npos) << e.what();
  }
  EXPECT_NE(make_variant_stage(a), nullptr);
  EXPECT_THROW(option_number(a, "train.steps"), std::invalid_argument);  // a typed key, not a variant's

  VariantInfo thief = toy;
  thief.name = "toy_thief";
  thief.keys = {{"sfcl.hidden2", "int", "1", true, "a key in sfcl's section"}};
  EXPECT_THROW(add_variant(thief, nullptr), std::invalid_argument);
  thief.keys = {{"decode.extra", "int", "1", false, "a key in a shared section"}};
  EXPECT_THROW(add_variant(thief, nullptr), std::invalid_argument);
  EXPECT_EQ(find_variant("toy_thief"), nullptr);
}

}  // namespace
}  // namespace zl
