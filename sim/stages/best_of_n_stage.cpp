#include "sim/stages/best_of_n_stage.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "sim/stages/verifier_training.h"

namespace zl {

namespace {

using Clock = std::chrono::steady_clock;

// Scores every token decode() proposes as sfvl's hook checks it (the window
// of its last W tokens, left-padded with the first; the eos that ends a
// sample included), accumulating per sample, and notes when each batch's
// prefill starts. It never drops a token, so the decode is the plain one.
class ScoreHook : public DecodeHook {
 public:
  ScoreHook(const WindowScorer& scorer, int64_t window, size_t samples, double temperature)
      : scorer_(scorer), window_(window), temperature_(temperature), total(samples, 0), least(samples, INFINITY),
        count(samples, 0), start(samples) {}

  void begin_batch(int64_t batch) override {
    first_ += batch_;
    batch_ = batch;
  }
  void before_prefill(const std::vector<std::vector<int32_t>>& prompts) override {
    const auto now = Clock::now();
    for (int64_t i = 0; i < batch_; ++i) start[first_ + i] = now;
  }

  Verdict review(const std::vector<std::vector<int32_t>>& sequences, const std::vector<bool>& active) override {
    const auto begin = Clock::now();
    const int64_t B = sequences.size(), W = window_;
    Verdict v{std::vector<int64_t>(B, 0), std::vector<double>(B, temperature_)};
    std::vector<int64_t> rows, windows;
    for (int64_t i = 0; i < B; ++i) {
      if (!active[i]) continue;
      rows.push_back(i);
      const auto& s = sequences[i];
      for (int64_t k = W; k > 0; --k) windows.push_back(s[std::max<int64_t>(0, static_cast<int64_t>(s.size()) - k)]);
    }
    if (rows.empty()) return v;
    torch::NoGradGuard no_grad;
    auto tokens = torch::from_blob(windows.data(), {static_cast<int64_t>(rows.size()), W}, torch::kLong);  // [n,W]
    auto conf = scorer_(tokens).to(torch::kCPU, torch::kFloat).contiguous();                                // [n]
    const float* c = conf.data_ptr<float>();
    for (size_t r = 0; r < rows.size(); ++r) {
      const size_t j = first_ + rows[r];
      total[j] += c[r];
      least[j] = std::min<double>(least[j], c[r]);
      ++count[j];
    }
    checks += rows.size();
    seconds += std::chrono::duration<double>(Clock::now() - begin).count();
    return v;
  }

  const WindowScorer& scorer_;
  int64_t window_;
  double temperature_;
  int64_t first_ = 0, batch_ = 0;
  std::vector<double> total, least;  // per sample: sum and least of its windows' confidences
  std::vector<int64_t> count;
  std::vector<Clock::time_point> start;  // per sample: its batch's start
  int64_t checks = 0;
  double seconds = 0;
};

}  // namespace

DecodeOutput best_of_n_decode(Transformer& model, const std::vector<std::vector<int32_t>>& prompts,
                              const DecodeOptions& opt, int64_t n, const WindowScorer& scorer, int64_t window,
                              bool use_min, at::Generator& gen, BestOfNStats* stats) {
  // n copies of each prompt side by side: decode() takes them in batches of
  // decode.batch rows, so a prompt's samples share a batch when n divides it.
  std::vector<std::vector<int32_t>> samples;
  for (const auto& p : prompts)
    for (int64_t s = 0; s < n; ++s) samples.push_back(p);
  ScoreHook hook(scorer, window, samples.size(), opt.sampling.temperature);
  DecodeOutput all = decode(model, samples, opt, gen, &hook);
  if (stats) {
    stats->checks += hook.checks;
    stats->score_seconds += hook.seconds;
  }

  DecodeOutput out;
  out.continuations.resize(prompts.size());
  out.timings.resize(prompts.size());
  out.seconds = all.seconds;
  out.kv_bytes_per_token = all.kv_bytes_per_token;
  out.kv_bytes_peak = all.kv_bytes_peak;
  out.fast_step = all.fast_step;
  out.step_note = all.step_note;
  for (size_t i = 0; i < prompts.size(); ++i) {
    size_t best = i * n;
    double best_score = -INFINITY;
    for (int64_t s = 0; s < n; ++s) {
      const size_t j = i * n + s;
      const double score = hook.count[j] == 0 ? 0.0 : use_min ? hook.least[j] : hook.total[j] / hook.count[j];
      if (score > best_score) best = j, best_score = score;
    }
    const auto& cont = all.continuations[best];
    if (n == 1) {  // nothing to choose: the tokens stream as decoded
      out.continuations[i] = cont;
      out.kept_tokens += cont.size();
      out.timings[i] = all.timings[best];
      continue;
    }
    // The kept sample's tokens all arrive when the last of the n samples ends.
    Clock::time_point begin = Clock::time_point::max(), done = Clock::time_point::min();
    for (int64_t s = 0; s < n; ++s) {
      const size_t j = i * n + s;
      const auto end = hook.start[j] + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double, std::milli>(all.timings[j].e2e_ms));
      begin = std::min(begin, hook.start[j]);
      done = std::max(done, end);
    }
    out.record(i, cont.begin(), cont.end(), opt.eos_id, begin, std::vector<Clock::time_point>(cont.size(), done));
  }
  return out;
}

namespace {

class BestOfNStage : public VariantStage {
 public:
  void prepare(const StageContext& ctx, RunRecord& r) override {
    VerifierReport rep;
    verifier_ = load_or_train_verifier(ctx.cfg, ctx.model, ctx.data, ctx.checkpoint_dir, rep);
    record_verifier_report(rep, ctx.model->parameter_count(), r.metrics);
    r.metrics["best_of_n"] = static_cast<double>(ctx.cfg.control.best_of_n);
  }

  Serving serving(const StageContext& ctx, const DecodeOptions& opt, uint64_t seed) override {
    return {opt, nullptr, "best-of-n decodes n candidates per prompt in a loop of its own"};
  }

  DecodeOutput decode(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts,
                      const DecodeOptions& opt, at::Generator& gen, bool logged) override {
    Verifier v = verifier_;
    WindowScorer scorer = [v](const torch::Tensor& w) mutable { return v->score(w); };
    BestOfNStats stats;
    DecodeOutput out = best_of_n_decode(ctx.model, prompts, opt, ctx.cfg.control.best_of_n, scorer, v->cfg.window,
                                        ctx.cfg.control.best_score == "min", gen, &stats);
    if (logged) {
      quality_ = stats;
    } else {
      score_seconds_ += stats.score_seconds;
      decode_seconds_ += out.seconds;
    }
    return out;
  }

  void add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) override {
    per_module["verifier"] = verifier_->cfg.flops_per_check();  // one check per generated token, as in sfvl
  }

  void finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) override {
    auto& m = r.metrics;
    const double kept = static_cast<double>(quality.kept_tokens);
    m["checks_per_token"] = kept > 0 ? quality_.checks / kept : NAN;
    m["verifier_flops_share"] = m["flops_verifier"] / m["flops_per_token"];
  }

  void add_timing(const StageContext& ctx, RunRecord& r) override {
    r.metrics["verifier_time_share"] = decode_seconds_ > 0 ? score_seconds_ / decode_seconds_ : NAN;
  }

 private:
  Verifier verifier_{nullptr};
  BestOfNStats quality_;
  double score_seconds_ = 0, decode_seconds_ = 0;
};

}  // namespace

std::unique_ptr<VariantStage> make_best_of_n_stage(const RunConfig& cfg) { return std::make_unique<BestOfNStage>(); }

}  // namespace zl
