#include "sim/speculative.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "models/decode_step.h"

namespace zl {
namespace {

using Clock = std::chrono::steady_clock;

// n uniforms in [0, 1) from `gen`, in one call.
torch::Tensor uniforms(int64_t n, at::Generator& gen) { return torch::rand({n}, gen, torch::kFloat); }

// A model call's logits as CPU float rows [B,T,V] (the fast step's already are).
torch::Tensor cpu_rows(const torch::Tensor& logits) { return logits.to(torch::kCPU, torch::kFloat).contiguous(); }

// Rows right-padded with 0 to T tokens each.
std::vector<std::vector<int64_t>> padded(std::vector<std::vector<int64_t>> rows, int64_t T) {
  for (auto& r : rows) r.resize(T, 0);
  return rows;
}

torch::Tensor pack(const std::vector<std::vector<int64_t>>& rows, int64_t T) {
  auto t = torch::zeros({static_cast<int64_t>(rows.size()), T}, torch::kLong);
  auto a = t.accessor<int64_t, 2>();
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j) a[i][j] = rows[i][j];
  return t;
}

// One call of a model on every sequence's rows, padded to T tokens: on the
// fast step when there is one, else through the modules. Logits [B,T,V].
torch::Tensor run(Transformer& m, std::optional<DecodeStep>& fast, KVCache& cache,
                  const std::vector<std::vector<int64_t>>& rows, int64_t T, bool logits = true) {
  if (fast) return fast->extend(padded(rows, T), cache, logits);
  return m->forward(pack(rows, T).to(m->wte->weight.device()), cache);
}

}  // namespace

std::vector<int64_t> accept_drafts(const float* p, const float* q, int64_t V, const std::vector<int64_t>& drafted,
                                   const float* u) {
  std::vector<int64_t> kept;
  const int64_t G = drafted.size();
  for (int64_t j = 0; j < G; ++j) {
    const int64_t x = drafted[j];
    const double px = p[j * V + x], qx = q[j * V + x];
    if (qx > 0 && u[j] < std::min(1.0, px / qx)) {
      kept.push_back(x);
      continue;
    }
    // Rejected: draw from the residual norm(max(0, p − q)).
    std::vector<float> residual(V);
    double mass = 0;
    for (int64_t v = 0; v < V; ++v) mass += residual[v] = std::max(0.0f, p[j * V + v] - q[j * V + v]);
    if (!(mass > 0)) {
      kept.push_back(inverse_cdf(p + j * V, V, u[G]));
      return kept;
    }
    for (float& r : residual) r = static_cast<float>(r / mass);
    kept.push_back(inverse_cdf(residual.data(), V, u[G]));
    return kept;
  }
  kept.push_back(inverse_cdf(p + G * V, V, u[G]));  // all kept: one more from the model
  return kept;
}

std::vector<int64_t> accept_drafts(const torch::Tensor& p, const torch::Tensor& q, const std::vector<int64_t>& drafted,
                                   at::Generator& gen) {
  const auto pc = p.to(torch::kCPU, torch::kFloat).contiguous(), qc = q.to(torch::kCPU, torch::kFloat).contiguous();
  const auto u = uniforms(static_cast<int64_t>(drafted.size()) + 1, gen);
  return accept_drafts(pc.data_ptr<float>(), qc.data_ptr<float>(), p.size(1), drafted, u.data_ptr<float>());
}

DecodeOutput speculative_decode(Transformer& model, Transformer& draft, const std::vector<std::vector<int32_t>>& prompts,
                                const DecodeOptions& opt, int64_t lookahead, at::Generator& gen,
                                SpeculativeStats& stats) {
  torch::NoGradGuard no_grad;
  model->eval();
  draft->eval();
  const auto dev = model->wte->weight.device();
  const int64_t C = model->cfg.context, V = model->cfg.vocab;
  DecodeOutput out;
  // The draft's step shares the model's team (one team per process).
  std::optional<DecodeStep> fast, draft_fast;
  if (opt.fast_step && DecodeStep::supports(model, &out.step_note) && DecodeStep::supports(draft, &out.step_note)) {
    fast.emplace(model);
    draft_fast.emplace(draft, *fast);
  }
  out.fast_step = fast.has_value();
  out.continuations.resize(prompts.size());
  out.timings.resize(prompts.size());
  const auto start_all = Clock::now();

  for (size_t first = 0; first < prompts.size(); first += opt.batch) {
    const int64_t B = std::min<size_t>(opt.batch, prompts.size() - first);
    std::vector<std::vector<int64_t>> seqs(B);
    std::vector<int64_t> prompt_len(B);
    std::vector<bool> active(B, true);
    std::vector<std::vector<Clock::time_point>> times(B);
    for (int64_t i = 0; i < B; ++i) {
      const auto& p = prompts[first + i];
      const size_t keep = kept_prompt_tokens(p.size(), C, opt);
      seqs[i].assign(p.end() - keep, p.end());
      prompt_len[i] = keep;
    }
    auto tcache = model->make_cache(B), dcache = draft->make_cache(B);
    out.kv_bytes_per_token = tcache.bytes_per_token();
    const auto start = Clock::now();

    // Both caches hold every token but the newest: prefill the prompts minus
    // their last token (a one-token prompt prefills nothing).
    std::vector<std::vector<int64_t>> heads(B);
    int64_t T = 1;
    for (int64_t i = 0; i < B; ++i) {
      heads[i].assign(seqs[i].begin(), seqs[i].end() - 1);
      T = std::max<int64_t>(T, heads[i].size());
    }
    std::vector<int64_t> lens(B);
    for (int64_t i = 0; i < B; ++i) lens[i] = heads[i].size();
    auto lens_t = torch::tensor(lens, torch::kLong).to(dev);
    run(model, fast, tcache, heads, T, /*logits=*/false);
    run(draft, draft_fast, dcache, heads, T, /*logits=*/false);
    tcache.lengths.copy_(lens_t);
    dcache.lengths.copy_(lens_t);
    std::vector<int64_t> dlen = lens;  // tokens the draft cache holds, per sequence

    while (std::any_of(active.begin(), active.end(), [](bool a) { return a; })) {
      // Draft at most as far as the context and every active budget allow.
      int64_t G = lookahead;
      for (int64_t i = 0; i < B; ++i)
        if (active[i]) G = std::min<int64_t>(G, C - static_cast<int64_t>(seqs[i].size()));
      G = std::max<int64_t>(G, 1);
      // Finished sequences are fed dummies at position 0: their caches are not read again.
      auto park = [&](KVCache& c) {
        for (int64_t i = 0; i < B; ++i)
          if (!active[i]) c.truncate(i, 0);
      };
      // The round samples from CPU float rows in loops, one uniform draw per
      // step: per sequence and token, ATen's indexing, sampling and .item()
      // calls took more than the fast step's own work (issue 12).

      // 1. The draft catches up on the tokens it has not seen (1 or 2).
      std::vector<std::vector<int64_t>> pending(B);
      int64_t P = 1;
      for (int64_t i = 0; i < B; ++i) {
        if (active[i]) pending[i].assign(seqs[i].begin() + dlen[i], seqs[i].end());
        else pending[i] = {0};
        P = std::max<int64_t>(P, pending[i].size());
      }
      park(dcache);
      auto dlogits = cpu_rows(run(draft, draft_fast, dcache, pending, P));  // [B,P,V]
      std::vector<const float*> newest(B);  // each sequence's draft logits at its newest token
      for (int64_t i = 0; i < B; ++i) {
        newest[i] = dlogits.data_ptr<float>() + (i * P + static_cast<int64_t>(pending[i].size()) - 1) * V;
        if (active[i]) dcache.truncate(i, dlen[i] + pending[i].size());
      }

      // 2. The draft proposes G tokens: q[i] holds sequence i's G distributions [G,V].
      std::vector<std::vector<float>> q(B, std::vector<float>(G * V));
      std::vector<std::vector<int64_t>> drafted(B);
      for (int64_t j = 0; j < G; ++j) {
        const auto u = uniforms(B, gen);
        std::vector<std::vector<int64_t>> proposed(B);
        for (int64_t i = 0; i < B; ++i) {
          float* qj = q[i].data() + j * V;
          sampling_probs_rows(newest[i], 1, V, opt.sampling, qj);
          drafted[i].push_back(inverse_cdf(qj, V, u.data_ptr<float>()[i]));
          proposed[i] = {drafted[i].back()};
        }
        if (j + 1 < G) {
          park(dcache);
          dlogits = cpu_rows(run(draft, draft_fast, dcache, proposed, 1));  // [B,1,V]
          for (int64_t i = 0; i < B; ++i) newest[i] = dlogits.data_ptr<float>() + i * V;
        }
      }

      // 3. The model scores the newest token and the G drafts in one pass.
      std::vector<std::vector<int64_t>> feed(B);
      for (int64_t i = 0; i < B; ++i) {
        feed[i] = {seqs[i].back()};
        feed[i].insert(feed[i].end(), drafted[i].begin(), drafted[i].end());
      }
      park(tcache);
      const auto plogits = cpu_rows(run(model, fast, tcache, feed, G + 1));  // [B,G+1,V]
      const auto u = uniforms(B * (G + 1), gen);  // per sequence: G accept tests, then its last draw
      std::vector<float> p((G + 1) * V);

      // 4. Accept or reject, per sequence; roll both caches back to what was kept.
      const auto now = Clock::now();
      for (int64_t i = 0; i < B; ++i) {
        if (!active[i]) continue;
        const int64_t L = seqs[i].size();
        sampling_probs_rows(plogits.data_ptr<float>() + i * (G + 1) * V, G + 1, V, opt.sampling, p.data());
        auto kept = accept_drafts(p.data(), q[i].data(), V, drafted[i], u.data_ptr<float>() + i * (G + 1));
        const int64_t n = static_cast<int64_t>(kept.size()) - 1;  // drafts accepted
        stats.drafted += G;
        stats.accepted += n;
        stats.target_calls += 1;
        for (int64_t t : kept) {
          seqs[i].push_back(t);
          times[i].push_back(now);
          stats.emitted += 1;
          const int64_t produced = seqs[i].size() - prompt_len[i];
          if (t == opt.eos_id || produced >= opt.max_new_tokens) {
            active[i] = false;
            break;
          }
        }
        tcache.truncate(i, std::min<int64_t>(L + n, seqs[i].size() - 1));
        dlen[i] = std::min<int64_t>(L + std::min<int64_t>(n, G - 1), seqs[i].size() - 1);
        dcache.truncate(i, dlen[i]);
      }
    }

    for (int64_t i = 0; i < B; ++i)
      out.record(first + i, seqs[i].begin() + prompt_len[i], seqs[i].end(), opt.eos_id, start, times[i]);
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start_all).count();
  return out;
}

}  // namespace zl
