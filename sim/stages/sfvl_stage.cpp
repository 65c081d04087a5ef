#include "sim/stages/sfvl_stage.h"

#include <algorithm>
#include <random>

#include "datasets/contracts_checker.h"
#include "sim/judge.h"
#include "sim/stages/checker_oracle.h"
#include "sim/stages/verifier_training.h"
#include "sim/stages/verify_hook.h"

namespace zl {
namespace {

// What decides where to re-sample: sfvl's verifier, or one of its controls
// (issue 13 §7) with the same budget, drop and temperature bump: the exact
// checker (sfvl_oracle, sim/stages/checker_oracle.h) or a coin with probability
// control.trigger_rate at every check (sfvl_random). The controls report the
// same re-sampling metrics from the same event log.
enum class Check { Verifier, Oracle, Random };

class SfvlStage : public VariantStage {
 public:
  explicit SfvlStage(Check check) : check_(check) {}

  void prepare(const StageContext& ctx, RunRecord& r) override {
    if (check_ != Check::Verifier) return;  // the controls need no verifier
    VerifierReport rep;
    verifier_ = load_or_train_verifier(ctx.cfg, ctx.model, ctx.data, ctx.checkpoint_dir, rep);
    record_verifier_report(rep, ctx.model->parameter_count(), r.metrics);
  }

  DecodeOutput decode(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts,
                      const DecodeOptions& opt, at::Generator& gen, bool logged) override {
    return run(ctx, prompts, opt, gen, logged, "quality");
  }

  Serving serving(const StageContext& ctx, const DecodeOptions& opt, uint64_t seed) override {
    if (check_ == Check::Oracle)  // it finds a prompt's contract by the item's index in the decode
      return {opt, nullptr, "the checker oracle reads each prompt's contract by its place in a decode; a server has none"};
    return {opt, make_hook(ctx, opt, seed, /*logged=*/false, "serving"), "", /*resamples=*/true};
  }

  // The first-check trigger rates (seed 002 §2.2's 18% on short text) on the
  // calibration prompts, at the threshold ctx.cfg sets.
  double operating_metric(const StageContext& ctx, const std::string& metric, const Prompts& prompts) override {
    const auto& cfg = ctx.cfg;
    if (check_ != Check::Verifier || (metric != "trigger_rate_first_short" && metric != "trigger_rate_first"))
      return VariantStage::operating_metric(ctx, metric, prompts);
    Verifier v = verifier_;
    WindowScorer scorer = [v](const torch::Tensor& w) mutable { return v->score(w); };
    return first_check_rate_at(ctx.model, scorer, v->cfg.window, VerifyPolicy::from(cfg.verify, cfg.decode.temperature),
                               prompts.tokens, decode_options(cfg.decode, ctx.data.tokenizer->eos_id()),
                               sampling_seed(cfg, 7933) + 37,
                               metric == "trigger_rate_first" ? 0 : cfg.model.context / 4);
  }

  void add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) override {
    if (check_ == Check::Verifier) per_module["verifier"] = verifier_->cfg.flops_per_check();  // one check per proposed token
  }

  void finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) override {
    const auto& cfg = ctx.cfg;
    DecodeOptions opt = decode_options(cfg.decode, ctx.data.tokenizer->eos_id());
    // Context sweep: document openings of growing length, so that checks
    // cover contexts from a few tokens to the full model context (S002-context).
    const int64_t C = cfg.model.context, budget = C - cfg.decode.max_new_tokens;
    Prompts openings = make_prompts(cfg, ctx.data, cfg.decode.prompts, budget);
    std::vector<std::vector<int32_t>> sweep;
    for (int64_t len : {int64_t{4}, budget / 4, budget / 2, budget}) {
      for (const auto& p : openings.tokens) sweep.emplace_back(p.begin(), p.begin() + std::min<int64_t>(len, p.size()));
    }
    at::Generator g1 = make_generator(sampling_seed(cfg, 7919) + 23);
    run(ctx, sweep, opt, g1, true, "context");
    if (!cfg.data.eval_corpus.empty() && cfg.data.eval_corpus != cfg.data.corpus) {
      Dataset ood = prepare_data(cfg, cfg.data.eval_corpus);
      Prompts ood_prompts = make_prompts(cfg, ood);
      at::Generator g2 = make_generator(sampling_seed(cfg, 7919) + 29);
      run(ctx, ood_prompts.tokens, opt, g2, true, "ood");
    }
    judge(ctx, prompts);

    auto& m = r.metrics;
    const double eps = cfg.verify.equiv_epsilon;
    auto q = resample_rates(events_, eps, [](const VerifyEvent& e) { return e.pass == "quality"; });
    m["trigger_rate"] = q.trigger_rate;
    m["resample_same_rate"] = q.same_rate;
    m["resample_equiv_rate"] = q.equiv_rate;
    m["resample_equiv_rate_self"] = q.equiv_rate_self;
    m["resample_fix_rate"] = q.fix_rate;
    m["resample_changed"] = static_cast<double>(q.changed);
    m["resample_equiv_changed_rate"] = q.equiv_changed_rate;
    m["resample_equiv_changed_rate_self"] = q.equiv_changed_rate_self;
    m["retries_exhausted_rate"] = q.exhausted_rate;
    m["resamples"] = static_cast<double>(q.resamples);
    m["checks_per_token"] = quality.kept_tokens > 0 ? static_cast<double>(q.checks) / quality.kept_tokens : NAN;
    // First checks only (the operating point's metrics, sim/operating_point.h),
    // of the quality and context passes: the test prompts' values.
    auto test_pass = [](const VerifyEvent& e) { return e.pass == "quality" || e.pass == "context"; };
    m["trigger_rate_first"] = first_check_trigger_rate(events_, test_pass);
    m["trigger_rate_first_short"] = first_check_trigger_rate_short(events_, cfg.model.context / 4, test_pass);
    m["trigger_rate_ood"] = resample_rates(events_, eps, [](const VerifyEvent& e) { return e.pass == "ood"; }).trigger_rate;

    // By context length: quality and sweep checks, in quarters of the context.
    std::vector<VerifyEvent> in_dist;
    for (const auto& e : events_)
      if (e.pass != "ood") in_dist.push_back(e);
    std::vector<int64_t> edges{0, C / 4, C / 2, 3 * C / 4, C + 1};
    auto by = rates_by_context(in_dist, edges, eps);
    m["trigger_rate_short"] = by.front().trigger_rate;
    m["trigger_rate_long"] = by.back().trigger_rate;
    Table t;
    std::vector<int64_t> lo, hi, checks, resamples;
    std::vector<double> trig, same, equiv, equiv_self, fix;
    for (size_t b = 0; b < by.size(); ++b) {
      lo.push_back(edges[b]);
      hi.push_back(edges[b + 1]);
      checks.push_back(by[b].checks);
      resamples.push_back(by[b].resamples);
      trig.push_back(by[b].trigger_rate);
      same.push_back(by[b].same_rate);
      equiv.push_back(by[b].equiv_rate);
      equiv_self.push_back(by[b].equiv_rate_self);
      fix.push_back(by[b].fix_rate);
    }
    t.add("context_lo", lo);
    t.add("context_hi", hi);
    t.add("checks", checks);
    t.add("resamples", resamples);
    t.add("trigger_rate", trig);
    t.add("resample_same_rate", same);
    t.add("resample_equiv_rate", equiv);
    t.add("resample_equiv_rate_self", equiv_self);
    t.add("resample_fix_rate", fix);
    r.tables["sfvl/by_context"] = t;
    // The equivalence test's epsilon is study-chosen (verify.equiv_epsilon):
    // the quality pass's rates at a sweep of it, beside the run's own.
    Table eq;
    std::vector<double> eps_col, all, changed, all_self, changed_self;
    for (double e : {0.1, 0.25, 0.5, 1.0, 2.0, eps}) {
      auto at = resample_rates(events_, e, [](const VerifyEvent& v) { return v.pass == "quality"; });
      eps_col.push_back(e);
      all.push_back(at.equiv_rate);
      changed.push_back(at.equiv_changed_rate);
      all_self.push_back(at.equiv_rate_self);
      changed_self.push_back(at.equiv_changed_rate_self);
    }
    eq.add("epsilon", eps_col);
    eq.add("resample_equiv_rate", all);
    eq.add("resample_equiv_changed_rate", changed);
    eq.add("resample_equiv_rate_self", all_self);
    eq.add("resample_equiv_changed_rate_self", changed_self);
    r.tables["sfvl/equiv_by_epsilon"] = eq;
    r.tables["decode/events"] = event_table();
    if (check_ == Check::Verifier) m["verifier_flops_share"] = m["flops_verifier"] / m["flops_per_token"];
  }

  // Cost: the verifier's measured share of decode time (timed passes only),
  // beside its analytic share of FLOPs. Each check goes with one model step
  // (the token it checks), so the share per check is the share per kept
  // token too, however often re-sampling repeats a position.
  void add_timing(const StageContext& ctx, RunRecord& r) override {
    const double share = decode_seconds_ > 0 ? hook_seconds_ / decode_seconds_ : NAN;
    // The controls' checker or coin is not a model's cost: another name.
    r.metrics[check_ == Check::Verifier ? "verifier_time_share" : "check_time_share"] = share;
  }

 private:
  // The check this arm re-samples on: the verifier, the checker oracle, or chance.
  std::unique_ptr<VerifyHook> make_hook(const StageContext& ctx, const DecodeOptions& opt, uint64_t seed, bool logged,
                                        const std::string& pass) {
    const auto& cfg = ctx.cfg;
    VerifyPolicy policy = VerifyPolicy::from(cfg.verify, opt.sampling.temperature);
    std::unique_ptr<VerifyHook> hook;
    if (check_ == Check::Verifier) {
      Verifier v = verifier_;
      hook = std::make_unique<VerifyHook>([v](const torch::Tensor& w) mutable { return v->score(w); }, v->cfg.window,
                                          policy, seed, logged, pass);
    } else if (check_ == Check::Oracle) {
      hook = std::make_unique<VerifyHook>(
          checker_oracle(ctx.data.tokenizer, cfg.verify.window, cfg.control.oracle_drop == "span"), policy, seed,
          logged, pass);
    } else {
      // A uniform draw per check below trigger_rate fires: the verifier's
      // threshold rule with a score that knows nothing of the tokens.
      policy.threshold = cfg.control.trigger_rate;
      hook = std::make_unique<VerifyHook>(random_trigger(seed ^ 0x9E3779B97F4A7C15ull), 1, policy, seed, logged, pass);
    }
    return hook;
  }

  DecodeOutput run(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts,
                   const DecodeOptions& opt, at::Generator& gen, bool logged, const std::string& pass) {
    const auto& cfg = ctx.cfg;
    const uint64_t seed = sampling_seed(cfg, 6151) + passes_++;
    std::unique_ptr<VerifyHook> hook = make_hook(ctx, opt, seed, logged, pass);
    DecodeOutput out = zl::decode(ctx.model, prompts, opt, gen, hook.get());
    if (logged) {
      for (auto& e : hook->events) events_.push_back(std::move(e));
    } else {
      hook_seconds_ += hook->seconds;
      decode_seconds_ += out.seconds;
    }
    return out;
  }

  // The checker's verdict and the NLLs before and after each re-sample of the
  // quality pass (contract prompts only have a checker): the independent
  // judge's when there is one, and the run's own LM's. Comparing a dropped
  // span with its replacement in one context needs both scored by one model;
  // the self-judged figure is the model grading its own alternatives.
  // Equivalence needs the verdict and the NLLs together, so the context and
  // OOD passes' re-samples (no checker there) are not scored: they were five
  // in six of the events, and scoring them under both models was most of an
  // sfvl run's time (issue 12).
  void judge(const StageContext& ctx, const Prompts& prompts) {
    if (!prompts.judged) return;
    const auto& tok = *ctx.data.tokenizer;
    std::vector<size_t> idx;
    std::vector<std::vector<int32_t>> prefixes, spans;
    for (size_t k = 0; k < events_.size(); ++k) {
      VerifyEvent& e = events_[k];
      if (!e.resolved() || e.pass != "quality") continue;
      idx.push_back(k);
      prefixes.push_back(e.prefix);
      spans.push_back(e.before);
      auto text = [&](const std::vector<int32_t>& span) {
        std::vector<int32_t> cont(e.prefix.begin() + e.prompt_len, e.prefix.end());
        cont.insert(cont.end(), span.begin(), span.end());
        return tok.decode(cont);
      };
      e.violation_before = check_contract(prompts.text[e.item], text(e.before)).size();
      e.violation_after = check_contract(prompts.text[e.item], text(e.after)).size();
    }
    std::vector<std::vector<int32_t>> replacements;
    for (size_t k : idx) replacements.push_back(events_[k].after);
    auto score = [&](Transformer& model, double VerifyEvent::*before, double VerifyEvent::*after) {
      auto b = mean_nll(model, prefixes, spans), a = mean_nll(model, prefixes, replacements);
      for (size_t k = 0; k < idx.size(); ++k) {
        events_[idx[k]].*before = b[k];
        events_[idx[k]].*after = a[k];
      }
    };
    score(ctx.model, &VerifyEvent::nll_before_self, &VerifyEvent::nll_after_self);
    if (ctx.judge) score(*ctx.judge, &VerifyEvent::nll_before, &VerifyEvent::nll_after);
  }

  Table event_table() const {
    auto ids = [](const std::vector<int32_t>& v) {
      std::string s;
      for (auto t : v) s += (s.empty() ? "" : " ") + std::to_string(t);
      return s;
    };
    std::vector<std::string> pass, before, after;
    std::vector<int64_t> item, position, context, proposed, fired, first, resampled, dropped, replacement, vb, va;
    std::vector<double> score, nb, na, nbs, nas;
    for (const auto& e : events_) {
      pass.push_back(e.pass);
      item.push_back(e.item);
      position.push_back(e.position);
      context.push_back(e.context_len);
      proposed.push_back(e.proposed);
      score.push_back(e.score);
      fired.push_back(e.fired);
      first.push_back(e.first);
      resampled.push_back(e.resampled);
      dropped.push_back(e.dropped);
      replacement.push_back(e.resolved() ? e.after.back() : -1);
      before.push_back(ids(e.before));
      after.push_back(ids(e.after));
      vb.push_back(e.violation_before);
      va.push_back(e.violation_after);
      nb.push_back(e.nll_before);
      na.push_back(e.nll_after);
      nbs.push_back(e.nll_before_self);
      nas.push_back(e.nll_after_self);
    }
    Table t;
    t.add("pass", pass);
    t.add("item", item);
    t.add("position", position);
    t.add("context_len", context);
    t.add("proposed", proposed);
    t.add("score", score);
    t.add("fired", fired);
    t.add("first", first);
    t.add("resampled", resampled);
    t.add("dropped", dropped);
    t.add("replacement", replacement);
    t.add("before", before);
    t.add("after", after);
    t.add("violation_before", vb);
    t.add("violation_after", va);
    t.add("nll_before", nb);
    t.add("nll_after", na);
    t.add("nll_before_self", nbs);
    t.add("nll_after_self", nas);
    return t;
  }

  Check check_;
  Verifier verifier_{nullptr};
  std::vector<VerifyEvent> events_;
  double hook_seconds_ = 0, decode_seconds_ = 0;
  int64_t passes_ = 0;
};

}  // namespace

double first_check_rate_at(Transformer& model, const WindowScorer& scorer, int64_t window, const VerifyPolicy& policy,
                           const std::vector<std::vector<int32_t>>& prompts, DecodeOptions opt, uint64_t seed,
                           int64_t short_context) {
  if (short_context > 0) {  // nothing past short text is counted: stop there
    size_t shortest = prompts.front().size();
    for (const auto& p : prompts) shortest = std::min(shortest, p.size());
    opt.max_new_tokens = std::max<int64_t>(1, short_context - static_cast<int64_t>(shortest));
  }
  at::Generator gen = make_generator(seed);
  VerifyHook hook(scorer, window, policy, seed, /*log=*/true, "calibrate");
  zl::decode(model, prompts, opt, gen, &hook);
  return short_context > 0 ? first_check_trigger_rate_short(hook.events, short_context)
                           : first_check_trigger_rate(hook.events);
}

WindowScorer random_trigger(uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [rng](const torch::Tensor& w) {
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    auto out = torch::empty({w.size(0)}, torch::kFloat);  // [N]
    float* p = out.data_ptr<float>();
    for (int64_t i = 0; i < w.size(0); ++i) p[i] = u(*rng);
    return out;
  };
}

std::unique_ptr<VariantStage> make_sfvl_stage(const RunConfig& cfg) {
  if (cfg.variant == "sfvl_oracle") return std::make_unique<SfvlStage>(Check::Oracle);
  if (cfg.variant == "sfvl_random") return std::make_unique<SfvlStage>(Check::Random);
  return std::make_unique<SfvlStage>(Check::Verifier);
}

}  // namespace zl
