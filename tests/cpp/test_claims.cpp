// Claims (docs/design.md#claims-and-statistics): the registry parses and is
// complete, each comparison gives the known answer on hand-made runs, pairing
// is by seed, the verdict rule holds at its boundaries, missing runs are
// named, and the table round-trips through a results file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "models/factory.h"
#include "sim/claims/claims.h"
#include "sim/claims/scaling.h"
#include "sim/judge.h"
#include "sim/model_options.h"
#include "sim/claims/least_squares.h"
#include "sim/config.h"
#include "sim/h5.h"
#include "sim/results.h"
#include "sim/study_file.h"
#include "tests/cpp/check_helpers.h"
#include "tests/cpp/claim_runs.h"
#include "tests/cpp/temp_dir.h"

namespace {

using zl::ClaimRun;
using zl::ClaimsInput;
using zl::ClaimSpec;

std::string registry_path() { return std::string(ZL_SOURCE_DIR) + "/ablations/claims.registry"; }

ClaimRun run(const std::string& id, const std::string& selector_config, int64_t seed,
             std::map<std::string, double> metrics, const std::string& status = "complete") {
  return zl::claim_run(id, selector_config, seed, std::move(metrics), status);
}

std::vector<ClaimSpec> one(const std::string& body) {
  return zl::parse_registry("[claim T]\nsource = test\nclaim = a claim\n" + body, "test.registry");
}

zl::ClaimResult eval1(const std::vector<ClaimSpec>& specs, const ClaimsInput& in) {
  auto r = zl::evaluate_claims(specs, in);
  EXPECT_EQ(r.size(), 1u);
  return r.at(0);
}

const char* kRelative =
    "metric = decode_tok_s\ncomparison = relative\ntreatment = variant=oet\ncontrol = variant=sfcl\n";

TEST(Claims, RegistryHasEverySpecClaimAndParses) {
  auto specs = zl::load_registry(registry_path());
  std::set<std::string> ids;
  for (const auto& s : specs) ids.insert(s.id.substr(0, s.id.find('/')));
  for (const char* id : {"S000-throughput", "S000-quality", "S000-share", "S000-ood", "S000-lookup", "S000-kv",
                         "S002-throughput", "S002-equiv", "S002-context", "S002-gate-cost", "S002-memory",
                         "S002-quality", "S002-monitor", "S002-naive-removal", "S002-ttft", "S000-temperature",
                         "S000-top-p"})
    EXPECT_TRUE(ids.count(id)) << id;
  for (const auto& s : specs) {
    EXPECT_FALSE(s.source.empty()) << s.id;
    EXPECT_LT(s.region_lo, s.region_hi) << s.id;
  }
}

TEST(Claims, RegistryErrorsNameFileLineAndKey) {
  try {
    zl::parse_registry("[claim A]\nsource = s\nclaim = c\nmetrc = x\n", "r.reg");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("r.reg:4: claim A: unknown key metrc"), std::string::npos) << e.what();
  }
  EXPECT_THROW(one("metric = x\ncomparison = ratio\ntreatment = variant=a\nclaimed = 1\ntolerance = 1\n"),
               std::runtime_error);
  EXPECT_THROW(one("metric = (a + \ncomparison = value\ntreatment = variant=a\nclaimed = 1\ntolerance = 1\n"),
               std::runtime_error);
  EXPECT_THROW(one("metric = a\ncomparison = relative\ntreatment = variant=a\nclaimed = 1\ntolerance = 1\n"),
               std::runtime_error);  // no control
  EXPECT_THROW(one("metric = a\ncomparison = value\ntreatment = variant=a\nregion = 2 .. 1\n"), std::runtime_error);
  EXPECT_THROW(zl::load_registry("/nonexistent/claims.registry"), std::runtime_error);
}

// Pre-registration (docs/claims.md#pre-registration): a reading changed
// after its data keeps its date, old reading, old value and reason; a
// malformed history is an error naming the file, line and key.
TEST(Claims, ARevisedReadingKeepsItsHistory) {
  const std::string base = "metric = a\ncomparison = value\ntreatment = variant=a\nclaimed = 1\ntolerance = 1\n";
  auto specs = one(base + "revised.2026-12-06 = reading b + c; value 0.65 [0.20, 1.10]; reason b dominated\n"
                          "revised.2026-11-30 = reading d; value 2; reason d had no unit\n");
  ASSERT_EQ(specs.size(), 1u);
  ASSERT_EQ(specs[0].revisions.size(), 2u);
  EXPECT_EQ(specs[0].revisions[0].date, "2026-11-30");  // oldest first
  EXPECT_EQ(specs[0].revisions[1].reading, "b + c");
  EXPECT_EQ(specs[0].revisions[1].value, "0.65 [0.20, 1.10]");
  EXPECT_EQ(specs[0].revisions[1].reason, "b dominated");
  for (const std::string bad : {"revised.2026-12-06 = reading b; value 1\n",            // no reason
                                "revised.2026-12-06 = reading b; reason r; value 1\n",  // out of order
                                "revised.6/12/2026 = reading b; value 1; reason r\n",   // not a date
                                "revised.2026-12-06 = reading ; value 1; reason r\n"}) {  // an empty part
    try {
      one(base + bad);
      ADD_FAILURE() << bad;
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();  // names the file and line, the claim and the key
      EXPECT_TRUE(what.rfind("test.registry:", 0) == 0 && what.find("claim T") != std::string::npos &&
                  what.find("revised.") != std::string::npos)
          << what;
    }
  }
  // The registry's rows that changed after their data carry it, and the hash is the text's.
  const auto registry = zl::load_registry(registry_path());
  const auto drift = std::find_if(registry.begin(), registry.end(), [](const ClaimSpec& s) { return s.id == "S002-monitor/drift"; });
  ASSERT_NE(drift, registry.end());
  ASSERT_EQ(drift->revisions.size(), 1u);
  EXPECT_EQ(drift->revisions[0].reading, "semantic_drift_score");
  EXPECT_EQ(zl::registry_hash(zl::read_registry(registry_path())), zl::hash_hex(zl::read_registry(registry_path())));
  EXPECT_NE(zl::registry_hash("a"), zl::registry_hash("b"));
}

TEST(Claims, ToleranceAndRegionForms) {
  auto a = one(std::string(kRelative) + "claimed = 0.37\ntolerance = 0.1\n");
  EXPECT_NEAR(a[0].region_lo, 0.27, 1e-12);
  EXPECT_NEAR(a[0].region_hi, 0.47, 1e-12);
  auto b = one("metric = ns\ncomparison = value\ntreatment = variant=oet\nclaimed = 90\ntolerance = x3\n");
  EXPECT_DOUBLE_EQ(b[0].region_lo, 30);
  EXPECT_DOUBLE_EQ(b[0].region_hi, 270);
  auto c = one("metric = q\ncomparison = value\ntreatment = variant=f\nregion = -inf .. 0.45\n");
  EXPECT_TRUE(std::isinf(c[0].region_lo));
  EXPECT_DOUBLE_EQ(c[0].region_hi, 0.45);
}

TEST(Claims, RelativeIsPairedBySeed) {
  // Controls differ a lot between seeds; each treatment is exactly +10% of its
  // own seed's control. Paired: 0.1 with a zero-width interval. Unpaired
  // (ratio of pooled values) would scatter widely.
  ClaimsInput in;
  double ctrl[] = {100, 200, 400};
  for (int s = 1; s <= 3; ++s) {
    in.runs.push_back(run("c" + std::to_string(s), "variant=sfcl", s, {{"decode_tok_s", ctrl[s - 1]}}));
    in.runs.push_back(run("t" + std::to_string(s), "variant=oet", s, {{"decode_tok_s", 1.1 * ctrl[s - 1]}}));
  }
  auto r = eval1(one(std::string(kRelative) + "claimed = 0.1\ntolerance = 0.01\n"), in);
  EXPECT_NEAR(r.value, 0.1, 1e-12);
  EXPECT_NEAR(r.lo, 0.1, 1e-12);
  EXPECT_NEAR(r.hi, 0.1, 1e-12);
  EXPECT_EQ(r.seeds, 3);
  EXPECT_EQ(r.verdict, "supported");
  auto refuted = eval1(one(std::string(kRelative) + "claimed = 0.37\ntolerance = 0.1\n"), in);
  EXPECT_EQ(refuted.verdict, "refuted");
}

TEST(Claims, VerdictFollowsTheIntervalAgainstTheRegion) {
  // Per-seed relative changes 0.39, 0.40, 0.41: mean 0.4; at 3 seeds the
  // verdict uses the t interval, 0.4 ± 0.0248, wider than a point.
  ClaimsInput in;
  for (int s = 1; s <= 3; ++s) {
    in.runs.push_back(run("c" + std::to_string(s), "variant=sfcl", s, {{"decode_tok_s", 100}}));
    in.runs.push_back(run("t" + std::to_string(s), "variant=oet", s, {{"decode_tok_s", 138.0 + s}}));
  }
  auto wide = eval1(one(std::string(kRelative) + "claimed = 0.37\ntolerance = 0.2\n"), in);
  EXPECT_NEAR(wide.value, 0.4, 1e-12);
  EXPECT_EQ(wide.method, zl::CiMethod::t);
  EXPECT_NEAR(wide.lo, 0.4 - 0.024841, 1e-5);
  EXPECT_NEAR(wide.hi, 0.4 + 0.024841, 1e-5);
  EXPECT_EQ(wide.verdict, "supported");
  auto narrow = eval1(one(std::string(kRelative) + "claimed = 0.4\ntolerance = 0.01\n"), in);
  EXPECT_EQ(narrow.verdict, "inconclusive");
  EXPECT_NE(narrow.note.find("straddles"), std::string::npos);
  auto far = eval1(one(std::string(kRelative) + "claimed = -0.5\ntolerance = 0.1\n"), in);
  EXPECT_EQ(far.verdict, "refuted");
  auto bound = eval1(one(std::string(kRelative) + "region = 0.2 .. inf\n"), in);
  EXPECT_EQ(bound.verdict, "supported");
}

TEST(Claims, MetricNamesAreTheExpressionsNames) {
  EXPECT_EQ(zl::metric_names("100 * (1 - violation_rate) + flops_a / flops_b"),
            (std::set<std::string>{"violation_rate", "flops_a", "flops_b"}));
}

// Found by fuzzing (tests/fuzz/corpus/claims_registry/regression-deep-nesting):
// thousands of signs or parentheses overflowed the parser's stack.
TEST(Claims, DeepNestingIsAnErrorNotACrash) {
  EXPECT_NO_THROW(zl::metric_names(std::string(30, '(') + "-x" + std::string(30, ')')));
  for (const std::string& hostile : {std::string(100000, '-') + "x", std::string(100000, '(') + "x"}) {
    try {
      zl::metric_names(hostile);
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("nested deeper than 64"), std::string::npos) << e.what();
    }
  }
}

TEST(Claims, DifferenceAndExpressions) {
  ClaimsInput in;
  for (int s = 1; s <= 4; ++s) {
    in.runs.push_back(run("c" + std::to_string(s), "variant=sfcl", s, {{"violation_rate", 0.30}}));
    in.runs.push_back(run("t" + std::to_string(s), "variant=oet", s, {{"violation_rate", 0.25}}));
  }
  auto r = eval1(one("metric = 100 * (1 - violation_rate)\ncomparison = difference\ntreatment = variant=oet\n"
                     "control = variant=sfcl\nclaimed = 2.3\ntolerance = 1.5\n"),
                 in);
  EXPECT_NEAR(r.value, 5.0, 1e-9);  // 75 - 70 points
  EXPECT_EQ(r.verdict, "refuted");
}

TEST(Claims, FewerThanThreeSeedsIsInconclusive) {
  ClaimsInput in;
  for (int s = 1; s <= 2; ++s) in.runs.push_back(run("t" + std::to_string(s), "variant=sfvl", s, {{"m", 0.67}}));
  auto r = eval1(one("metric = m\ncomparison = value\ntreatment = variant=sfvl\nclaimed = 0.67\ntolerance = 0.1\n"), in);
  EXPECT_NEAR(r.value, 0.67, 1e-12);
  EXPECT_EQ(r.seeds, 2);
  EXPECT_EQ(r.verdict, "inconclusive");
  EXPECT_NE(r.note.find(">= 3"), std::string::npos);
}

TEST(Claims, MissingRunsAndMetricsAreNamed) {
  ClaimsInput in;
  for (int s = 1; s <= 3; ++s) in.runs.push_back(run("b" + std::to_string(s), "variant=baseline", s, {{"m", 1}}));
  in.runs.push_back(run("f1", "variant=sfvl", 1, {}, "failed"));
  auto r = eval1(one("metric = m\ncomparison = value\ntreatment = variant=sfvl\nclaimed = 1\ntolerance = 1\n"), in);
  EXPECT_EQ(r.verdict, "missing");
  EXPECT_NE(r.note.find("no complete runs with variant=sfvl"), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("1 such run(s) failed"), std::string::npos) << r.note;
  EXPECT_TRUE(std::isnan(r.value));

  auto key = eval1(one("metric = m\ncomparison = value\ntreatment = variant=baseline sfcl.at_inference=off\n"
                       "claimed = 1\ntolerance = 1\n"),
                   in);
  EXPECT_EQ(key.verdict, "missing");
  EXPECT_NE(key.note.find("no run has a config key sfcl.at_inference"), std::string::npos) << key.note;

  auto metric = eval1(
      one("metric = trigger_rate\ncomparison = value\ntreatment = variant=baseline\nclaimed = 1\ntolerance = 1\n"), in);
  EXPECT_EQ(metric.verdict, "missing");
  EXPECT_NE(metric.note.find("metric trigger_rate not measured"), std::string::npos) << metric.note;

  auto ctrl = eval1(one("metric = m\ncomparison = relative\ntreatment = variant=baseline\ncontrol = variant=sfvl\n"
                        "claimed = 1\ntolerance = 1\n"),
                    in);
  EXPECT_EQ(ctrl.verdict, "missing");
  EXPECT_NE(ctrl.note.find("variant=sfvl"), std::string::npos);
}

TEST(Claims, TwoRunsOfOneSeedAreAmbiguousNotAveraged) {
  ClaimsInput in;
  for (int s = 1; s <= 3; ++s) {
    in.runs.push_back(run("a" + std::to_string(s), "variant=oet decode.top_p=0.7", s, {{"m", 1}}));
    in.runs.push_back(run("b" + std::to_string(s), "variant=oet decode.top_p=0.95", s, {{"m", 2}}));
  }
  auto r = eval1(one("metric = m\ncomparison = value\ntreatment = variant=oet\nclaimed = 1\ntolerance = 1\n"), in);
  EXPECT_EQ(r.verdict, "inconclusive");
  EXPECT_EQ(r.note.rfind("ambiguous", 0), 0u) << r.note;
  // Numbers compare as numbers, and a|b alternatives work.
  auto sel = eval1(one("metric = m\ncomparison = value\ntreatment = variant=oet decode.top_p=0.950\n"
                       "claimed = 2\ntolerance = 0.1\n"),
                   in);
  EXPECT_EQ(sel.verdict, "supported");
  auto alt = eval1(one("metric = m\ncomparison = relative\ntreatment = variant=x|oet decode.top_p=0.95\n"
                       "control = variant=oet decode.top_p=0.7\nclaimed = 1\ntolerance = 0.1\n"),
                   in);
  EXPECT_NEAR(alt.value, 1.0, 1e-12);
}

TEST(Claims, SelectorBooleansMatchByMeaning) {
  // Runs store booleans as true/false; a registry may say on/off.
  ClaimsInput in;
  for (int s = 1; s <= 3; ++s) {
    in.runs.push_back(run("on" + std::to_string(s), "variant=sfcl sfcl.at_inference=true", s, {{"m", 2}}));
    in.runs.push_back(run("off" + std::to_string(s), "variant=sfcl sfcl.at_inference=false", s, {{"m", 1}}));
  }
  auto r = eval1(one("metric = m\ncomparison = relative\ntreatment = variant=sfcl sfcl.at_inference=off\n"
                     "control = variant=sfcl sfcl.at_inference=on\nclaimed = -0.5\ntolerance = 0.01\n"),
                 in);
  EXPECT_NEAR(r.value, -0.5, 1e-12) << r.note;
  EXPECT_EQ(r.verdict, "supported");
}

// The claims study must give every claim of the registry exactly one run per
// seed in each arm it compares (no "missing", no "ambiguous") over >= 3 seeds:
// checked on the study's expanded configs, without running it.
// Every run of a study, as the claims would see it complete: every metric a
// registry expression names, varying with the arm and seed so that relative
// and argmin comparisons are defined, and an event table for trend claims.
struct StudyAsRuns {
  ClaimsInput in;
  std::map<std::string, zl::Table> events;
};
std::unique_ptr<StudyAsRuns> study_as_runs(const std::string& study_file, const std::vector<ClaimSpec>& specs) {
  auto out = std::make_unique<StudyAsRuns>();
  auto configs = zl::load_study(std::string(ZL_SOURCE_DIR) + "/ablations/" + study_file, {}).expand();
  std::set<std::string> names;
  for (const auto& spec : specs)
    if (!spec.metric.empty())
      for (const auto& name : zl::metric_names(spec.metric)) names.insert(name);
  for (size_t i = 0; i < configs.size(); ++i) {
    ClaimRun r;
    r.run_id = "r" + std::to_string(i);
    r.seed = configs[i].seed;
    r.status = "complete";
    r.config = zl::parse_config_ini(zl::to_ini(configs[i]));
    // Distinct per run and per metric, so that a difference of two metrics
    // (itl_ms_p99 - itl_ms_p50) is not 0 and a relative change of it defined.
    int k = 0;
    for (const auto& name : names)
      r.metrics[name] = 1.0 + 0.01 * static_cast<double>(i) + 0.001 * static_cast<double>(r.seed) + 0.1 * ++k;
    zl::Table t;
    t.add("context_len", std::vector<int64_t>{1, 2, 3, 4});
    t.add("resampled", std::vector<int64_t>{1, 1, 0, 0});
    t.add("fired", std::vector<int64_t>{1, 1, 0, 0});
    t.add("first", std::vector<int64_t>{1, 1, 1, 1});
    t.add("pass", std::vector<std::string>{"quality", "context", "quality", "context"});
    out->events[r.run_id] = t;
    out->in.runs.push_back(r);
  }
  StudyAsRuns* self = out.get();
  out->in.table = [self](const std::string& id, const std::string&) -> const zl::Table* { return &self->events.at(id); };
  return out;
}

TEST(Claims, ClaimsStudyCoversEveryClaimUnambiguously) {
  const auto specs = zl::load_registry(registry_path());
  auto study = study_as_runs("claims.ini", specs);
  auto results = zl::evaluate_claims(specs, study->in);
  ASSERT_FALSE(results.empty());
  for (const auto& r : results) {
    EXPECT_EQ(r.note.rfind("missing", 0), std::string::npos) << r.spec->id << ": " << r.note;
    EXPECT_EQ(r.note.rfind("ambiguous", 0), std::string::npos) << r.spec->id << ": " << r.note;
    EXPECT_GE(r.seeds, 3) << r.spec->id << ": " << r.note;
  }
}

// The scale ladder (issue 15): at least four sizes spanning 16x in
// parameters, training tokens growing with them, bf16, one judge at least
// 4x the largest, and at every size each claim one run per seed.
TEST(Claims, ScaleLadderCoversEveryClaimAtEverySize) {
  const auto specs = zl::load_registry(registry_path());
  auto study = study_as_runs("scale.ini", specs);
  const auto configs = zl::load_study(std::string(ZL_SOURCE_DIR) + "/ablations/scale.ini", {}).expand();
  std::map<std::string, double> params_of;  // by shape
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& c = configs[i];
    EXPECT_EQ(c.train.precision, "bf16");
    const std::string shape = std::to_string(c.model.layers) + "x" + std::to_string(c.model.dim);
    if (!params_of.count(shape)) {
      zl::RunConfig plain = c;
      plain.variant = "baseline";
      params_of[shape] = static_cast<double>(
          zl::make_model("baseline", zl::model_config(plain, c.data.vocab_size))->parameter_count());
    }
    study->in.runs[i].metrics["params"] = params_of[shape];
  }
  const auto sized = zl::evaluate_claims_by_size(specs, study->in);
  ASSERT_GE(sized.size(), 4u);
  EXPECT_GE(sized.back().size.params / sized.front().size.params, 16.0);
  double tokens_before = 0;
  for (const auto& sc : sized) {
    const auto& c = configs[std::stoul(zl::runs_of_size(study->in, sc.size).runs.front().run_id.substr(1))];
    const double tokens = static_cast<double>(c.train.steps * c.train.batch * c.model.context);
    EXPECT_GT(tokens, tokens_before) << sc.size.label << ": training tokens must grow with the parameters";
    tokens_before = tokens;
    for (const auto& r : sc.results) {
      EXPECT_EQ(r.note.rfind("missing", 0), std::string::npos) << sc.size.label << " " << r.spec->id << ": " << r.note;
      EXPECT_EQ(r.note.rfind("ambiguous", 0), std::string::npos) << sc.size.label << " " << r.spec->id;
      EXPECT_GE(r.seeds, 3) << sc.size.label << " " << r.spec->id;
    }
  }
  const auto& largest = configs[std::stoul(zl::runs_of_size(study->in, sized.back().size).runs.front().run_id.substr(1))];
  EXPECT_NO_THROW(zl::check_judge_size(largest, largest.data.vocab_size));
}

// baselines.ini runs every known method the registry names, with the
// controls of their claims: each known row gets exactly one run per seed.
TEST(Claims, BaselinesStudyGivesEveryKnownMethodItsRuns) {
  const auto specs = zl::load_registry(registry_path());
  auto study = study_as_runs("baselines.ini", specs);
  auto results = zl::evaluate_claims(specs, study->in);
  EXPECT_TRUE(zl::known_without_runs(specs, results).empty())
      << "first: " << zl::known_without_runs(specs, results).front();
  int known = 0;
  for (const auto& r : results) {
    if (!zl::is_known_row(r) || r.spec->projected) continue;  // projected rows need a served study
    ++known;
    EXPECT_EQ(r.note.rfind("ambiguous", 0), std::string::npos) << r.spec->id << ": " << r.note;
    EXPECT_GE(r.seeds, 3) << r.spec->id << ": " << r.note;
  }
  EXPECT_EQ(known, std::count_if(specs.begin(), specs.end(),
                                 [](const ClaimSpec& s) { return !s.known_method.empty() && !s.projected; }));
}

TEST(Claims, ArgminFindsTheBestSettingPerSeed) {
  ClaimsInput in;
  // quality + diversity lowest at 0.5 for seeds 1-2 and at 0.6 for seed 3.
  const double temps[] = {0.3, 0.5, 0.6, 0.8};
  for (int s = 1; s <= 3; ++s)
    for (double t : temps) {
      double best = s == 3 ? 0.6 : 0.5;
      in.runs.push_back(run("r" + std::to_string(s) + "_" + std::to_string(t),
                            "variant=oet decode.temperature=" + std::to_string(t), s,
                            {{"violation_rate", std::abs(t - best)}, {"repetition_rate", 0.1}}));
    }
  auto r = eval1(one("metric = violation_rate + repetition_rate\ncomparison = argmin\nover = decode.temperature\n"
                     "treatment = variant=oet\nclaimed = 0.52\ntolerance = 0.2\n"),
                 in);
  EXPECT_NEAR(r.value, (0.5 + 0.5 + 0.6) / 3, 1e-9);
  EXPECT_EQ(r.seeds, 3);
}

TEST(Claims, TrendUsesALeastSquaresLineOverTheEventTable) {
  // Per seed: indicator events whose rate falls linearly from 0.2 at x=0 to
  // 0.1 at x=100: the fitted relative change is -0.5.
  ClaimsInput in;
  std::map<std::string, zl::Table> tables;
  for (int s = 1; s <= 3; ++s) {
    const std::string id = "v" + std::to_string(s);
    in.runs.push_back(run(id, "variant=sfvl", s, {}));
    std::vector<int64_t> x, y;
    for (int xi = 0; xi <= 100; xi += 10)
      for (int k = 0; k < 1000; ++k) {
        x.push_back(xi);
        y.push_back(k < 200 - xi ? 1 : 0);  // rate (200 - x) / 1000
      }
    zl::Table t;
    t.add("context_len", x);
    t.add("resampled", y);
    tables[id] = t;
  }
  in.table = [&](const std::string& id, const std::string& name) -> const zl::Table* {
    auto it = tables.find(id);
    return name == "decode/events" && it != tables.end() ? &it->second : nullptr;
  };
  auto specs = one("comparison = trend\ntable = decode/events\nx = context_len\ny = resampled\n"
                   "treatment = variant=sfvl\nclaimed = -0.983\nregion = -1 .. -0.9\n");
  auto r = eval1(specs, in);
  EXPECT_NEAR(r.value, -0.5, 1e-6);
  EXPECT_EQ(r.verdict, "refuted");
  in.table = nullptr;
  auto missing = eval1(specs, in);
  EXPECT_EQ(missing.verdict, "missing");
  EXPECT_NE(missing.note.find("no table decode/events"), std::string::npos) << missing.note;
}

TEST(Claims, TrendRowsKeepOnlyTheEventsTheSelectorMatches) {
  // First checks fall from 0.2 to 0.1 over the context (-0.5); re-checks
  // (first = 0) fire everywhere and, counted too, would flatten the line.
  ClaimsInput in;
  std::map<std::string, zl::Table> tables;
  for (int s = 1; s <= 3; ++s) {
    const std::string id = "v" + std::to_string(s);
    in.runs.push_back(run(id, "variant=sfvl", s, {}));
    std::vector<int64_t> x, fired, first;
    std::vector<std::string> pass;
    for (int xi = 0; xi <= 100; xi += 10)
      for (int k = 0; k < 1500; ++k) {
        x.push_back(xi);
        const bool is_first = k < 1000;
        first.push_back(is_first);
        fired.push_back(is_first ? k < 200 - xi : 1);
        pass.push_back(k % 3 == 0 && !is_first ? "ood" : "quality");
      }
    zl::Table t;
    t.add("context_len", x);
    t.add("fired", fired);
    t.add("first", first);
    t.add("pass", pass);
    tables[id] = t;
  }
  in.table = [&](const std::string& id, const std::string& name) -> const zl::Table* {
    auto it = tables.find(id);
    return name == "decode/events" && it != tables.end() ? &it->second : nullptr;
  };
  const std::string base = "comparison = trend\ntable = decode/events\nx = context_len\ny = fired\n"
                           "treatment = variant=sfvl\nregion = -1 .. -0.9\n";
  EXPECT_NEAR(eval1(one(base + "rows = first=1 pass=quality|context\n"), in).value, -0.5, 1e-6);
  EXPECT_GT(eval1(one(base), in).value, -0.3);  // the re-checks counted: a flatter line
  auto bad = eval1(one(base + "rows = firsts=1\n"), in);
  EXPECT_EQ(bad.verdict, "missing");
  EXPECT_NE(bad.note.find("has no column firsts"), std::string::npos) << bad.note;
  EXPECT_NE(zl::message_of([&] { one(base + "rows = first\n"); }).find("rows"), std::string::npos);
}

TEST(Claims, ByConstructionRowsStandApartOutsideTheHolmFamily) {
  // A: refuted with p about 0.019 (t = 5 on 2 degrees of freedom). B: an
  // inconclusive row. In one Holm family of two, A's p doubles past 0.025;
  // with B by construction, A is alone in the family and stays refuted.
  ClaimsInput in;
  const double b[] = {0, 1, 2};
  for (int s = 1; s <= 3; ++s)
    in.runs.push_back(run("r" + std::to_string(s), "variant=fused", s, {{"a", 1.0 + 0.1 * (s - 2)}, {"b", b[s - 1]}}));
  auto registry = [](bool apart) {
    return zl::parse_registry(
        "[claim A]\nsource = s\nclaim = a\nmetric = a\ncomparison = value\ntreatment = variant=fused\n"
        "region = -10 .. " + std::to_string(1.0 - 5 * 0.1 / std::sqrt(3.0)) + "\n"
        "[claim B]\nsource = s\nclaim = b\nmetric = b\ncomparison = value\ntreatment = variant=fused\n"
        "claimed = 1\ntolerance = 0.5\n" + (apart ? "by_construction = the penalty enforces it\n" : ""),
        "t.registry");
  };
  const auto together = registry(false);
  auto family = zl::evaluate_claims(together, in);
  ASSERT_EQ(family.size(), 2u);
  EXPECT_EQ(family[0].verdict, "refuted");
  EXPECT_EQ(family[0].verdict_holm, "inconclusive");
  auto specs = registry(true);
  auto rows = zl::evaluate_claims(specs, in);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].verdict_holm, "refuted");
  EXPECT_EQ(rows[1].verdict, "inconclusive");  // kept, as a manipulation check
  EXPECT_EQ(rows[1].verdict_holm, "by construction");
  EXPECT_EQ(rows[1].seeds_needed, 0);  // no plan: more seeds cannot change a design
  const std::string text = zl::format_claims(rows);
  const size_t heading = text.find("by construction (");
  ASSERT_NE(heading, std::string::npos) << text;
  EXPECT_LT(text.find("\nA "), heading);
  EXPECT_GT(text.find("\nB "), heading);
  zl::Table t = zl::claims_table(rows);
  EXPECT_EQ(std::get<std::vector<std::string>>(*t.find("by_construction")),
            (std::vector<std::string>{"", "the penalty enforces it"}));
}

// Issue 29 item 7: S002-quality read per judged fact stands beside it as its
// own row, on the same runs, comparison and region, and is planned like any
// claim; the plan says the seed stays the unit.
TEST(Claims, PerFactReadingOfS002QualityIsItsOwnPlannedRow) {
  const auto specs = zl::load_registry(registry_path());
  auto find = [&](const std::string& id) {
    auto it = std::find_if(specs.begin(), specs.end(), [&](const ClaimSpec& s) { return s.id == id; });
    EXPECT_NE(it, specs.end()) << id;
    return it == specs.end() ? ClaimSpec{} : *it;
  };
  const ClaimSpec quality = find("S002-quality"), per_fact = find("S002-quality/per-fact");
  EXPECT_EQ(per_fact.metric, "violation_rate_per_fact");
  EXPECT_EQ(per_fact.comparison, quality.comparison);
  EXPECT_EQ(per_fact.treatment, quality.treatment);
  EXPECT_EQ(per_fact.control, quality.control);
  EXPECT_EQ(per_fact.region_lo, quality.region_lo);
  EXPECT_EQ(per_fact.region_hi, quality.region_hi);
  EXPECT_TRUE(per_fact.untestable.empty() && per_fact.by_construction.empty() && per_fact.known_method.empty());
  // Relative changes 0, -0.1, +0.12 straddle the bound 0.05: inconclusive, so planned.
  ClaimsInput in;
  const double change[] = {0, -0.1, 0.12};
  for (int s = 1; s <= 3; ++s) {
    in.runs.push_back(run("f" + std::to_string(s), per_fact.treatment, s,
                          {{"violation_rate_per_fact", 0.5 * (1 + change[s - 1])}}));
    // A control that does the task: the row's competence floor is on its violation_rate.
    in.runs.push_back(run("v" + std::to_string(s), per_fact.control, s,
                          {{"violation_rate_per_fact", 0.5}, {"violation_rate", 0.3}}));
  }
  const std::vector<ClaimSpec> only{per_fact};
  const auto rows = zl::evaluate_claims(only, in);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].seeds, 3) << rows[0].note;
  EXPECT_EQ(rows[0].verdict, "inconclusive") << rows[0].note;
  EXPECT_GT(rows[0].seeds_needed, 3);
  const std::string plan = zl::format_plan(rows, "ablations/claims.ini", 0.8);
  EXPECT_NE(plan.find("S002-quality/per-fact"), std::string::npos) << plan;
  EXPECT_NE(plan.find("the unit is the seed"), std::string::npos) << plan;
}

TEST(Claims, EachRowSaysTheOperatingPointOfTheRunsItCompares) {
  ClaimsInput in;
  const double knob[] = {0.41, 0.47, 0.44};
  for (int s = 1; s <= 3; ++s) {
    const std::string n = std::to_string(s);
    in.runs.push_back(run("v" + n,
                          "variant=sfvl calibrate.sfvl.target=0.18 calibrate.sfvl.metric=trigger_rate_first_short "
                          "calibrate.sfvl.knob=verify.threshold",
                          s, {{"decode_tok_s", 100}, {"calibrated_knob_value", knob[s - 1]}}));
    in.runs.push_back(run("f" + n, "variant=fused calibrate.sfvl.target=0.18", s, {{"decode_tok_s", 150}}));
  }
  const auto specs = one("metric = decode_tok_s\ncomparison = relative\ntreatment = variant=fused\n"
                         "control = variant=sfvl\nclaimed = 0.5\ntolerance = 0.1\n");
  auto rows = zl::evaluate_claims(specs, in);
  ASSERT_EQ(rows.size(), 1u);
  // fused has no target of its own (its config's calibrate.sfvl keys are not its variant's).
  EXPECT_EQ(rows[0].operating_point,
            "sfvl trigger_rate_first_short = 0.18 by verify.threshold (0.41-0.47 over 3 runs)");
  EXPECT_NE(zl::format_claims(rows).find("operating point: sfvl trigger_rate_first_short"), std::string::npos);
  const auto value_specs =
      one("metric = decode_tok_s\ncomparison = value\ntreatment = variant=fused\nclaimed = 150\ntolerance = 1\n");
  auto plain = zl::evaluate_claims(value_specs, in);
  EXPECT_EQ(plain[0].operating_point, "");
  EXPECT_NE(zl::format_claims(plain).find("operating point: as configured"), std::string::npos);
}

TEST(Claims, UntestableKeepsTheValueButNotAVerdict) {
  ClaimsInput in;
  for (int s = 1; s <= 3; ++s) in.runs.push_back(run("t" + std::to_string(s), "variant=fused", s, {{"m", 1}}));
  auto r = eval1(one("metric = m\ncomparison = value\ntreatment = variant=fused\nclaimed = 1\ntolerance = 0.1\n"
                     "untestable = RSS is the runtime at this scale\n"),
                 in);
  EXPECT_EQ(r.verdict, "untestable");
  EXPECT_NEAR(r.value, 1, 1e-12);
  EXPECT_NE(r.note.find("would be supported"), std::string::npos) << r.note;
}

TEST(Claims, ProjectedRowsReadTheClaimsRunsOnAProjectedMetric) {
  // oet against sfcl on the measured metric, +10%; projected, +20%. An
  // untestable claim's projection is still judged against the region.
  auto specs = one(std::string(kRelative) + "claimed = 0.2\ntolerance = 0.05\nuntestable = not here\n"
                   "projected.h100 = projected_tok_s\n");
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[1].id, "T@h100");
  EXPECT_TRUE(specs[1].projected);
  EXPECT_EQ(specs[1].treatment, "variant=oet");
  EXPECT_EQ(specs[1].metric, "projected_tok_s");
  EXPECT_TRUE(specs[1].untestable.empty());
  ClaimsInput in;
  for (int s = 1; s <= 3; ++s) {
    const std::string n = std::to_string(s);
    const double c = 100 * s;
    in.runs.push_back(run("c" + n, "variant=sfcl", s, {{"decode_tok_s", c}, {"projected_tok_s", 10 * c}}));
    in.runs.push_back(run("t" + n, "variant=oet", s,
                          {{"decode_tok_s", 1.1 * c}, {"projected_tok_s", 10 * c * (1.2 + 0.001 * s)}}));
  }
  auto rows = zl::evaluate_claims(specs, in);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].verdict, "untestable");
  EXPECT_NEAR(rows[1].value, 0.202, 1e-9);
  EXPECT_EQ(rows[1].verdict, "supported");
  EXPECT_TRUE(zl::is_known_row(rows[1]));  // a reference: out of the Holm family
  EXPECT_NE(zl::format_claims(rows, true).find("(projected)"), std::string::npos);
  // A trend reads a table, not one metric per run.
  EXPECT_THROW(one("table = t\nx = a\ny = b\ncomparison = trend\ntreatment = variant=oet\nclaimed = 0.1\n"
                   "tolerance = 0.1\nprojected.x = m\n"),
               std::runtime_error);
}

TEST(Claims, ServedRowsReadTheRealServersCapacityAndAreLeftOutWhereNothingWasServed) {
  auto specs = one(std::string(kRelative) + "claimed = 0.3\ntolerance = 0.1\nserved.here = serve_max_rate_slo\n"
                   "projected.h100 = projected_max_rate_slo\n");
  ASSERT_EQ(specs.size(), 3u);
  const ClaimSpec& served = specs[1].served ? specs[1] : specs[2];
  EXPECT_EQ(served.id, "T@here");
  EXPECT_TRUE(served.projected);  // a reference beside the claim, as a projection is
  EXPECT_EQ(served.metric, "serve_max_rate_slo");
  ClaimsInput in;
  for (int s = 1; s <= 3; ++s) {
    const std::string n = std::to_string(s);
    const double c = 10 * s;
    in.runs.push_back(run("c" + n, "variant=sfcl", s, {{"decode_tok_s", c}, {"serve_max_rate_slo", c}}));
    in.runs.push_back(run("t" + n, "variant=oet", s,
                          {{"decode_tok_s", 1.3 * c}, {"serve_max_rate_slo", c * (1.31 + 0.001 * s)}}));
  }
  auto rows = zl::evaluate_claims(specs, in);
  ASSERT_EQ(rows.size(), 2u);  // the projection has no runs served on a roofline: left out
  EXPECT_EQ(rows[1].spec->id, "T@here");
  EXPECT_NEAR(rows[1].value, 0.312, 1e-9);
  EXPECT_TRUE(zl::is_known_row(rows[1]));
  const std::string text = zl::format_claims(rows, true);
  EXPECT_NE(text.find("(served here)"), std::string::npos) << text;
  EXPECT_EQ(text.find("(projected)"), std::string::npos) << text;
  // Runs that were not served: the served row is left out too.
  for (auto& r : in.runs) r.metrics.erase("serve_max_rate_slo");
  EXPECT_EQ(zl::evaluate_claims(specs, in).size(), 1u);
}

TEST(Claims, KnownMethodsStandBesideAClaimOnItsComparison) {
  // The claim: oet against sfcl, +10% per seed. Beside it h2o on the same
  // comparison (+50% of the same seed's control), and gated_attn on its own
  // metric; streaming has no runs in the file and is left out, by name.
  auto specs = one(std::string(kRelative) + "claimed = 0.1\ntolerance = 0.01\nknown.h2o = variant=h2o\n"
                   "known.gated = variant=gated_attn\nknown_metric.gated = other_tok_s\n"
                   "known.streaming = variant=streaming\n");
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[1].id, "T@gated");
  EXPECT_EQ(specs[1].metric, "other_tok_s");
  EXPECT_EQ(specs[2].id, "T@h2o");
  EXPECT_EQ(specs[2].of_claim, "T");
  EXPECT_EQ(specs[2].control, "variant=sfcl");
  EXPECT_EQ(specs[2].metric, "decode_tok_s");
  EXPECT_DOUBLE_EQ(specs[2].region_lo, specs[0].region_lo);
  ClaimsInput in;
  const double ctrl[] = {100, 200, 400};
  for (int s = 1; s <= 3; ++s) {
    const std::string n = std::to_string(s);
    in.runs.push_back(run("c" + n, "variant=sfcl", s, {{"decode_tok_s", ctrl[s - 1]}, {"other_tok_s", 1}}));
    in.runs.push_back(run("t" + n, "variant=oet", s, {{"decode_tok_s", 1.1 * ctrl[s - 1]}}));
    in.runs.push_back(run("h" + n, "variant=h2o", s, {{"decode_tok_s", 1.5 * ctrl[s - 1]}}));
    in.runs.push_back(run("g" + n, "variant=gated_attn", s, {{"other_tok_s", 2.0 + 0.1 * s}}));
  }
  auto rows = zl::evaluate_claims(specs, in);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].verdict, "supported");
  EXPECT_EQ(rows[0].verdict_holm, "supported");
  EXPECT_NEAR(rows[2].value, 0.5, 1e-12);  // h2o, paired by seed with the claim's control
  EXPECT_NEAR(rows[2].lo, 0.5, 1e-12);
  EXPECT_EQ(rows[2].verdict, "refuted");   // outside the claimed region, as a place
  EXPECT_EQ(rows[2].verdict_holm, "");     // not a claim: no Holm verdict, no plan
  EXPECT_NEAR(rows[1].value, (2.1 + 2.2 + 2.3) / 3 - 1, 1e-12);
  EXPECT_EQ(rows[1].seeds_needed, 0);
  auto absent = zl::known_without_runs(specs, rows);
  ASSERT_EQ(absent.size(), 1u);
  EXPECT_EQ(absent[0], "T@streaming (variant=streaming)");
  // The known rows take no part in the Holm family: the claim's adjusted
  // verdict is the same with them as without.
  auto alone = zl::evaluate_claims(one(std::string(kRelative) + "claimed = 0.1\ntolerance = 0.01\n"), in);
  EXPECT_EQ(alone[0].verdict_holm, rows[0].verdict_holm);
  const std::string text = zl::format_claims(rows);
  EXPECT_NE(text.find("@h2o"), std::string::npos) << text;
  EXPECT_NE(text.find("outside the region"), std::string::npos) << text;
  zl::Table t = zl::claims_table(rows);
  const auto& known = std::get<std::vector<std::string>>(*t.find("known_method"));
  EXPECT_EQ(known, (std::vector<std::string>{"", "gated", "h2o"}));
}

TEST(Claims, KnownMethodKeysAreChecked) {
  const std::string base = std::string(kRelative) + "claimed = 0.1\ntolerance = 0.01\n";
  auto message = [&](const std::string& extra) { return zl::message_of([&] { one(base + extra); }); };
  EXPECT_NE(message("known_metric.h2o = x\n").find("known_metric.h2o without known.h2o"), std::string::npos);
  EXPECT_NE(message("known. = variant=h2o\n").find("unknown key known."), std::string::npos);
  EXPECT_NE(message("known.h2o =\n").find("known.h2o has no run selector"), std::string::npos);
  EXPECT_NE(message("known.h2o = variant=h2o\nknown_metric.h2o = (a +\n").find("known_metric.h2o '(a +'"),
            std::string::npos);
  EXPECT_NE(message("known.h2o = variant=h2o\nknown.h2o = variant=x\n").find("key known.h2o given twice"),
            std::string::npos);
}

TEST(LeastSquares, FitsAKnownLineAndRefusesDegenerateInput) {
  auto f = zl::fit_line({1, 2, 3, 4}, {3, 5, 7, 9});
  EXPECT_NEAR(f.slope, 2, 1e-12);
  EXPECT_NEAR(f.intercept, 1, 1e-12);
  EXPECT_EQ(f.n, 4);
  auto g = zl::fit_line({1000, 1001, 1002, NAN}, {1, 0, 2, 5});  // NaN dropped; centred for conditioning
  EXPECT_NEAR(g.slope, 0.5, 1e-9);
  EXPECT_EQ(g.n, 3);
  EXPECT_TRUE(std::isnan(zl::fit_line({2, 2, 2}, {1, 2, 3}).slope));
  EXPECT_TRUE(std::isnan(zl::fit_line({1}, {1}).slope));
  EXPECT_THROW(zl::fit_line({1, 2}, {1}), std::invalid_argument);
}

TEST(LeastSquares, AHingeFitFindsTheKnotOfABrokenLine) {
  // Flat at 0.2 up to 0.47, then rising with slope 2: the knot is found within a grid step.
  std::vector<double> x{0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 0.9}, y;
  for (double t : x) y.push_back(0.2 + 2 * std::max(0.0, t - 0.47));
  auto h = zl::fit_hinge(x, y, 400);
  EXPECT_NEAR(h.knot, 0.47, 0.002);
  EXPECT_NEAR(h.slope_below, 0, 1e-6);
  EXPECT_NEAR(h.slope_above, 2, 1e-6);
  EXPECT_NEAR(h.sse, 0, 1e-9);
  EXPECT_TRUE(std::isnan(zl::fit_hinge({1, 2, 3}, {1, 2, 3}).knot));  // no knot with two points a side
  EXPECT_THROW(zl::fit_hinge({1, 2}, {1}), std::invalid_argument);
}

TEST(Claims, BreakpointFindsWhereTheMetricBendsPerSeed) {
  // Per seed a metric flat to a knot (0.46, 0.47, 0.48), then rising: the mean knot is 0.47.
  ClaimsInput in;
  const double knots[] = {0.46, 0.47, 0.48};
  for (int s = 1; s <= 3; ++s)
    for (double t : {0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 0.9}) {
      char c[64];
      std::snprintf(c, sizeof c, "variant=oet decode.temperature=%g", t);
      in.runs.push_back(run("r" + std::to_string(s) + c, c, s, {{"d", 0.3 + 1.5 * std::max(0.0, t - knots[s - 1])}}));
    }
  const auto specs = one("metric = d\ncomparison = breakpoint\nover = decode.temperature\ntreatment = variant=oet\n"
                         "claimed = 0.47\ntolerance = 0.05\n");
  auto r = eval1(specs, in);
  EXPECT_EQ(r.seeds, 3);
  EXPECT_NEAR(r.value, 0.47, 0.003);
  EXPECT_EQ(r.verdict, "supported");
  EXPECT_NE(zl::message_of([] { one("metric = d\ncomparison = breakpoint\ntreatment = variant=oet\nclaimed = 1\n"
                                    "tolerance = 1\n"); }).find("no over"),
            std::string::npos);
}

// Every comparison kind of the table (sim/claims/claim_measurement.h) on one
// hand-made input with a known answer per kind, 3 seeds: variant=t has m = 2
// and a table `events` whose y rises from 0.2 to 0.4 over x = 0..2 (a
// relative change of 1); variant=c has m = 1.6; variant=s sweeps x.k over
// 1..6 with `bowl` lowest at 3 and `hinge` flat to 3, then rising.
struct KindCase {
  std::string keys;  // the section's keys besides source, claim, comparison and the region
  double expected;   // every seed's value
};
const std::map<std::string, KindCase>& kind_cases() {
  static const std::map<std::string, KindCase> cases = {
      {"value", {"metric = m\ntreatment = variant=t\n", 2.0}},
      {"difference", {"metric = m\ntreatment = variant=t\ncontrol = variant=c\n", 0.4}},
      {"relative", {"metric = m\ntreatment = variant=t\ncontrol = variant=c\n", 0.25}},
      {"argmin", {"metric = bowl\ntreatment = variant=s\nover = x.k\n", 3.0}},
      {"breakpoint", {"metric = hinge\ntreatment = variant=s\nover = x.k\n", 3.0}},
      {"trend", {"table = events\nx = x\ny = y\ntreatment = variant=t\n", 1.0}},
  };
  return cases;
}

struct KindInput {
  ClaimsInput in;
  std::map<std::string, zl::Table> tables;
  KindInput() {
    for (int s = 1; s <= 3; ++s) {
      const std::string seed = std::to_string(s);
      in.runs.push_back(run("t" + seed, "variant=t", s, {{"m", 2.0}}));
      in.runs.push_back(run("c" + seed, "variant=c", s, {{"m", 1.6}}));
      for (int k = 1; k <= 6; ++k)
        in.runs.push_back(run("s" + seed + "_" + std::to_string(k), "variant=s x.k=" + std::to_string(k), s,
                              {{"bowl", (k - 3.0) * (k - 3.0)}, {"hinge", 1 + 2 * std::max(0, k - 3)}}));
      zl::Table t;
      t.add("x", std::vector<double>{0, 1, 2});
      t.add("y", std::vector<double>{0.2, 0.3, 0.4});
      tables["t" + seed] = t;
    }
    in.table = [this](const std::string& id, const std::string& name) -> const zl::Table* {
      auto it = tables.find(id);
      return name == "events" && it != tables.end() ? &it->second : nullptr;
    };
  }
  KindInput(const KindInput&) = delete;  // `in.table` points into this object
};

// `keys` without its line for `key`.
std::string without_key(const std::string& keys, const std::string& key) {
  std::string out;
  std::istringstream in(keys);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + " =", 0) != 0) out += line + "\n";
  return out;
}

class ComparisonKinds : public ::testing::TestWithParam<std::string> {};

TEST_P(ComparisonKinds, ParsesFromARegistryAndMeasuresTheKnownAnswer) {
  const zl::ComparisonKind* kind = zl::find_comparison(GetParam());
  ASSERT_NE(kind, nullptr);
  auto c = kind_cases().find(GetParam());
  ASSERT_NE(c, kind_cases().end()) << "comparison kind " << GetParam() << " has no case in kind_cases(): add one";
  const std::string head = "comparison = " + GetParam() + "\nclaimed = 0\ntolerance = 100\n";
  const KindInput input;
  const auto r = eval1(one(head + c->second.keys), input.in);
  EXPECT_EQ(r.note, "");
  ASSERT_EQ(r.seeds, 3);
  for (const auto& [seed, v] : r.per_seed) EXPECT_NEAR(v, c->second.expected, 0.03) << "seed " << seed;
  EXPECT_EQ(r.verdict, "supported");

  // The section must give what the table says the kind needs.
  std::vector<std::string> needed;
  if (kind->needs_control) needed.push_back("control");
  if (kind->needs_over) needed.push_back("over");
  for (const char* key : {"table", "x", "y"})
    if (kind->reads_table) needed.push_back(key);
  if (!kind->reads_table) needed.push_back("metric");
  for (const std::string& key : needed)
    EXPECT_NE(zl::message_of([&] { one(head + without_key(c->second.keys, key)); }).find("has no " + key),
              std::string::npos)
        << key;
  // A projected row swaps the metric of one run per seed: only the kinds that read one take it.
  const std::string projected = zl::message_of([&] { one(head + c->second.keys + "projected.hw = m\n"); });
  EXPECT_EQ(projected.empty(), kind->takes_projected_metric()) << projected;
}

std::vector<std::string> comparison_kind_names() {
  std::vector<std::string> names;
  for (const zl::ComparisonKind& k : zl::comparison_kinds()) names.push_back(k.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Claims, ComparisonKinds, ::testing::ValuesIn(comparison_kind_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(Claims, AnUnknownComparisonIsRefusedNamingItAndTheKnownKinds) {
  const std::string msg =
      zl::message_of([] { one("metric = m\ncomparison = ratio\ntreatment = variant=t\nclaimed = 1\ntolerance = 1\n"); });
  EXPECT_NE(msg.find("test.registry:1: claim T: comparison 'ratio' is not one of value, difference, relative, argmin"),
            std::string::npos)
      << msg;
  for (const zl::ComparisonKind& k : zl::comparison_kinds()) EXPECT_NE(msg.find(k.name), std::string::npos) << msg;
  // A spec made by hand, past the parser, is refused by the measurement too.
  ClaimSpec s = one("metric = m\ncomparison = value\ntreatment = variant=t\nclaimed = 1\ntolerance = 1\n").at(0);
  s.comparison = "ratio";
  const KindInput input;
  const std::string measured = zl::message_of([&] { zl::measure(s, input.in); });
  EXPECT_NE(measured.find("comparison 'ratio' is not one of " + zl::comparison_names()), std::string::npos)
      << measured;
}

TEST(Claims, SettingLabelsNameTheKeysThatVaryWithinAVariant) {
  std::vector<ClaimRun> runs = {
      run("a", "variant=sfvl verify.threshold=0.8 model.dim=32 output.dir=x", 1, {}),
      run("b", "variant=sfvl verify.threshold=0.9 model.dim=32 output.dir=y", 2, {}),
      run("c", "variant=baseline verify.threshold=0.8 model.dim=32", 1, {}),
      run("d", "variant=baseline verify.threshold=0.8 model.dim=32", 2, {})};
  auto labels = zl::setting_labels(runs);
  EXPECT_EQ(labels["a"], "sfvl verify.threshold=0.8");
  EXPECT_EQ(labels["b"], "sfvl verify.threshold=0.9");
  EXPECT_EQ(labels["c"], "baseline");  // only the seed varies
  EXPECT_EQ(labels["d"], "baseline");
  // Thresholds solved per seed for one target are one setting; two targets are two.
  const std::string cal = "variant=sfvl calibrate.sfvl.knob=verify.threshold calibrate.sfvl.target=";
  std::vector<ClaimRun> calibrated = {run("e", cal + "0.18 verify.threshold=0.64", 1, {}),
                                      run("f", cal + "0.18 verify.threshold=0.75", 2, {}),
                                      run("g", cal + "0.3 verify.threshold=0.87", 1, {})};
  auto solved = zl::setting_labels(calibrated);
  EXPECT_EQ(solved["e"], "sfvl calibrate.sfvl.target=0.18");
  EXPECT_EQ(solved["f"], solved["e"]);
  EXPECT_EQ(solved["g"], "sfvl calibrate.sfvl.target=0.3");
  // oet decodes the width sfcl's target solved: its seeds' widths are one setting too.
  const std::string width = "variant=oet calibrate.sfcl.knob=sfcl.hidden calibrate.sfcl.target=0.117 sfcl.hidden=";
  auto oet = zl::setting_labels({run("h", width + "120", 1, {}), run("i", width + "150", 2, {})});
  EXPECT_EQ(oet["h"], "oet");
  EXPECT_EQ(oet["i"], "oet");
}

TEST(Claims, ConfigIniParsesTopLevelAndSections) {
  auto m = zl::parse_config_ini("variant = sfvl\nseed = 3\n\n[verify]\nthreshold = 0.82\n[decode]\ntop_p = 1\n");
  EXPECT_EQ(m["variant"], "sfvl");
  EXPECT_EQ(m["seed"], "3");
  EXPECT_EQ(m["verify.threshold"], "0.82");
  EXPECT_EQ(m["decode.top_p"], "1");
}

TEST(Claims, ResultsFileRoundTrip) {
  TempDir dir("zl_claims");
  const std::string results = zl::write_oet_and_sfcl_study(dir.path().string(), 137.0);
  auto specs = zl::load_registry(registry_path());
  auto table = zl::evaluate_claims(specs, zl::load_claims_input(results));
  // Every claim has a row; the known methods' rows have no runs here and are left out.
  const size_t claims = std::count_if(specs.begin(), specs.end(), [](const ClaimSpec& s) { return s.known_method.empty(); });
  ASSERT_LT(claims, specs.size());
  ASSERT_EQ(table.size(), claims);
  const size_t projected = std::count_if(specs.begin(), specs.end(), [](const ClaimSpec& s) { return s.projected; });
  EXPECT_EQ(zl::known_without_runs(specs, table).size(), specs.size() - claims - projected);
  const zl::ClaimResult* thr = nullptr;
  for (const auto& r : table) {
    if (r.spec->id == "S000-throughput")
      thr = &r;
    else
      EXPECT_TRUE(r.verdict == "missing" || r.verdict == "untestable") << r.spec->id << ": " << r.note;
  }
  ASSERT_NE(thr, nullptr);
  EXPECT_EQ(thr->seeds, 3);
  EXPECT_NEAR(thr->value, (138.0 / 101 + 139.0 / 102 + 140.0 / 103) / 3 - 1, 1e-9);
  EXPECT_EQ(thr->verdict, "supported");
  zl::write_table(results, "claims", zl::claims_table(table));
  auto back = zl::h5::File::open(results, false).dataset("claims").read_table();
  EXPECT_EQ(back.rows(), claims);
  EXPECT_NE(back.find("verdict"), nullptr);
  EXPECT_NE(back.find("ci_lo"), nullptr);
  for (const char* column : {"method", "t_lo", "boot_hi", "bca_lo", "p_support", "verdict_holm", "seeds_needed"})
    EXPECT_NE(back.find(column), nullptr) << column;
  // The per-seed values behind every row, for a notebook to redo any interval.
  zl::write_table(results, "claims_seeds", zl::claim_seeds_table(table));
  auto seeds = zl::h5::File::open(results, false).dataset("claims_seeds").read_table();
  ASSERT_EQ(seeds.rows(), 3u);  // S000-throughput's three seeds; every other row has none
  const auto& values = std::get<std::vector<double>>(*seeds.find("value"));
  EXPECT_NEAR(values[0], 138.0 / 101 - 1, 1e-12);
  EXPECT_EQ(std::get<std::vector<int64_t>>(*seeds.find("seed"))[2], 3);
}

}  // namespace

namespace zl {
namespace {

// Issue 37 item 2: a quality row states the floor its control must clear;
// below it the row is not judged.
TEST(Claims, AQualityRowBelowItsCompetenceFloorIsUntestableNamingTheFloorAndTheRate) {
  auto study = [](double control_rate) {
    ClaimsInput in;
    for (int s = 1; s <= 3; ++s) {
      in.runs.push_back(::run("c" + std::to_string(s), "variant=baseline", s, {{"violation_rate", control_rate + 0.01 * s}}));
      in.runs.push_back(::run("t" + std::to_string(s), "variant=fused", s, {{"violation_rate", control_rate + 0.3}}));
    }
    return in;
  };
  const std::string body = "metric = violation_rate\ncomparison = difference\ntreatment = variant=fused\n"
                           "control = variant=baseline\nregion = -0.05 .. 0.05\nrequires = violation_rate <= 0.5\n";
  const auto specs = parse_registry("[claim Q]\nsource = s\nclaim = q\n" + body, "t.registry");
  // The control fails most contracts: not judged, whatever the difference.
  auto below = evaluate_claims(specs, study(0.8));
  ASSERT_EQ(below.size(), 1u);
  EXPECT_EQ(below[0].verdict, "untestable");
  EXPECT_EQ(below[0].verdict_holm, "untestable");
  EXPECT_EQ(below[0].seeds_needed, 0);
  EXPECT_NEAR(below[0].competence, 0.82, 1e-12);
  EXPECT_NE(below[0].note.find("untestable at this competence"), std::string::npos) << below[0].note;
  EXPECT_NE(below[0].note.find("control's violation_rate is 0.82"), std::string::npos) << below[0].note;
  EXPECT_NE(below[0].note.find("violation_rate <= 0.5"), std::string::npos) << below[0].note;
  EXPECT_NE(below[0].note.find("would be refuted"), std::string::npos) << below[0].note;
  // A competent control: the same difference is judged.
  auto above = evaluate_claims(specs, study(0.1));
  EXPECT_EQ(above[0].verdict, "refuted");
  EXPECT_NEAR(above[0].competence, 0.12, 1e-12);
  Table t = claims_table(below);
  EXPECT_EQ(std::get<std::vector<std::string>>(*t.find("requires")), std::vector<std::string>{"violation_rate <= 0.5"});
  // A floor read on the treatment where the row has no control, and a floor that does not parse.
  const auto on_treatment = parse_registry(
      "[claim V]\nsource = s\nclaim = v\nmetric = violation_rate\ncomparison = value\ntreatment = variant=fused\n"
      "region = 0 .. 1\nrequires = violation_rate < 0.9 on treatment\n",
      "t.registry");
  EXPECT_EQ(evaluate_claims(on_treatment, study(0.1))[0].verdict, "supported");
  EXPECT_EQ(evaluate_claims(on_treatment, study(0.7))[0].verdict, "untestable");
  const std::string bad = message_of([&] {
    parse_registry("[claim W]\nsource = s\nclaim = w\n" + body.substr(0, body.find("requires")) +
                       "requires = violation_rate about 0.5\n",
                   "t.registry");
  });
  EXPECT_NE(bad.find("t.registry:"), std::string::npos) << bad;
  EXPECT_NE(bad.find("claim W: requires: 'violation_rate about 0.5' is not 'METRIC <= NUMBER'"), std::string::npos) << bad;
}

// A row read by the independent judge states a second floor: the judge
// better than the model it scores. Every floor must hold; the first unmet one
// is named.
TEST(Claims, EveryFloorOfARowMustHoldAndTheFirstUnmetIsNamed) {
  auto study = [](double violation, double judge_val_loss) {
    ClaimsInput in;
    for (int s = 1; s <= 3; ++s)
      in.runs.push_back(::run("t" + std::to_string(s), "variant=sfvl", s,
                              {{"violation_rate", violation}, {"val_loss", 0.60}, {"judge_val_loss", judge_val_loss},
                               {"resample_equiv_changed_rate", 0.6 + 0.01 * s}}));
    return in;
  };
  const auto specs = parse_registry(
      "[claim E]\nsource = s\nclaim = e\nmetric = resample_equiv_changed_rate\ncomparison = value\n"
      "treatment = variant=sfvl\nregion = 0.5 .. 0.8\n"
      "requires = violation_rate <= 0.5 on treatment; val_loss - judge_val_loss > 0 on treatment\n",
      "t.registry");
  EXPECT_EQ(evaluate_claims(specs, study(0.3, 0.58))[0].verdict, "supported");
  const auto peer = evaluate_claims(specs, study(0.3, 0.61))[0];  // a judge no better than the model
  EXPECT_EQ(peer.verdict, "untestable");
  EXPECT_NEAR(peer.competence, 0.3, 1e-12);  // the first floor's reading, which holds
  EXPECT_NE(peer.note.find("treatment's val_loss - judge_val_loss is -0.01"), std::string::npos) << peer.note;
  EXPECT_NE(peer.note.find("outside the floor val_loss - judge_val_loss > 0"), std::string::npos) << peer.note;
  const auto both = evaluate_claims(specs, study(0.7, 0.61))[0];
  EXPECT_NE(both.note.find("violation_rate is 0.7"), std::string::npos) << both.note;  // the first unmet
  const std::string empty = message_of([&] {
    parse_registry("[claim F]\nsource = s\nclaim = f\nmetric = violation_rate\ncomparison = value\n"
                   "treatment = variant=sfvl\nregion = 0 .. 1\nrequires = violation_rate <= 0.5;\n",
                   "t.registry");
  });
  EXPECT_NE(empty.find("claim F: requires: 'violation_rate <= 0.5;' has an empty floor"), std::string::npos) << empty;
}

// Issue 37 item 5: a row whose runs, or the models they decode, come from
// more than one commit says so.
TEST(Claims, ARowWhoseRunsComeFromTwoCommitsIsFlagged) {
  ClaimsInput in;
  for (int s = 1; s <= 3; ++s) {
    ClaimRun c = ::run("c" + std::to_string(s), "variant=baseline", s, {{"m", 0.5}});
    ClaimRun t = ::run("t" + std::to_string(s), "variant=fused", s, {{"m", 0.5}});
    c.commit = c.train_commit = t.commit = "aaaaaaaaaaaa";
    t.train_commit = s == 3 ? "bbbbbbbbbbbb" : "aaaaaaaaaaaa";  // one model trained by other code
    in.runs.push_back(c);
    in.runs.push_back(t);
  }
  const auto specs = parse_registry(
      "[claim M]\nsource = s\nclaim = m\nmetric = m\ncomparison = difference\ntreatment = variant=fused\n"
      "control = variant=baseline\nregion = -1 .. 1\n"
      "[claim N]\nsource = s\nclaim = n\nmetric = m\ncomparison = value\ntreatment = variant=baseline\nregion = 0 .. 1\n",
      "t.registry");
  auto rows = evaluate_claims(specs, in);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].commits, (std::vector<std::string>{"aaaaaaaaaaaa", "bbbbbbbbbbbb"}));
  EXPECT_NE(rows[0].note.find("mixes 2 commits (aaaaaaa, bbbbbbb)"), std::string::npos) << rows[0].note;
  EXPECT_EQ(rows[1].commits.size(), 1u);
  EXPECT_EQ(rows[1].note.find("mixes"), std::string::npos) << rows[1].note;
  Table t = claims_table(rows);
  EXPECT_EQ(std::get<std::vector<int64_t>>(*t.find("commits")), (std::vector<int64_t>{2, 1}));
  EXPECT_NE(format_claims(rows).find("mixes 2 commits"), std::string::npos);
}

}  // namespace
}  // namespace zl
