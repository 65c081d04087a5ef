#include "sim/stages/verifier_training.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "datasets/cache_file.h"
#include "models/sampling.h"
#include "sim/torch_bytes.h"

namespace zl {
namespace fs = std::filesystem;
using torch::indexing::Slice;

namespace {

// Replaces the last `d` tokens of rows `rows` of `win` ([N,W]) by LM samples:
// each replacement is drawn given the real prefix and the replacements before it.
void corrupt_with_lm(Transformer& lm, torch::Tensor& win, const torch::Tensor& prefix, const torch::Tensor& rows,
                     int64_t d, double temperature, at::Generator& gen) {
  // prefix [n,P]: the real tokens before the replaced span.
  const auto dev = lm->wte->weight.device();
  auto ctx = prefix;
  for (int64_t j = 0; j < d; ++j) {
    auto logits = lm->forward(ctx.to(dev));                                                              // [n,P+j,V]
    auto last = logits.select(1, logits.size(1) - 1).to(torch::kCPU);                                   // [n,V]
    auto next = sample_next(last, SamplingOptions{temperature, 0, 1.0}, gen);                           // [n]
    const int64_t col = win.size(1) - d + j;
    win.index_put_({rows, col}, next);
    ctx = torch::cat({ctx, next.unsqueeze(1)}, 1);
  }
}

}  // namespace

VerifierWindows make_verifier_windows(Transformer& lm, const torch::Tensor& stream, int64_t count, int64_t window,
                                      int64_t lm_context, double temperature, uint64_t seed) {
  torch::NoGradGuard no_grad;
  lm->eval();
  auto gen = make_generator(seed);
  auto s = stream.to(torch::kLong);
  const int64_t P = lm_context;  // real tokens an LM sample sees
  TORCH_CHECK(s.numel() > P + window + 2, "token stream too short for verifier windows");
  // A window ends at offset e: tokens (e-W, e]; its prefix is (e-W-P, e-W].
  auto ends = torch::randint(P + window, s.numel(), {count}, gen, torch::kLong);                   // [N]
  auto cols = torch::arange(-window + 1, 1, torch::kLong);                                          // [W]
  auto win = s.index({ends.unsqueeze(1) + cols.unsqueeze(0)});                                      // [N,W]
  auto original = win.clone();
  auto kind = torch::arange(count, torch::kLong) % 4;            // 0,1 real; 2 LM; 3 random
  auto drop = torch::randint(1, 3, {count}, gen, torch::kLong);  // 1 or 2 tokens replaced

  for (int64_t d = 1; d <= 2; ++d) {
    auto lm_rows = ((kind == 2) & (drop == d)).nonzero().squeeze(1);
    for (int64_t first = 0; first < lm_rows.numel(); first += 512) {
      auto rows = lm_rows.narrow(0, first, std::min<int64_t>(512, lm_rows.numel() - first));
      auto pcols = torch::arange(-P - d + 1, -d + 1, torch::kLong);                   // [P]
      auto prefix = s.index({ends.index({rows}).unsqueeze(1) + pcols.unsqueeze(0)});  // [n,P]
      corrupt_with_lm(lm, win, prefix, rows, d, temperature, gen);
    }
    auto rnd_rows = ((kind == 3) & (drop == d)).nonzero().squeeze(1);
    auto vocab = lm->cfg.vocab;
    for (int64_t j = 0; j < d; ++j)
      win.index_put_({rnd_rows, window - d + j}, torch::randint(vocab, {rnd_rows.numel()}, gen, torch::kLong));
  }
  auto labels = (win == original).all(1).to(torch::kFloat);  // an unchanged window is real
  return {win, labels};
}

double auroc(const torch::Tensor& scores, const torch::Tensor& labels) {
  auto s = scores.to(torch::kDouble).contiguous(), y = labels.to(torch::kDouble).contiguous();
  const int64_t n = s.numel();
  auto order = s.argsort();
  auto ranks = torch::empty({n}, torch::kDouble);
  auto sorted = s.index({order});
  const double* sv = sorted.data_ptr<double>();
  const int64_t* ord = order.data_ptr<int64_t>();
  double* r = ranks.data_ptr<double>();
  for (int64_t i = 0; i < n;) {  // average ranks over ties
    int64_t j = i;
    while (j + 1 < n && sv[j + 1] == sv[i]) ++j;
    for (int64_t k = i; k <= j; ++k) r[ord[k]] = 0.5 * (i + j) + 1;
    i = j + 1;
  }
  double pos = y.sum().item<double>(), neg = n - pos;
  if (pos == 0 || neg == 0) return NAN;
  double rank_sum = (ranks * y).sum().item<double>();
  return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);  // Mann-Whitney U / (pos·neg)
}

double calibration_error(const torch::Tensor& scores, const torch::Tensor& labels, int bins) {
  auto s = scores.to(torch::kDouble), y = labels.to(torch::kDouble);
  auto bin = (s * bins).floor().clamp(0, bins - 1).to(torch::kLong);
  double ece = 0;
  const double n = s.numel();
  for (int b = 0; b < bins; ++b) {
    auto in = bin == b;
    double count = in.sum().item<double>();
    if (count == 0) continue;
    double conf = s.masked_select(in).mean().item<double>(), acc = y.masked_select(in).mean().item<double>();
    ece += count / n * std::abs(conf - acc);
  }
  return ece;
}

Verifier train_verifier(const VerifierConfig& vc, const VerifierWindows& w, int64_t steps, uint64_t seed) {
  torch::manual_seed(seed * 31 + 7);
  Verifier v(vc);
  torch::optim::AdamW opt(v->parameters(), torch::optim::AdamWOptions(3e-3).weight_decay(0.01));
  v->train();
  auto gen = make_generator(seed * 1000 + 2);
  for (int64_t step = 0; step < steps; ++step) {
    auto idx = torch::randint(w.tokens.size(0), {256}, gen, torch::kLong);
    auto loss = torch::binary_cross_entropy_with_logits(v->forward(w.tokens.index({idx})), w.labels.index({idx}));
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  v->eval();
  return v;
}

namespace {

void evaluate(Verifier& v, const VerifierWindows& w, double& auc, double& ece) {
  torch::NoGradGuard no_grad;
  v->eval();
  auto scores = v->confidence(w.tokens);
  auc = auroc(scores, w.labels);
  ece = calibration_error(scores, w.labels);
}

std::string verifier_file(const RunConfig& cfg, const std::string& dir, int64_t vocab) {
  std::ostringstream key;
  key << "window=" << cfg.verify.window << " ratio=" << cfg.verify.params_ratio << " steps=" << cfg.verify.train_steps
      << " temperature=" << cfg.verify.negative_temperature << " seed=" << cfg.seed << " vocab=" << vocab;
  return (fs::path(dir) / ("verifier-" + hash_hex(key.str()) + ".pt")).string();
}

}  // namespace

Verifier load_or_train_verifier(const RunConfig& cfg, Transformer& lm, const Dataset& ds,
                                const std::string& checkpoint_dir, VerifierReport& report) {
  const int64_t vocab = lm->cfg.vocab, W = cfg.verify.window;
  const auto target = static_cast<int64_t>(cfg.verify.params_ratio * lm->parameter_count());
  Verifier v(VerifierConfig::sized_for(vocab, W, target));
  report.params = v->cfg.parameter_count();
  const int64_t P = std::min<int64_t>(32, lm->cfg.context - 2);  // prefix + 2 replacements fit the context
  const auto T = cfg.verify.negative_temperature;
  const uint64_t seed = static_cast<uint64_t>(cfg.seed);

  const std::string file = verifier_file(cfg, checkpoint_dir, vocab);
  auto load = [&](const std::string& bytes) {
    try {
      torch_load_bytes(v, bytes);
    } catch (const c10::Error&) {  // its message is a backtrace: say what it means
      throw std::runtime_error("cannot load the verifier: corrupt or another shape");
    }
    return true;
  };
  if (!read_cache_file(file, load)) {
    auto start = std::chrono::steady_clock::now();
    auto windows = make_verifier_windows(lm, ds.train.tokens, 256 * 32, W, P, T, seed * 1000 + 1);
    Verifier fresh = train_verifier(v->cfg, windows, cfg.verify.train_steps, seed);
    report.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    publish_cache_file(file, torch_bytes(fresh));  // a concurrent shard sees all or nothing
    v = fresh;
  }

  evaluate(v, make_verifier_windows(lm, ds.val.tokens, 4096, W, P, T, 99991), report.auroc, report.ece);
  if (!cfg.data.eval_corpus.empty() && cfg.data.eval_corpus != cfg.data.corpus) {
    Dataset ood = prepare_data(cfg, cfg.data.eval_corpus);
    evaluate(v, make_verifier_windows(lm, ood.val.tokens, 4096, W, P, T, 99992), report.auroc_ood, report.ece_ood);
  }
  v->eval();
  return v;
}

void record_verifier_report(const VerifierReport& rep, int64_t lm_params, std::map<std::string, double>& m) {
  m["verifier_params"] = static_cast<double>(rep.params);
  m["verifier_params_ratio"] = static_cast<double>(rep.params) / lm_params;
  m["verifier_auroc"] = rep.auroc;
  m["verifier_ece"] = rep.ece;
  m["verifier_auroc_ood"] = rep.auroc_ood;
  m["verifier_ece_ood"] = rep.ece_ood;
}

}  // namespace zl
