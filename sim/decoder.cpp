#include "sim/decoder.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "models/decode_step.h"

namespace zl {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Batch {
  std::vector<std::vector<int32_t>> seqs;  // prompt + kept tokens
  std::vector<size_t> prompt_len;
  std::vector<bool> active;
  std::vector<std::vector<Clock::time_point>> token_times;
};

// Right-padded prefill: every prompt is written at positions 0..len-1; the
// pad slots past a sequence's length are never visible (causal) and are
// overwritten by its next tokens. Returns each sequence's last-token logits.
torch::Tensor prefill(Transformer& model, KVCache& cache, const Batch& b, const torch::Device& dev) {
  // (An evicting cache is given each prompt's length, so that it does not
  // take the padding for tokens: models/transformer.h.)
  const int64_t B = b.seqs.size();
  int64_t T = 0;
  for (const auto& s : b.seqs) T = std::max<int64_t>(T, s.size());
  auto tokens = torch::zeros({B, T}, torch::kLong);
  auto acc = tokens.accessor<int64_t, 2>();
  std::vector<int64_t> lens(B);
  for (int64_t i = 0; i < B; ++i) {
    for (size_t j = 0; j < b.seqs[i].size(); ++j) acc[i][j] = b.seqs[i][j];
    lens[i] = b.seqs[i].size();
  }
  auto logits = model->forward(tokens.to(dev), cache, lens);  // [B,T,V]
  auto len_t = torch::tensor(lens, torch::kLong).to(dev);
  cache.lengths.copy_(len_t);
  return logits.index({torch::arange(B, len_t.options()), len_t - 1});  // [B,V]
}

// What the caches held over a decode (DecodeOutput::kv_bytes_per_token, _peak).
struct HeldBytes {
  double held = 0, fed = 0;
  int64_t peak_tokens = 0, bytes_per_token = 0;
  // Sequences whose `running` is set, after a call that fed them.
  void add(const KVCache& cache, const std::vector<bool>& running) {
    bytes_per_token = cache.bytes_per_token();
    // Read in place on the CPU (a decode step there is ~200 µs; a tensor call per sequence would show).
    auto len = cache.lengths.is_cpu() ? cache.lengths : cache.lengths.to(torch::kCPU);
    auto kept = !cache.evicting() ? len : cache.held.is_cpu() ? cache.held : cache.held.to(torch::kCPU);
    len = len.contiguous();
    kept = kept.contiguous();
    const int64_t *lp = len.data_ptr<int64_t>(), *kp = kept.data_ptr<int64_t>();
    for (size_t b = 0; b < running.size(); ++b) {
      if (!running[b]) continue;
      const int64_t n = lp[b], h = kp[b];
      held += h;
      fed += n;
      // While a token attends, an evicting cache holds it beside its budget.
      peak_tokens = std::max(peak_tokens, cache.evicting() ? std::min(n, cache.eviction.budget + 1) : n);
    }
  }
};

}  // namespace

DecodeOptions decode_options(const DecodeConfig& d, int32_t eos_id) {
  DecodeOptions opt;
  opt.sampling = {d.temperature, d.top_k, d.top_p};
  opt.max_new_tokens = d.max_new_tokens;
  opt.batch = d.batch;
  opt.eos_id = eos_id;
  opt.fast_step = d.step == "fast";
  return opt;
}

size_t kept_prompt_tokens(size_t prompt_size, int64_t context, const DecodeOptions& opt) {
  return std::min<size_t>(prompt_size, std::max<int64_t>(1, context - opt.max_new_tokens));
}

RequestTiming request_timing(Clock::time_point start, const std::vector<Clock::time_point>& times) {
  RequestTiming t;
  t.tokens = times.size();
  if (times.empty()) return t;
  t.ttft_ms = ms_between(start, times.front());
  t.e2e_ms = ms_between(start, times.back());
  t.tpot_ms = times.size() > 1 ? (t.e2e_ms - t.ttft_ms) / (times.size() - 1) : 0.0;
  for (size_t j = 1; j < times.size(); ++j) t.itl_ms.push_back(ms_between(times[j - 1], times[j]));
  return t;
}

DecodeOutput decode(Transformer& model, const std::vector<std::vector<int32_t>>& prompts, const DecodeOptions& opt,
                    at::Generator& gen, DecodeHook* hook) {
  torch::NoGradGuard no_grad;
  model->eval();
  DecodeOutput out;
  std::optional<DecodeStep> fast;
  if (opt.fast_step && DecodeStep::supports(model, &out.step_note)) fast.emplace(model);
  out.fast_step = fast.has_value();
  const auto dev = model->wte->weight.device();
  out.continuations.resize(prompts.size());
  out.timings.resize(prompts.size());
  const auto start_all = Clock::now();
  HeldBytes bytes;

  for (size_t first = 0; first < prompts.size(); first += opt.batch) {
    const size_t B = std::min<size_t>(opt.batch, prompts.size() - first);
    Batch b;
    for (size_t i = 0; i < B; ++i) {
      const auto& p = prompts[first + i];
      const size_t keep = kept_prompt_tokens(p.size(), model->cfg.context, opt);
      b.seqs.emplace_back(p.end() - keep, p.end());
      b.prompt_len.push_back(keep);
    }
    b.active.assign(B, true);
    b.token_times.resize(B);
    if (hook) hook->begin_batch(B);

    auto cache = model->make_cache(B, 0, opt.eviction);
    const auto start = Clock::now();
    if (hook) hook->before_prefill(b.seqs);  // timed: its work is the variant's cost
    auto logits = fast ? fast->prefill(b.seqs, cache) : prefill(model, cache, b, dev);  // [B,V]
    bytes.add(cache, b.active);
    std::vector<double> temperature(B, opt.sampling.temperature);

    int64_t steps = 0;
    while (steps < opt.max_new_tokens * 16) {  // a bound even for a hook that never accepts
      ++steps;
      // One sampling call per distinct temperature (re-sampled rows differ).
      auto next = sample_next(logits, opt.sampling, gen);  // [B]
      for (size_t i = 0; i < B; ++i) {
        if (temperature[i] == opt.sampling.temperature) continue;
        SamplingOptions hot = opt.sampling;
        hot.temperature = temperature[i];
        next[i] = sample_next(logits.narrow(0, i, 1), hot, gen)[0];
      }
      auto ids = next.to(torch::kCPU).contiguous();
      const int64_t* id = ids.data_ptr<int64_t>();
      auto now = Clock::now();
      for (size_t i = 0; i < B; ++i) {
        if (!b.active[i]) continue;
        b.seqs[i].push_back(static_cast<int32_t>(id[i]));
        b.token_times[i].push_back(now);
      }

      std::vector<int64_t> drop(B, 0);
      if (hook) {
        auto verdict = hook->review(b.seqs, b.active);
        drop = verdict.drop;
        temperature = verdict.temperature;
      }
      for (size_t i = 0; i < B; ++i) {
        if (!b.active[i]) continue;
        if (drop[i] > 0) {
          int64_t produced = b.seqs[i].size() - b.prompt_len[i];
          int64_t d = std::min(drop[i], produced);
          b.seqs[i].resize(b.seqs[i].size() - d);
          b.token_times[i].resize(b.token_times[i].size() - d);
          // The cache holds every token but the newest; keep all that remain
          // except the last one, which is fed again below.
          cache.truncate(i, static_cast<int64_t>(b.seqs[i].size()) - 1);
          continue;
        }
        temperature[i] = opt.sampling.temperature;
        int64_t produced = b.seqs[i].size() - b.prompt_len[i];
        if (b.seqs[i].back() == opt.eos_id || produced >= opt.max_new_tokens) b.active[i] = false;
      }
      if (std::none_of(b.active.begin(), b.active.end(), [](bool a) { return a; })) break;

      // Feed each sequence's newest token. Finished ones feed a dummy that is
      // never read and is rolled back at once, so that their cache does not
      // grow while re-sampling neighbours take extra steps.
      std::vector<int64_t> newest(B), finished(B);
      for (size_t i = 0; i < B; ++i) {
        newest[i] = b.seqs[i].back();
        finished[i] = !b.active[i];
      }
      if (fast) {
        logits = fast->forward(newest, cache);  // [B,V]
      } else {
        auto feed = torch::tensor(newest, torch::kLong).view({static_cast<int64_t>(B), 1});
        logits = model->forward(feed.to(dev), cache).select(1, 0);  // [B,V]
      }
      bytes.add(cache, b.active);
      // An evicting cache drops a held slot too. Its dummy, always re-fed at
      // the same text position, would otherwise pile up in H2O's recent
      // window until no token could be evicted; this way a finished
      // sequence's dummies evict at most once, and its cache (never read
      // again) still costs a row per step, as the baseline's does.
      if (cache.lengths.is_cpu()) {  // no tensor round trip on the CPU, where a step is ~200 µs
        int64_t* len = cache.lengths.data_ptr<int64_t>();
        int64_t* held = cache.evicting() ? cache.held.data_ptr<int64_t>() : nullptr;
        for (size_t i = 0; i < B; ++i) {
          len[i] -= finished[i];
          if (held) held[i] -= finished[i];
        }
      } else {
        auto done = torch::tensor(finished, torch::kLong).to(dev);
        cache.lengths -= done;
        if (cache.evicting()) cache.held -= done;
      }
    }

    for (size_t i = 0; i < B; ++i)
      out.record(first + i, b.seqs[i].begin() + b.prompt_len[i], b.seqs[i].end(), opt.eos_id, start, b.token_times[i]);
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start_all).count();
  out.kv_bytes_per_token = opt.eviction.on() && bytes.fed > 0 ? bytes.bytes_per_token * (bytes.held / bytes.fed)
                                                               : static_cast<double>(bytes.bytes_per_token);
  out.kv_bytes_peak = bytes.peak_tokens * bytes.bytes_per_token;
  return out;
}

}  // namespace zl
