#include "sim/run/run.h"

#include <sys/resource.h>

#include <cmath>
#include <cstdio>

#include "datasets/contracts_checker.h"
#include "sim/cost.h"
#include "sim/decoder.h"
#include "sim/judge.h"
#include "sim/metrics.h"
#include "sim/open_run.h"
#include "sim/provenance.h"
#include "sim/run_identity.h"
#include "sim/runtime.h"
#include "sim/serving/projection.h"
#include "sim/serving/serving_checks.h"
#include "sim/serving/serving_run.h"

namespace zl {
namespace {

int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace

std::string serving_problem(const RunConfig& cfg) {
  // The catalog is read only for a run it would be read for after training,
  // and once per process: a study asks for every one of its runs.
  if (!(cfg.serve.enabled && projected(cfg))) return serving_problem(cfg, HardwareCatalog{});
  static const HardwareCatalog catalog = read_hardware(hardware_catalog_path());
  return serving_problem(cfg, catalog);
}

RunRecord failed_run(const RunConfig& cfg, const std::string& error) {
  RunRecord r;
  const RunIdentity id = identify(cfg);
  r.run_id = id.run_id;
  r.train_id = id.train_id;
  r.variant = cfg.variant;
  r.seed = cfg.seed;
  r.status = "failed";
  r.error = error;
  r.config_ini = to_ini(cfg);
  r.started_utc = r.finished_utc = utc_now();
  return r;
}

RunRecord execute_run(const RunConfig& cfg) {
  RunRecord r = failed_run(cfg, "");
  r.started_utc = utc_now();
  auto run = open_run(cfg, r, /*with_judge=*/true);
  const StageContext& ctx = *run->ctx;
  const Dataset& ds = run->data;
  const ModelConfig& mc = run->model->cfg;
  const Prompts& prompts = run->prompts;
  auto& m = r.metrics;

  // trainer → decoder: one pass for quality (the run's own sampling seed),
  // then the timed passes, here or beside the other arms of the seed.
  at::Generator gen = make_generator(sampling_seed(cfg, 7919) + 17);
  DecodeOutput quality = run->stage->decode(ctx, prompts.tokens, run->opt, gen, /*logged=*/true);
  // Which step decoded: asked for the fast one, a variant it cannot serve falls back, and says so.
  m["decode_fast_step"] = quality.fast_step ? 1 : 0;
  if (run->opt.fast_step && !quality.fast_step && cfg.output.verbosity > 0)
    std::fprintf(stderr, "note: decode.step = fast, but variant %s decodes on the reference step: %s\n",
                 cfg.variant.c_str(), quality.step_note.empty() ? "its stage has no fast step yet" : quality.step_note.c_str());
  if (cfg.decode.timing == "run") {
    PassTimings timings;
    for (int64_t rep = 0; rep < cfg.decode.repeats; ++rep) timed_pass(*run, rep, timings);
    timings.write(r);
    run->stage->add_timing(ctx, r);
    m["decode_timing_arms"] = 1;
  }
  m["kv_bytes_per_token"] = quality.kv_bytes_per_token;
  if (quality.kv_bytes_peak > 0) m["kv_bytes_peak"] = static_cast<double>(quality.kv_bytes_peak);

  // decoder → metrics: the checker judges each continuation (contracts only),
  // and counts the statements it judged: per fact, a run's prompts give many
  // units of quality, not one per continuation (issue 29 item 7).
  Table items;
  std::vector<int64_t> item_id, violations, judged_facts, gen_tokens;
  std::vector<std::string> kinds, prompt_text, continuation;
  int64_t violating = 0, violations_total = 0, judged_total = 0;
  for (size_t i = 0; i < prompts.text.size(); ++i) {
    std::string text = ds.tokenizer->decode(quality.continuations[i]);
    std::string kind_list;
    int64_t count = 0, judged = 0;
    if (prompts.judged) {
      const ContractCheck check = check_contract_detailed(prompts.text[i], text);
      for (const auto& v : check.violations) kind_list += (kind_list.empty() ? "" : ",") + v.kind;
      count = static_cast<int64_t>(check.violations.size());
      judged = check.judged;
      violating += count > 0;
      violations_total += count;
      judged_total += judged;
    }
    item_id.push_back(static_cast<int64_t>(i));
    violations.push_back(count);
    judged_facts.push_back(judged);
    gen_tokens.push_back(static_cast<int64_t>(quality.continuations[i].size()));
    kinds.push_back(kind_list);
    prompt_text.push_back(prompts.text[i]);
    continuation.push_back(text);
  }
  // judge_nll (docs/design.md#metrics-and-cost): the continuations' mean NLL under the judge, per
  // token over all items (an item's own mean is in eval/items).
  std::vector<double> item_nll(prompts.tokens.size(), std::nan(""));
  if (ctx.judge) {
    item_nll = mean_nll(*ctx.judge, prompts.tokens, quality.continuations);
    double nll = 0;
    int64_t tokens = 0;
    for (size_t i = 0; i < item_nll.size(); ++i)
      if (std::isfinite(item_nll[i])) {
        nll += item_nll[i] * quality.continuations[i].size();
        tokens += quality.continuations[i].size();
      }
    m["judge_nll"] = tokens > 0 ? nll / tokens : std::nan("");
  }
  items.add("item", item_id);
  items.add("violations", violations);
  items.add("judged_facts", judged_facts);
  items.add("judge_nll", item_nll);
  items.add("violation_kinds", kinds);
  items.add("tokens", gen_tokens);
  items.add("prompt", prompt_text);
  items.add("continuation", continuation);
  r.tables["eval/items"] = items;
  m["violation_rate"] = prompts.judged ? static_cast<double>(violating) / prompts.text.size() : std::nan("");
  // Pooled over the run's items (a ratio of sums, so a long continuation
  // weighs by its statements); the seed stays the unit of the claims' interval.
  m["facts_judged"] = prompts.judged ? static_cast<double>(judged_total) : std::nan("");
  m["violation_rate_per_fact"] =
      judged_total > 0 ? static_cast<double>(violations_total) / static_cast<double>(judged_total) : std::nan("");
  m["repetition_rate"] = repetition_rate(quality.continuations);
  m["distinct_2"] = distinct_n(quality.continuations, 2);

  // Analytic cost, at the mean context a decoded token attends over.
  const int64_t mean_context = mean_decode_context(mc.context, cfg.decode.max_new_tokens);
  auto flops = flops_per_token(mc, mean_context);
  run->stage->add_flops(ctx, mean_context, flops);
  m["flops_per_token"] = total_flops(flops);
  for (const auto& [module, f] : flops) m["flops_" + module] = f;
  run->stage->finish(ctx, prompts, quality, r);
  // Served by continuous batching, measured and simulated (after finish():
  // the simulator draws sfvl's re-samples at the trigger rate it measured).
  if (cfg.serve.enabled) serve_run(*run, r);
  m["peak_rss_bytes"] = static_cast<double>(peak_rss_bytes());
  // Memory as seed 002 §3.1 counts it (weights, the verifier's, the KV cache
  // in use), not the process's RSS, which at this size is LibTorch's runtime:
  // fp32 weights of the model and of the side models it decodes with, and the
  // peak KV cache of one decode batch.
  double side = 0;
  for (const char* k : {"verifier_params", "draft_params"})
    if (m.count(k) && std::isfinite(m[k])) side += m[k];
  m["memory_bytes_analytic"] = 4.0 * (m["params"] + side) +
                               static_cast<double>(cfg.decode.batch) * static_cast<double>(quality.kv_bytes_peak);

  r.status = "complete";
  r.finished_utc = utc_now();
  return r;
}

}  // namespace zl
