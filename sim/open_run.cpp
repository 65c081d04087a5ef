#include "sim/open_run.h"

#include <cmath>
#include <cstdio>

#include "models/factory.h"
#include "sim/data.h"
#include "sim/decoder.h"
#include "sim/judge.h"
#include "sim/metrics.h"
#include "sim/model_options.h"
#include "sim/operating_point.h"
#include "sim/prompts.h"
#include "sim/runtime.h"
#include "sim/trainer.h"
#include "sim/training_point.h"

namespace zl {
namespace {


std::vector<int32_t> to_vector(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::vector<int32_t>(c.data_ptr<int32_t>(), c.data_ptr<int32_t>() + c.numel());
}

// The run's operating point (docs/design.md#operating-points, sim/operating_point.h): its knob
// solved for the target on calibration prompts, or set to `frozen` (the value
// a run solved before, when its arms are reopened for paired timing), then
// kept in the run's config for every later pass. The record gets the target,
// the knob and the value reached on the calibration prompts; the stage
// reports the value on the test prompts under the metric's own name.
void settle_operating_point(OpenRun& run, const OperatingPoint& op, RunRecord& r, std::optional<double> frozen) {
  auto set_knob = [&](double v) { set_operating_knob(run.cfg, op, v); };
  auto& m = r.metrics;
  m["calibrated_target"] = op.target;
  if (frozen) {
    set_knob(*frozen);
    m["calibrated_knob_value"] = *frozen;
    return;
  }
  const int64_t C = run.cfg.model.context;
  const Prompts prompts =
      calibration_prompts(run.cfg, run.data, op.prompts, {4, std::max<int64_t>(4, C / 16), std::max<int64_t>(4, C / 8)});
  SolvedPoint s = solve_operating_point(op, [&](double knob) {
    set_knob(knob);
    return run.stage->operating_metric(*run.ctx, op.metric, prompts);
  });
  set_knob(s.knob);
  record_solved_point(op, s, run.cfg, r);
  if (run.cfg.output.verbosity > 0)
    std::fprintf(stderr, "operating point: %s = %.4g for %s = %.3g (%.3g reached on %lld calibration prompts, %zu probes)\n",
                 op.knob.c_str(), s.knob, op.metric.c_str(), op.target, s.reached,
                 static_cast<long long>(prompts.tokens.size()), s.probes.size());
}

}  // namespace

std::unique_ptr<OpenRun> open_run(const RunConfig& cfg, RunRecord& r, bool with_judge, std::optional<double> frozen_knob) {
  configure_runtime(cfg.train.threads);
  const torch::Device device = resolve_device(cfg.train.device);
  auto run = std::make_unique<OpenRun>();
  run->cfg = cfg;
  run->id = identify(cfg);

  // config → data
  run->data = prepare_data(cfg);
  const Dataset& ds = run->data;
  // A knob that shapes the model (sfcl's width) is solved before it trains.
  settle_training_point(run->cfg, ds, r);
  ModelConfig mc = model_config(run->cfg, ds.tokenizer->vocab_size());

  // data → model → trainer
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  run->stage = make_variant_stage(cfg);  // an unknown variant fails before training
  run->model = make_model(run->id.family, mc);
  if (with_judge && cfg.judge.enabled) check_judge_size(cfg, mc.vocab);
  TrainOutcome trained = train_model(run->cfg, run->id, run->model, ds, device);
  for (const auto& [name, curve] : trained.state.curves) r.curves[name] = curve;
  r.train_commit = trained.state.code.commit;

  auto& m = r.metrics;
  m["params"] = static_cast<double>(run->model->parameter_count());
  m["train_tok_s"] = trained.train_tok_s;
  m["val_loss"] = trained.val_loss;
  m["val_ppl"] = std::exp(trained.val_loss);
  m["bpb"] = bits_per_byte(trained.val_loss, ds.val.tokens.numel(), ds.val.text_bytes);
  m["unigram_loss"] = unigram_loss(to_vector(ds.train.tokens), to_vector(ds.val.tokens), mc.vocab);

  // The variant's own models (verifier, draft, table), after the LM.
  run->ctx = std::make_unique<StageContext>(StageContext{run->cfg, run->model, run->data, device, run->id.checkpoint_dir});
  run->stage->prepare(*run->ctx, r);
  if (auto op = operating_point(cfg)) settle_operating_point(*run, *op, r, frozen_knob);

  // The independent judge, shared by every run on this corpus and tokenizer.
  if (with_judge && cfg.judge.enabled) {
    run->judge = load_or_train_judge(cfg, ds, device);
    run->ctx->judge = &run->judge.model;
    m["judge_params"] = static_cast<double>(run->judge.params);
    m["judge_val_loss"] = run->judge.val_loss;
    m["judge_reused"] = run->judge.reused ? 1 : 0;
  }
  run->prompts = make_prompts(cfg, ds);
  run->opt = decode_options(cfg.decode, ds.tokenizer->eos_id());
  return run;
}

void timed_pass(OpenRun& run, int64_t repeat, PassTimings& timings) {
  at::Generator gen = make_generator(sampling_seed(run.cfg, 104729) + repeat);
  timings.add(repeat, run.stage->decode(*run.ctx, run.prompts.tokens, run.opt, gen, /*logged=*/false));
}

}  // namespace zl
