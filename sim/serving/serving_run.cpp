#include "sim/serving/serving_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "sim/runtime.h"
#include "sim/serving/calibration.h"
#include "sim/serving/engine.h"
#include "sim/serving/projection.h"
#include "sim/serving/serve_loop.h"
#include "sim/serving/serving_checks.h"
#include "sim/serving/serving_tables.h"
#include "sim/serving/simulator.h"

namespace zl {
namespace {

// What every served pass of the run shares.
struct Setup {
  VariantStage::Serving how;
  SchedulerOptions sched;
  std::vector<std::vector<int32_t>> prompts;  // the run's prompts, cut to leave room for the output
  int64_t output_len = 0;
  double kv_bytes_per_token = 0;  // this variant's cache, measured from its tensors
  double kv_bytes_projected = 0;  // what a large model's cache would hold per token (projected_kv_bytes)
  ResampleModel resample;         // sfvl: what the simulator draws
};

// Bytes per token a projection carries to a large model: the cache's own,
// except fused's attn_mass queries (H·D values per token, kept here so that
// a rollback can take the dropped rows out of the column sums,
// models/kv_cache.h): a serving system keeps one accumulated score per key
// and head, as H2O does (the H sums, counted).
double projected_kv_bytes(const KVCache& cache) {
  double bytes = cache.bytes_per_token();
  for (const auto& l : cache.layers)
    if (l.queries.defined()) bytes -= l.queries.size(1) * l.queries.size(3) * l.queries.element_size();
  return bytes;
}

Setup setup(OpenRun& run, RunRecord& r) {
  const RunConfig& cfg = run.cfg;
  const ServeConfig& s = cfg.serve;
  Setup out;
  out.how = run.stage->serving(*run.ctx, run.opt, sampling_seed(cfg, 4093));
  out.output_len = s.output_len > 0 ? s.output_len : cfg.decode.max_new_tokens;
  if (out.output_len >= cfg.model.context)
    throw std::runtime_error("serve.output_len " + std::to_string(out.output_len) + " leaves no room for a prompt in model.context " +
                             std::to_string(cfg.model.context));
  DecodeOptions cut = run.opt;
  cut.max_new_tokens = out.output_len;
  for (const auto& p : run.prompts.tokens) {
    const size_t keep = kept_prompt_tokens(p.size(), cfg.model.context, cut);
    out.prompts.emplace_back(p.end() - keep, p.end());
  }

  // The KV budget in bytes is the same for every variant of a shape; what a
  // variant's token costs decides how many blocks it buys. A budget that
  // holds no block was refused before training (sim/serving/serving_checks.h,
  // from the config's figure); the error below is for the cache measured here.
  const ModelConfig& mc = run.model->cfg;
  const KVCache probe = run.model->make_cache(1, 0, out.how.opt.eviction);
  out.kv_bytes_per_token = probe.bytes_per_token();
  out.kv_bytes_projected = projected_kv_bytes(probe);
  const double baseline_bytes = 2.0 * mc.layers * mc.dim * sizeof(float);
  out.sched.block_size = s.block_size;
  out.sched.max_num_seqs = s.max_num_seqs;
  out.sched.max_num_batched_tokens = s.max_num_batched_tokens;
  out.sched.num_blocks = serve_kv_blocks(cfg, out.kv_bytes_per_token);
  out.sched.held_token_cap = out.how.opt.eviction.on() ? out.how.opt.eviction.budget : 0;
  if (out.sched.num_blocks < 1)
    throw std::runtime_error("serve.kv_budget_mb = " + std::to_string(s.kv_budget_mb) + " holds no block of " +
                             std::to_string(s.block_size) + " tokens at " + std::to_string(out.kv_bytes_per_token) +
                             " bytes per token");
  auto& m = r.metrics;
  m["serve_kv_blocks"] = static_cast<double>(out.sched.num_blocks);
  m["serve_kv_bytes_per_token"] = out.kv_bytes_per_token;
  m["projected_kv_bytes_ratio"] = out.kv_bytes_projected / baseline_bytes;
  // sfvl: the simulator draws re-samples at the rate the profile saw (set
  // there; the quality pass's trigger rate until then).
  if (out.how.resamples) {
    out.resample.drop = cfg.verify.drop;
    out.resample.max_retries = cfg.verify.max_retries;
    auto rate = m.find("trigger_rate");
    if (rate != m.end() && std::isfinite(rate->second)) out.resample.rate = rate->second;
  }
  return out;
}

ServeResult serve_real(OpenRun& run, const Setup& su, const std::vector<ServeRequest>& requests,
                       const SchedulerOptions& sched, uint64_t seed) {
  ServingEngine engine(run.model, requests, su.how.opt, su.how.hook.get(), sched.max_num_seqs, seed);
  engine.start();
  return serve(requests, sched, engine);
}

// The calibration profile: the real server's steps (shape, duration) on
// workloads of its own seeds, never the ones it is validated on. Closed
// loop first (every request at 0) at growing numbers of running requests,
// and once with a small token budget so that chunked prefills share steps
// with decodes; then open loop, Poisson arrivals at four shares of the
// closed loop's throughput, where single prompts join running batches, the
// last past it: an overloaded server's steps, a full batch beside a
// prefill chunk, are most of an overload's time (35-67% measured) and were
// predicted 1-7% fast from the three below it.
// With a hook (sfvl), also what its review did there (sim/serving/resample.h):
// the rates the simulator draws re-samples at.
struct Profile {
  std::vector<ProfiledStep> steps;
  ReviewTally reviews;
};

Profile profile(OpenRun& run, const Setup& su, uint64_t seed) {
  Profile out{{}, ReviewTally(su.resample.max_retries)};
  auto keep = [&](const ServeResult& res) {
    out.reviews.add(res.steps);
    for (size_t i = 1; i < res.steps.size(); ++i)  // the first step pays for packing the weights
      out.steps.push_back({res.steps[i].shape, res.steps[i].end_ns - res.steps[i].start_ns});
  };
  auto pass = [&](int64_t width, int64_t budget, double rate, int64_t requests, uint64_t k) {
    SchedulerOptions sched = su.sched;
    sched.max_num_seqs = width;
    sched.max_num_batched_tokens = budget;
    ArrivalOptions a;
    a.rate = rate;
    a.requests = requests;
    a.seed = seed ^ (0x5DEECE66Dull * (k + 1));
    return serve_real(run, su, synthetic_workload(su.prompts, su.output_len, a), sched, seed + k);
  };
  const int64_t widest = su.sched.max_num_seqs, budget = su.sched.max_num_batched_tokens;
  pass(2, budget, INFINITY, 6, 0);  // warm-up
  // Every split of a batch over the team: one sequence (the team splits its
  // products), then 1, 2, ... sequences on the most loaded thread. A team of
  // one has no split to cover: every other batch size, which the decode
  // table interpolates between (profiling all 16 was 60% of its time).
  std::vector<int64_t> widths{1};
  const int64_t stride = std::max(2, at::get_num_threads());
  for (int64_t w = stride; w < widest; w += stride) widths.push_back(w);
  widths.push_back(widest);
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  double closed = 0;  // requests/s at the widest
  for (int64_t w : widths) {
    ServeResult res = pass(w, budget, INFINITY, std::max<int64_t>(3 * w, 6), w);
    keep(res);
    if (w == widest) closed = serving_metrics(res.requests, Slo{}).request_throughput;
  }
  keep(pass(std::min<int64_t>(4, widest), std::max<int64_t>(8, budget / 8), INFINITY, 12, 101));
  // 40 requests a rate; 24 at the lowest, mostly idle waits, whose wake-ups
  // are all it adds (it was a third of a profile's time).
  for (double share : {0.25, 0.6, 1.0, 1.5})
    keep(pass(widest, budget, share * closed, share < 0.5 ? 24 : 40, 200 + share * 100));
  return out;
}

// serve.trace's requests, each prompt tokenised and cut, as a decode cuts
// it, to leave room for its output.
std::vector<ServeRequest> read_run_trace(OpenRun& run, const Setup& su) {
  const RunConfig& cfg = run.cfg;
  auto trace = read_trace(cfg.serve.trace, [&](const std::string& text) {
    auto t = run.data.tokenizer->encode(text);
    DecodeOptions cut = run.opt;
    cut.max_new_tokens = su.output_len;
    const size_t keep = kept_prompt_tokens(t.size(), cfg.model.context, cut);
    return std::vector<int32_t>(t.end() - keep, t.end());
  });
  for (const auto& q : trace)
    if (q.output_len + 1 > cfg.model.context)
      throw std::runtime_error(cfg.serve.trace + ": request " + std::to_string(q.id) + " asks for " +
                               std::to_string(q.output_len) + " tokens, more than model.context " +
                               std::to_string(cfg.model.context) + " holds");
  return trace;
}

// The step's cost model fitted to profiles of the real server, and (with a
// hook) the rates its review fired at there.
struct Calibrated {
  Calibration cal;
  ResampleModel resample;
};

Calibrated calibrated(const Setup& su, const std::vector<const Profile*>& profiles) {
  std::vector<ProfiledStep> steps;
  ReviewTally reviews(su.resample.max_retries);
  for (const Profile* p : profiles) {
    steps.insert(steps.end(), p->steps.begin(), p->steps.end());
    reviews.add(p->reviews);
  }
  Calibrated out{calibrate(steps, at::get_num_threads()), su.resample};
  if (su.how.resamples && reviews.samples() > 0) out.resample = reviews.model(su.resample.drop);
  return out;
}

// serve/profile: each profiled step's shape and duration, which profile it
// was (0: before the first load; k: after the k-th), and the figure of the
// run's first cost model (fitted on profile 0): on later profiles, the
// machine's drift against it.
Table profile_table(const std::vector<Profile>& profiles, const StepCostModel& cost) {
  ShapeColumns shape;
  std::vector<int64_t> which, ns, predicted;
  for (size_t k = 0; k < profiles.size(); ++k)
    for (const auto& p : profiles[k].steps) {
      which.push_back(k);
      shape.add(p.shape);
      ns.push_back(p.ns);
      predicted.push_back(cost.step_ns(p.shape));
    }
  Table t;
  t.add("profile", which);
  shape.into(t);
  t.add("ns", ns);
  t.add("predicted_ns", predicted);
  return t;
}

// What serve_run records of its loads: serve/loads, serve/sensitivity and
// serve/steps.
struct LoadTables {
  LoadRows loads;
  SensitivityRows sensitivity;
  StepRows steps;
};

// Load k (`load` of the capacity, at `rate`), on `requests`: served for
// real serve.repeats times (serve.measure), then profiled again (profiles
// gains one), and simulated on the model fitted on the profiles just before
// and just after it (on `first`'s without serve.measure).
void serve_load(OpenRun& run, const Setup& su, const std::vector<ServeRequest>& requests, size_t k, double load,
                double rate, const Calibrated& first, uint64_t seed, std::vector<Profile>& profiles, LoadTables& out) {
  const ServeConfig& s = run.cfg.serve;
  const Slo slo{s.slo_ttft_ms, s.slo_tpot_ms, s.slo_e2el_ms};
  const uint64_t sampling = seed + 7 * k;
  auto simulated = [&](const StepCostModel& cost, const ResampleModel& resample) {
    return serving_metrics(simulate(cost, resample, requests, su.sched, sampling).requests, slo);
  };
  // This machine's speed drifts by 5-20% over seconds to tens of seconds
  // (a shared VM; measured: a cost model fitted a minute before the
  // baseline's loads predicted its light load's TPOT 17% fast, and one
  // fitted just before a load still missed its steps by up to ±6%). So
  // after each measured load the real step is profiled again, on
  // workloads of its own seeds, and each load is predicted from the
  // profiles just before and just after it: a drift over the load cancels
  // to first order.
  // With serve.repeats > 1 the same requests are served again straight
  // after (same sampling seed): what the real server gives a second time
  // is the measurement's own noise, against which the simulator's error
  // is read. The profiles bracket every repeat.
  Calibrated here = first;
  if (s.measure) {
    std::vector<ServeResult> real;
    for (int64_t rep = 0; rep < s.repeats; ++rep) real.push_back(serve_real(run, su, requests, su.sched, sampling));
    profiles.push_back(profile(run, su, seed + 1000 * (k + 1)));
    here = calibrated(su, {&profiles[k], &profiles[k + 1]});
    for (int64_t rep = 0; rep < s.repeats; ++rep) {
      out.loads.add("measured", load, rate, serving_metrics(real[rep].requests, slo), rep);
      const double speed = out.steps.add(load, rep, std::move(real[rep].steps), here.cal.cost);
      // A diagnosis, not a prediction: the simulator at the speed this
      // repeat ran at, read off its own steps. What it still misses is
      // the scheduler and the cost model's shape; what it gains over
      // the prediction is this machine's drift during the load.
      if (speed > 0) out.sensitivity.add(load, rate, speed, simulated(ScaledCost(here.cal.cost, speed), here.resample), rep);
    }
  }
  out.loads.add("simulated", load, rate, simulated(here.cal.cost, here.resample));
  // The same with every step up to 2% shorter or longer: how far each
  // figure moves within the error a profile leaves in step time (this
  // machine's speed moves by a few % between a profile and a load). Near
  // saturation a queue turns 1% of step time into tens of % of TTFT p90,
  // and not monotonically (a burst, a preemption more or less).
  for (double scale : {0.98, 0.99, 1.01, 1.02})
    out.sensitivity.add(load, rate, scale, simulated(ScaledCost(here.cal.cost, scale), here.resample));
}

}  // namespace

void serve_run(OpenRun& run, RunRecord& r) {
  const RunConfig& cfg = run.cfg;
  const ServeConfig& s = cfg.serve;
  auto& m = r.metrics;
  Setup su = setup(run, r);
  const uint64_t seed = sampling_seed(cfg, 4049);
  // A variant that cannot be served here (a decode loop of its own) is still
  // projected: the roofline needs only its costs, not its steps.
  m["serve_served"] = su.how.unsupported.empty() ? 1 : 0;
  if (!su.how.unsupported.empty()) {
    if (cfg.output.verbosity > 0)
      std::fprintf(stderr, "note: variant %s is not served here (%s); projected only\n", cfg.variant.c_str(),
                   su.how.unsupported.c_str());
    project(run, su.resample, su.kv_bytes_projected, su.how.opt.eviction, r);
    return;
  }

  // The real server's team, for its profiles and loads alike (the cost
  // model is fitted to the team it is profiled on).
  const ScopedThreads team(s.threads);
  m["serve_threads"] = at::get_num_threads();

  // The workloads: a trace, or synthetic arrivals at each rate.
  const std::vector<ServeRequest> trace = s.trace.empty() ? std::vector<ServeRequest>{} : read_run_trace(run, su);
  {  // Every request must fit the KV budget alone: say so before serving anything.
    Scheduler check(su.sched);
    int64_t id = 0;
    if (!trace.empty())
      for (const auto& q : trace) check.add(id++, q.prompt.size(), q.output_len);
    else
      for (const auto& p : su.prompts) check.add(id++, p.size(), su.output_len);
  }

  std::vector<Profile> profiles;
  profiles.push_back(profile(run, su, seed));
  const Calibrated first = calibrated(su, {&profiles[0]});
  const Calibration& cal = first.cal;
  su.resample = first.resample;
  if (su.how.resamples) {
    m["serve_resample_rate"] = su.resample.rate;
    m["serve_resample_after_fire_rate"] = su.resample.after_fire_rate;
    m["serve_resample_behind_fire_rate"] = su.resample.behind_fire_rate;
    m["serve_resample_at_fire_rate"] = su.resample.at_fire_rate;
    r.tables["serve/review"] = review_table(su.resample);
  }
  m["serve_calibration_steps"] = static_cast<double>(cal.steps);
  m["serve_calibration_outliers"] = static_cast<double>(cal.outliers);
  m["serve_calibration_median_error"] = cal.median_abs_error;

  auto workload = [&](double rate, uint64_t k) {
    ArrivalOptions a;
    a.rate = rate;
    a.burstiness = s.burstiness;
    a.requests = s.requests;
    a.seed = seed + 31 * k;
    return synthetic_workload(su.prompts, su.output_len, a);
  };
  const double cap = simulated_capacity(cal.cost, su.resample, workload(INFINITY, 0), su.sched, seed);
  m["serve_capacity_rps"] = cap;
  std::vector<double> loads, rates;
  if (!trace.empty()) {
    loads.push_back(NAN);
    rates.push_back(NAN);
  } else if (!s.rates.empty()) {
    rates = number_list(s.rates);
    for (double x : rates) loads.push_back(x / cap);
  } else {
    loads = number_list(s.loads);
    for (double l : loads) rates.push_back(l * cap);
  }

  LoadTables tables;
  for (size_t k = 0; k < rates.size(); ++k)
    serve_load(run, su, trace.empty() ? workload(rates[k], k) : trace, k, loads[k], rates[k], first, seed, profiles,
               tables);
  r.tables["serve/profile"] = profile_table(profiles, cal.cost);
  r.tables["serve/loads"] = tables.loads.table();
  r.tables["serve/sensitivity"] = tables.sensitivity.table();
  if (cfg.output.verbosity > 0) print_loads(cfg.variant, tables.loads);
  if (s.measure) r.tables["serve/steps"] = tables.steps.table();

  const Slo slo{s.slo_ttft_ms, s.slo_tpot_ms, s.slo_e2el_ms};
  if (slo.ttft_ms > 0 || slo.tpot_ms > 0 || slo.e2el_ms > 0) {
    m["serve_max_rate_slo"] = max_rate_meeting(
        cal.cost, su.resample, [&](double rate) { return workload(rate, 0); }, su.sched, slo, s.slo_attainment, cap, seed);
  }
  project(run, su.resample, su.kv_bytes_projected, su.how.opt.eviction, r);
}

}  // namespace zl
