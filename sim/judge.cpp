#include "sim/judge.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/factory.h"
#include "sim/model_options.h"
#include "sim/rng_scope.h"
#include "sim/trainer.h"

namespace zl {

RunConfig judge_config(const RunConfig& cfg) {
  RunConfig j = cfg;
  j.variant = "baseline";
  j.seed = kJudgeSeed;  // one judge per corpus and tokenizer, whatever the run's seed
  j.model.layers = cfg.judge.layers;
  j.model.heads = cfg.judge.heads;
  j.model.dim = cfg.judge.dim;
  j.train.steps = cfg.judge.steps;
  j.train.lr = cfg.judge.lr;
  j.train.warmup = std::max<int64_t>(1, cfg.judge.steps / 10);
  j.train.precision = cfg.judge.precision;
  j.train.branch = 0;  // independent: trained from scratch, never from a baseline's trunk
  j.train.eval_every = std::max<int64_t>(1, cfg.judge.steps / 4);
  j.train.checkpoint_every = j.train.eval_every;
  return j;
}

void check_judge_size(const RunConfig& cfg, int64_t vocab) {
  GlobalRngScope keep;
  torch::NoGradGuard no_grad;
  const RunConfig j = judge_config(cfg);
  const int64_t params = make_model(trained_family(j), model_config(j, vocab))->parameter_count();
  // The language model judged, without the variant's module.
  const int64_t model_params = make_model("baseline", model_config(as_baseline(cfg), vocab))->parameter_count();
  if (params < kJudgeMinRatio * model_params)
    throw ConfigError("judge.dim, judge.layers: the judge would have " + std::to_string(params) +
                      " parameters, fewer than the model's " + std::to_string(model_params) +
                      "; make it wider or deeper (a judge is at least the model's size and trained longer)");
}

Judge load_or_train_judge(const RunConfig& cfg, const Dataset& data, const torch::Device& device) {
  GlobalRngScope keep;
  const RunConfig j = judge_config(cfg);
  torch::manual_seed(static_cast<uint64_t>(j.seed));
  Judge out;
  out.model = make_model(trained_family(j), model_config(j, data.tokenizer->vocab_size()));
  TrainOutcome t = train_model(j, identify(j), out.model, data, device);
  out.val_loss = t.val_loss;
  out.params = out.model->parameter_count();
  out.reused = t.reused;
  out.model->eval();
  return out;
}

std::vector<double> mean_nll(Transformer& model, const std::vector<std::vector<int32_t>>& prefixes,
                             const std::vector<std::vector<int32_t>>& spans) {
  torch::NoGradGuard no_grad;
  model->eval();
  const auto dev = model->wte->weight.device();
  const int64_t C = model->cfg.context;
  std::vector<double> out(prefixes.size(), NAN);
  constexpr size_t kRows = 64;  // sequences per forward pass
  for (size_t first = 0; first < prefixes.size(); first += kRows) {
    const size_t n = std::min(kRows, prefixes.size() - first);
    std::vector<std::vector<int32_t>> seqs(n);
    int64_t T = 1;
    for (size_t i = 0; i < n; ++i) {
      seqs[i] = prefixes[first + i];
      seqs[i].insert(seqs[i].end(), spans[first + i].begin(), spans[first + i].end());
      if (static_cast<int64_t>(seqs[i].size()) > C) seqs[i].erase(seqs[i].begin(), seqs[i].end() - C);
      T = std::max<int64_t>(T, seqs[i].size());
    }
    auto tokens = torch::zeros({static_cast<int64_t>(n), T}, torch::kLong);  // [n,T], right-padded
    auto acc = tokens.accessor<int64_t, 2>();
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < seqs[i].size(); ++j) acc[i][j] = seqs[i][j];
    auto logp = torch::log_softmax(model->forward(tokens.to(dev)).to(torch::kFloat), -1).to(torch::kCPU);  // [n,T,V]
    auto lp = logp.accessor<float, 3>();
    for (size_t i = 0; i < n; ++i) {
      const int64_t len = seqs[i].size();
      // A span is scored from its second token on when the prefix was cut away entirely.
      const int64_t d = std::min<int64_t>(spans[first + i].size(), len - 1);
      if (d <= 0) continue;
      double sum = 0;
      for (int64_t j = len - d; j < len; ++j) sum -= lp[i][j - 1][seqs[i][j]];
      out[first + i] = sum / d;
    }
  }
  return out;
}

}  // namespace zl
