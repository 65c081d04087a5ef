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
#include "sim/decoder.h"
#include "sim/model_options.h"
#include "sim/operating_point.h"
#include "sim/prompts.h"
#include "sim/runtime.h"
#include "sim/stages/sfcl_stage.h"
#include "sim/trainer.h"
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
  std::istringstream probes(keys["probes"]);
  for (double k, v; probes >> k >> v;) s.probes.emplace_back(k, v);
  return s;
}

void write_solution(const std::string& path, const OperatingPoint& op, const SolvedPoint& s) {
  std::ostringstream out;
  out << "# The operating point this checkpoint's model is trained at (sim/training_point.h).\n"
      << "metric = " << op.metric << "\ntarget = " << knob_text(op.target) << "\nknob = " << op.knob
      << "\nvalue = " << knob_text(s.knob) << "\nreached = " << knob_text(s.reached) << "\nprobes =";
  for (const auto& [k, v] : s.probes) out << " " << knob_text(k) << " " << knob_text(v);
  out << "\n";
  write_file_atomically(path, out.str());
}

}  // namespace

bool settle_training_point(RunConfig& cfg, const Dataset& data, RunRecord& r) {
  const auto op = training_operating_point(cfg);
  if (!op) return false;
  CheckpointDir ckpt(checkpoint_path(cfg));
  ckpt.lock();  // another shard solving for the same checkpoint waits, then reads its width
  const std::string path = (fs::path(ckpt.path()) / "operating_point.ini").string();
  std::optional<SolvedPoint> s = read_solution(path, *op);
  if (!s) {
    const Replay text = replay_text(cfg, data, op->prompts);
    // A process's first timed steps pay for allocation and cold caches: one
    // measurement is thrown away. Each probe is then the mean of two, taken
    // apart in time, so that a burst of other load moves neither far.
    measure_untrained(*op, cfg, data, text, op->lo);
    s = solve_on_grid(*op, [&](double knob) {
      const auto begin = std::chrono::steady_clock::now();
      const double v = 0.5 * (measure_untrained(*op, cfg, data, text, knob) + measure_untrained(*op, cfg, data, text, knob));
      if (cfg.output.verbosity > 1)
        std::fprintf(stderr, "  %s = %g: %s = %.4f (%.1f s)\n", op->knob.c_str(), knob, op->metric.c_str(), v,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
      return v;
    });
    write_solution(path, *op, *s);
    if (cfg.output.verbosity > 0)
      std::fprintf(stderr, "operating point: %s = %.4g for %s = %.3g (%.3g reached, %zu probes on untrained models)\n",
                   op->knob.c_str(), s->knob, op->metric.c_str(), op->target, s->reached, s->probes.size());
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
