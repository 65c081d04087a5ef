#include "sim/decode_bench.h"

#include <algorithm>
#include <optional>

#include "models/factory.h"
#include "models/verifier.h"
#include "sim/cost.h"
#include "sim/decoder.h"
#include "sim/stages/latent_kv_stage.h"
#include "sim/model_options.h"
#include "sim/runtime.h"
#include "sim/stages/oet_stage.h"
#include "sim/stages/speculative.h"
#include "sim/stages/speculative_stage.h"
#include "sim/stages/verify_hook.h"

namespace zl {

DecodeBenchResult run_decode_bench(const RunConfig& cfg, int64_t prompt_tokens, int64_t repeats,
                                   const std::vector<std::string>& variants) {
  configure_runtime(cfg.train.threads);
  ModelConfig mc = model_config(cfg, cfg.data.tokenizer == "byte" ? 257 : cfg.data.vocab_size);
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  Transformer model = make_model("baseline", mc);
  model->to(resolve_device(cfg.train.device));
  const int64_t target = static_cast<int64_t>(cfg.verify.params_ratio * model->parameter_count());
  Verifier verifier(VerifierConfig::sized_for(mc.vocab, cfg.verify.window, target));
  verifier->eval();

  auto prompt_tensor = torch::randint(mc.vocab, {cfg.decode.batch, prompt_tokens}, torch::kInt);
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t i = 0; i < cfg.decode.batch; ++i) {
    auto row = prompt_tensor[i].contiguous();
    prompts.emplace_back(row.data_ptr<int32_t>(), row.data_ptr<int32_t>() + prompt_tokens);
  }
  DecodeOptions opt = decode_options(cfg.decode, /*eos_id=*/-1);

  DecodeBenchResult r;
  for (int64_t rep = 0; rep <= repeats; ++rep) {  // rep 0 warms up
    auto gen = make_generator(17 + rep);
    DecodeOutput base = decode(model, prompts, opt, gen);
    if (rep > 0) r.baseline_tok_s = std::max(r.baseline_tok_s, base.kept_tokens / base.seconds);

    VerifyHook hook([&](const torch::Tensor& w) { return verifier->score(w); }, cfg.verify.window,
                    VerifyPolicy::from(cfg.verify, cfg.decode.temperature), 31 + rep, /*log=*/false);
    DecodeOutput v = decode(model, prompts, opt, gen, &hook);
    if (rep > 0 && v.kept_tokens / v.seconds > r.sfvl_tok_s) {
      r.sfvl_tok_s = v.kept_tokens / v.seconds;
      r.sfvl_checks_per_token = static_cast<double>(hook.checks) / v.kept_tokens;
      r.verifier_time_share = hook.seconds / v.seconds;
    }
  }
  for (const std::string& name : variants) {
    RunConfig vc = cfg;
    vc.variant = name;
    const bool speculative = name == "speculative", oet = name == "oet";
    torch::manual_seed(static_cast<uint64_t>(cfg.seed));
    Transformer m = make_model(trained_family(vc), model_config(vc, mc.vocab));
    fit_latent_for_run(vc, m);  // latent_kv svd: the random baseline, factorised
    m->to(resolve_device(cfg.train.device));
    Transformer draft{nullptr};  // speculative: a random draft of the study's draft shape
    if (speculative) {
      ModelConfig dc =
          draft_config(vc, mc.vocab, static_cast<int64_t>(cfg.speculative.draft_ratio * m->parameter_count())).model;
      dc.vocab = mc.vocab;
      draft = make_model("baseline", dc);
      draft->to(resolve_device(cfg.train.device));
    }
    std::optional<SyntheticOet> arm;
    if (oet) arm.emplace(synthetic_oet(m->cfg, cfg.oet));
    VariantDecodeSpeed speed{name};
    DecodeOptions fast = opt, reference = opt;
    fast.fast_step = true;
    reference.fast_step = false;
    for (int64_t rep = 0; rep <= repeats; ++rep) {  // rep 0 warms up; the two steps alternate
      for (int k = 0; k < 2; ++k) {
        const bool on_fast = (rep + k) % 2 == 0;
        auto gen = make_generator(17 + rep);
        SpeculativeStats stats;
        const DecodeOptions& o = on_fast ? fast : reference;
        DecodeOutput out = speculative ? speculative_decode(m, draft, prompts, o, cfg.speculative.lookahead, gen, stats)
                           : oet       ? oet_decode(m, arm->trigger, arm->table, prompts, o, gen)
                                       : decode(m, prompts, o, gen);
        if (on_fast) speed.fast_step = out.fast_step;
        double& best = on_fast ? speed.fast_tok_s : speed.reference_tok_s;
        if (rep > 0) best = std::max(best, out.kept_tokens / out.seconds);
      }
    }
    r.variants.push_back(speed);
  }
  // Per check: one verifier pass and one model step (the token it checks),
  // at the mean context of the decode.
  const double lm = total_flops(flops_per_token(mc, prompt_tokens + cfg.decode.max_new_tokens / 2));
  const double ver = verifier->cfg.flops_per_check();
  r.verifier_flops_share = ver / (lm + ver);
  return r;
}

}  // namespace zl
