#include "sim/speculative.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "models/decode_step.h"

namespace zl {
namespace {

using Clock = std::chrono::steady_clock;

double uniform(at::Generator& gen) { return torch::rand({1}, gen, torch::kDouble).item<double>(); }

// Writes rows of `tokens` [B,T] right-padded from `rows`; returns the tensor.
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

std::vector<int64_t> accept_drafts(const torch::Tensor& p, const torch::Tensor& q, const std::vector<int64_t>& drafted,
                                   at::Generator& gen) {
  std::vector<int64_t> kept;
  const int64_t G = drafted.size();
  // Read on the CPU: an .item() per drafted token cost more than a decode step.
  const auto pc = p.to(torch::kCPU, torch::kFloat).contiguous(), qc = q.to(torch::kCPU, torch::kFloat).contiguous();
  const float *pp = pc.data_ptr<float>(), *qp = qc.data_ptr<float>();
  const int64_t V = p.size(1);
  for (int64_t j = 0; j < G; ++j) {
    const int64_t x = drafted[j];
    const double px = pp[j * V + x], qx = qp[j * V + x];
    if (qx > 0 && uniform(gen) < std::min(1.0, px / qx)) {
      kept.push_back(x);
      continue;
    }
    // Rejected: draw from the residual norm(max(0, p − q)), in a loop (the
    // tensor form's five operators and two reads were most of a round).
    std::vector<float> residual(V);
    double mass = 0;
    for (int64_t v = 0; v < V; ++v) mass += residual[v] = std::max(0.0f, pp[j * V + v] - qp[j * V + v]);
    if (!(mass > 0)) {
      kept.push_back(draw_one(pp + j * V, V, gen));
      return kept;
    }
    for (float& r : residual) r = static_cast<float>(r / mass);
    kept.push_back(draw_one(residual.data(), V, gen));
    return kept;
  }
  kept.push_back(draw_one(pp + G * V, V, gen));  // all kept: one more from the model
  return kept;
}

DecodeOutput speculative_decode(Transformer& model, Transformer& draft, const std::vector<std::vector<int32_t>>& prompts,
                                const DecodeOptions& opt, int64_t lookahead, at::Generator& gen,
                                SpeculativeStats& stats) {
  torch::NoGradGuard no_grad;
  model->eval();
  draft->eval();
  const auto dev = model->wte->weight.device();
  const int64_t C = model->cfg.context;
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
          if (!active[i]) c.lengths[i] = 0;
      };

      // 1. The draft catches up on the tokens it has not seen (1 or 2).
      std::vector<std::vector<int64_t>> pending(B);
      int64_t P = 1;
      for (int64_t i = 0; i < B; ++i) {
        if (active[i]) pending[i].assign(seqs[i].begin() + dlen[i], seqs[i].end());
        else pending[i] = {0};
        P = std::max<int64_t>(P, pending[i].size());
      }
      park(dcache);
      auto dlogits = run(draft, draft_fast, dcache, pending, P);  // [B,P,V]
      std::vector<int64_t> last(B);
      for (int64_t i = 0; i < B; ++i) {
        last[i] = static_cast<int64_t>(pending[i].size()) - 1;
        if (active[i]) dcache.truncate(i, dlen[i] + pending[i].size());
      }
      auto step_logits = dlogits.index({torch::arange(B, torch::kLong).to(dev), torch::tensor(last).to(dev)});  // [B,V]

      // 2. The draft proposes G tokens.
      std::vector<torch::Tensor> q;  // G × [B,V]
      std::vector<std::vector<int64_t>> drafted(B);
      for (int64_t j = 0; j < G; ++j) {
        auto qj = sampling_probs(step_logits, opt.sampling).to(torch::kCPU);  // [B,V]
        auto x = draw(qj, gen).contiguous();                                  // [B] on the CPU
        const int64_t* xs = x.data_ptr<int64_t>();
        q.push_back(qj);
        std::vector<std::vector<int64_t>> proposed(B);
        for (int64_t i = 0; i < B; ++i) {
          drafted[i].push_back(xs[i]);
          proposed[i] = {drafted[i].back()};
        }
        if (j + 1 < G) {
          park(dcache);
          step_logits = run(draft, draft_fast, dcache, proposed, 1).select(1, 0);
        }
      }
      auto qs = torch::stack(q, 1);  // [B,G,V]

      // 3. The model scores the newest token and the G drafts in one pass.
      std::vector<std::vector<int64_t>> feed(B);
      for (int64_t i = 0; i < B; ++i) {
        feed[i] = {seqs[i].back()};
        feed[i].insert(feed[i].end(), drafted[i].begin(), drafted[i].end());
      }
      park(tcache);
      auto plogits = run(model, fast, tcache, feed, G + 1);  // [B,G+1,V]
      auto ps = sampling_probs(plogits.reshape({B * (G + 1), -1}), opt.sampling).view({B, G + 1, -1}).to(torch::kCPU);

      // 4. Accept or reject, per sequence; roll both caches back to what was kept.
      const auto now = Clock::now();
      for (int64_t i = 0; i < B; ++i) {
        if (!active[i]) continue;
        const int64_t L = seqs[i].size();
        auto kept = accept_drafts(ps[i], qs[i], drafted[i], gen);
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
