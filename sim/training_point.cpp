#include "sim/training_point.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "datasets/atomic_file.h"
#include "models/factory.h"
#include "sim/checkpoint.h"
#include "sim/cost.h"
#include "sim/decoder.h"
#include "sim/model_options.h"
#include "sim/operating_point.h"
#include "sim/prompts.h"
#include "sim/runtime.h"
#include "sim/stages/sfcl_stage.h"
#include "sim/trainer.h"
#include "sim/util/file_lock.h"
#include "sim/util/format.h"

namespace zl {
namespace {

namespace fs = std::filesystem;

std::string knob_text(double v) { return significant(v, 10); }

// The prompts a training target is measured on: calibration prompts as long
// as the test prompts are (a step's cost grows with its context), and the
// tokens that follow each in its document, replayed as the continuation.
struct Replay {
  std::vector<std::vector<int32_t>> prompts, continuations;
};

Replay replay_text(const RunConfig& cfg, const Dataset& ds, int64_t count) {
  std::vector<int64_t> lengths;
  for (const auto& p : make_prompts(cfg, ds).tokens) lengths.push_back(static_cast<int64_t>(p.size()));
  const Prompts p = calibration_prompts(cfg, ds, count, lengths);
  Replay out;
  out.prompts = p.tokens;
  for (size_t i = 0; i < p.tokens.size(); ++i) {
    auto ids = ds.tokenizer->encode(ds.docs.val[p.source_doc[i]].text);
    const size_t from = p.tokens[i].size(), to = std::min(ids.size(), from + cfg.decode.max_new_tokens);
    out.continuations.emplace_back(ids.begin() + from, ids.begin() + to);
  }
  return out;
}

// `op.metric` of an untrained model of the run's family with the knob at `knob`.
double measure_untrained(const OperatingPoint& op, const RunConfig& cfg, const Dataset& ds, const Replay& text,
                         double knob) {
  RunConfig c = cfg;
  set_operating_knob(c, op, knob);
  if (op.metric == "flops_share_correction") {
    const ModelConfig mc = model_config(c, ds.tokenizer->vocab_size());
    return correction_flops_share(mc, mean_decode_context(mc.context, c.decode.max_new_tokens));
  }
  torch::manual_seed(static_cast<uint64_t>(c.seed));
  Transformer model = make_model(trained_family(c), model_config(c, ds.tokenizer->vocab_size()));
  model->to(resolve_device(c.train.device));
  if (op.metric == "time_share_correction") {
    const bool fast = decode_options(c.decode, ds.tokenizer->eos_id()).fast_step;
    const auto [with, without] =
        correction_step_ms(model, text.prompts, text.continuations, c.decode.batch, c.decode.max_new_tokens, fast);
    return 1.0 - without / with;
  }
  throw std::runtime_error("no measurement before training for '" + op.metric + "' (sim/training_point.cpp)");
}

std::map<std::string, std::string> read_keys(const std::string& path) {
  std::ifstream in(path);
  std::map<std::string, std::string> keys;
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find(" = ");
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    keys[line.substr(0, eq)] = line.substr(eq + 3);
  }
  return keys;
}

// The solution as written beside the checkpoint, or nothing if none is there.
std::optional<SolvedPoint> read_solution(const std::string& path, const OperatingPoint& op) {
  if (!fs::exists(path)) return std::nullopt;
  auto keys = read_keys(path);
  if (keys["metric"] != op.metric || keys["knob"] != op.knob || keys["target"] != knob_text(op.target) ||
      keys["value"].empty())
    throw std::runtime_error(path + ": solved for " + keys["metric"] + " = " + keys["target"] + " by " + keys["knob"] +
                             ", but this run's checkpoint is for " + op.metric + " = " + knob_text(op.target) + " by " +
                             op.knob + "; remove the file to solve again");
  SolvedPoint s;
  s.knob = std::stod(keys["value"]);
  s.reached = keys["reached"].empty() ? NAN : std::stod(keys["reached"]);
  if (!keys["rounds"].empty()) s.rounds = std::stoll(keys["rounds"]);
  std::istringstream interval(keys["interval"]);
  if (double lo, hi; interval >> lo >> hi) {
    s.knob_lo = lo;
    s.knob_hi = hi;
  }
  std::istringstream probes(keys["probes"]);
  for (double k, v; probes >> k >> v;) s.probes.emplace_back(k, v);
  return s;
}

void write_solution(const std::string& path, const OperatingPoint& op, const SolvedPoint& s, const std::string& what) {
  std::ostringstream out;
  out << "# " << what << " (sim/training_point.h).\n"
      << "metric = " << op.metric << "\ntarget = " << knob_text(op.target) << "\nknob = " << op.knob
      << "\nvalue = " << knob_text(s.knob) << "\nreached = " << knob_text(s.reached) << "\nrounds = " << s.rounds;
  if (std::isfinite(s.knob_lo)) out << "\ninterval = " << knob_text(s.knob_lo) << " " << knob_text(s.knob_hi);
  out << "\nprobes =";
  for (const auto& [k, v] : s.probes) out << " " << knob_text(k) << " " << knob_text(v);
  out << "\n";
  write_file_atomically(path, out.str());
}

}  // namespace

// One file per (target, model shape, data, decoding): neither the seed nor the
// training schedule moves what the knob's metric is computed or timed on.
std::string study_operating_point_path(const RunConfig& cfg) {
  RunConfig c = cfg;
  c.seed = 0;
  const std::string device = c.train.device;
  c.train = TrainConfig{};
  c.train.device = device;
  return (fs::path(cfg.output.dir) / "operating_points" / (train_id(c) + ".ini")).string();
}

namespace {

SolvedPoint solve_training_point(const OperatingPoint& op, const RunConfig& cfg, const Dataset& data) {
  if (op.analytic) return solve_integer(op, [&](double knob) { return measure_untrained(op, cfg, data, Replay{}, knob); });
  const Replay text = replay_text(cfg, data, op.prompts);
  // A process's first timed steps pay for allocation and cold caches: one
  // measurement is thrown away. Every knob is then measured op.rounds times,
  // in rounds, each measurement the mean of two taken apart in time.
  measure_untrained(op, cfg, data, text, op.lo);
  return solve_on_grid(
      op,
      [&](double knob) {
        const auto begin = std::chrono::steady_clock::now();
        const double v = 0.5 * (measure_untrained(op, cfg, data, text, knob) + measure_untrained(op, cfg, data, text, knob));
        if (cfg.output.verbosity > 1)
          std::fprintf(stderr, "  %s = %g: %s = %.4f (%.1f s)\n", op.knob.c_str(), knob, op.metric.c_str(), v,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
        return v;
      },
      8, static_cast<int>(op.rounds));
}

}  // namespace

bool settle_training_point(RunConfig& cfg, const Dataset& data, RunRecord& r) {
  const auto op = training_operating_point(cfg);
  if (!op) return false;
  CheckpointDir ckpt(checkpoint_path(cfg));
  ckpt.lock();  // another shard solving for the same checkpoint waits, then reads its width
  // A checkpoint keeps the point it was trained at, whatever the study's file says later.
  const std::string beside = (fs::path(ckpt.path()) / "operating_point.ini").string();
  std::optional<SolvedPoint> s = read_solution(beside, *op);
  if (!s) {
    // Solved once per study (docs/design.md#operating-points): every seed and shard reads the
    // first solution, so the models a study trains do not follow the machine's noise seed by seed.
    const std::string shared = study_operating_point_path(cfg);
    FileLock lock(shared + ".lock");
    lock.lock();
    s = read_solution(shared, *op);
    if (!s) {
      s = solve_training_point(*op, cfg, data);
      write_solution(shared, *op, *s, "The operating point this study's models of this shape are trained at");
      if (cfg.output.verbosity > 0)
        std::fprintf(stderr, "operating point: %s = %.4g for %s = %.3g (%.3g reached, %zu probes%s) in %s\n",
                     op->knob.c_str(), s->knob, op->metric.c_str(), op->target, s->reached, s->probes.size(),
                     op->analytic ? ", computed from shapes" : ", timed on untrained models", shared.c_str());
    }
    write_solution(beside, *op, *s, "The operating point this checkpoint's model is trained at");
  }
  set_operating_knob(cfg, *op, s->knob);
  record_solved_point(*op, *s, cfg, r);
  return true;
}

void record_solved_point(const OperatingPoint& op, const SolvedPoint& s, const RunConfig& cfg, RunRecord& r) {
  auto& m = r.metrics;
  m["calibrated_target"] = op.target;
  m["calibrated_knob_value"] = s.knob;
  m["calibrated_reached"] = s.reached;
  m["calibrated_probes"] = static_cast<double>(s.probes.size());
  if (std::isfinite(s.knob_lo)) {  // a timed grid's interval for the knob, from its repeated measurements
    m["calibrated_knob_lo"] = s.knob_lo;
    m["calibrated_knob_hi"] = s.knob_hi;
  }
  std::vector<double> knob, value;
  for (const auto& [k, v] : s.probes) {
    knob.push_back(k);
    value.push_back(v);
  }
  Table t;
  t.add("knob", knob);
  t.add("value", value);
  r.tables["calibration/probes"] = t;
  r.config_ini = to_ini(cfg);  // the config the run decodes with: the solved knob
}

}  // namespace zl
