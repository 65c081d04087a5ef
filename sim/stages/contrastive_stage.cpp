#include "sim/stages/contrastive_stage.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace zl {
namespace {

using Clock = std::chrono::steady_clock;
using torch::indexing::Slice;

// model->keep_hidden on for the guard's lifetime (the hidden states are read
// after every forward), restored after.
struct KeepHidden {
  explicit KeepHidden(Transformer& m) : model(m), was(m->keep_hidden) { model->keep_hidden = true; }
  ~KeepHidden() {
    model->keep_hidden = was;
    model->last_hidden = torch::Tensor();
  }
  Transformer& model;
  bool was;
};

// Each sequence's cache row repeated k times: [B,...] -> [B·k,...]; row
// b·k + c holds candidate c of sequence b.
KVCache repeat_rows(const KVCache& c, int64_t k) {
  KVCache out;
  out.capacity = c.capacity;
  for (const auto& l : c.layers) {
    LayerCache r;
    r.k = l.k.repeat_interleave(k, 0);  // [B·k,H,capacity,D]
    r.v = l.v.repeat_interleave(k, 0);
    if (l.mass.defined()) {  // fused attn_mass: column sums, queries, and how many rows they sum
      r.mass = l.mass.repeat_interleave(k, 0);
      r.queries = l.queries.repeat_interleave(k, 0);
      r.mass_rows = l.mass_rows.repeat_interleave(k, 0);
    }
    if (l.importance.defined()) r.importance = l.importance.repeat_interleave(k, 0);
    out.layers.push_back(r);
  }
  out.lengths = c.lengths.repeat_interleave(k, 0);  // [B·k]
  return out;
}

// After a forward that wrote row r's candidate at slot pos[r], every row takes
// the slot of row src[r] (its sequence's chosen candidate): the rows of a
// sequence hold one context again. src, pos: [B·k] int64.
void keep_chosen(KVCache& c, const torch::Tensor& src, const torch::Tensor& pos) {
  auto rows = torch::arange(src.size(0), src.options());
  for (auto& l : c.layers) {
    l.k.index_put_({rows, Slice(), pos, Slice()}, l.k.index({src, Slice(), pos, Slice()}));  // [B·k,H,D]
    l.v.index_put_({rows, Slice(), pos, Slice()}, l.v.index({src, Slice(), pos, Slice()}));
    if (l.mass.defined()) {  // fused attn_mass: the sums whole, the query at its slot
      l.mass.index_put_({rows}, l.mass.index({src}));
      l.queries.index_put_({rows, Slice(), pos, Slice()}, l.queries.index({src, Slice(), pos, Slice()}));
      l.mass_rows.copy_(l.mass_rows.index({src.to(torch::kCPU)}));
    }
    if (l.importance.defined()) l.importance.index_put_({rows}, l.importance.index({src}));
  }
}

}  // namespace

torch::Tensor contrastive_choice(const torch::Tensor& p, const torch::Tensor& h, const torch::Tensor& context,
                                 const torch::Tensor& context_len, double alpha) {
  namespace F = torch::nn::functional;
  const int64_t B = h.size(0), S = context.size(1);
  auto hn = F::normalize(h.to(torch::kFloat), F::NormalizeFuncOptions().dim(-1));        // [B,K,C]
  auto cn = F::normalize(context.to(torch::kFloat), F::NormalizeFuncOptions().dim(-1));  // [B,S,C]
  auto sims = torch::bmm(hn, cn.transpose(1, 2));                                        // [B,K,S]
  auto past = torch::arange(S, context_len.options()).view({1, 1, S}) >= context_len.view({B, 1, 1});  // [B,1,S]
  // The degeneration penalty: each candidate's largest cosine similarity to
  // a context token (rows past a sequence's context masked).
  auto penalty = sims.masked_fill(past, -std::numeric_limits<float>::infinity()).amax(-1);  // [B,K]
  return ((1 - alpha) * p.to(torch::kFloat) - alpha * penalty).argmax(-1);                  // [B]
}

DecodeOutput contrastive_decode(Transformer& model, const std::vector<std::vector<int32_t>>& prompts,
                                const DecodeOptions& opt, const ContrastiveOptions& search) {
  torch::NoGradGuard no_grad;
  model->eval();
  KeepHidden keep(model);
  DecodeOutput out;
  out.fast_step = false;
  if (opt.fast_step)
    out.step_note = "contrastive search feeds k candidates per sequence and reads their hidden states, "
                    "which only the LibTorch modules give";
  const auto dev = model->wte->weight.device();
  const int64_t K = std::min<int64_t>(search.k, model->cfg.vocab), C = model->cfg.dim;
  const double alpha = search.alpha;
  out.continuations.resize(prompts.size());
  out.timings.resize(prompts.size());
  const auto start_all = Clock::now();

  for (size_t first = 0; first < prompts.size(); first += opt.batch) {
    const int64_t B = std::min<int64_t>(opt.batch, prompts.size() - first);
    std::vector<std::vector<int32_t>> seqs;
    std::vector<int64_t> prompt_len;
    for (int64_t i = 0; i < B; ++i) {
      const auto& p = prompts[first + i];
      const size_t keep_n = kept_prompt_tokens(p.size(), model->cfg.context, opt);
      seqs.emplace_back(p.end() - keep_n, p.end());
      prompt_len.push_back(keep_n);
    }
    std::vector<std::vector<Clock::time_point>> times(B);
    std::vector<bool> active(B, true);
    const auto start = Clock::now();

    // Prefill, right-padded as decode() does: the prompts' hidden states are
    // the first context the penalty compares against.
    const int64_t T = *std::max_element(prompt_len.begin(), prompt_len.end());
    auto tokens = torch::zeros({B, T}, torch::kLong);
    auto acc = tokens.accessor<int64_t, 2>();
    for (int64_t i = 0; i < B; ++i)
      for (int64_t j = 0; j < prompt_len[i]; ++j) acc[i][j] = seqs[i][j];
    auto cache = model->make_cache(B);
    auto prefill_logits = model->forward(tokens.to(dev), cache);  // [B,T,V]
    auto len_t = torch::tensor(prompt_len, torch::kLong).to(dev);  // [B]
    cache.lengths.copy_(len_t);
    auto rows_b = torch::arange(B, len_t.options());
    auto logits = prefill_logits.index({rows_b, len_t - 1});  // [B,V]: the first token's distribution
    auto ctx_h = torch::zeros({B, cache.capacity, C}, model->last_hidden.options());  // [B,capacity,C]
    ctx_h.narrow(1, 0, T).copy_(model->last_hidden);
    std::vector<int64_t> ctx_len = prompt_len;  // context tokens whose hidden state is in ctx_h
    KVCache big = repeat_rows(cache, K);
    // Per sequence and token: k cache rows, and the hidden state the penalty keeps.
    out.kv_bytes_per_token = big.bytes_per_token() * K + C * ctx_h.element_size();

    for (int64_t step = 0; step < opt.max_new_tokens; ++step) {
      auto probs = torch::softmax(logits.to(torch::kFloat), -1);  // [B,V]
      auto top = probs.topk(K, -1);                                // most probable first
      auto p = std::get<0>(top), ids = std::get<1>(top);           // [B,K]
      auto pos = big.lengths.clone();                              // [B·k]: the slot each candidate takes
      auto cand_logits = model->forward(ids.reshape({B * K, 1}), big).select(1, 0);  // [B·k,V]
      auto h = model->last_hidden.select(1, 0).reshape({B, K, C});                   // [B,K,C]

      const int64_t S = *std::max_element(ctx_len.begin(), ctx_len.end());
      auto choice = contrastive_choice(p, h, ctx_h.narrow(1, 0, S), torch::tensor(ctx_len, torch::kLong).to(dev),
                                       alpha);  // [B]
      auto src = rows_b * K + choice;          // [B]: the chosen rows

      logits = cand_logits.index_select(0, src);                          // [B,V]: the next step's distribution
      auto h_chosen = h.reshape({B * K, C}).index_select(0, src);         // [B,C]
      keep_chosen(big, src.repeat_interleave(K, 0), pos);
      auto chosen = ids.gather(1, choice.unsqueeze(1)).squeeze(1).to(torch::kCPU).contiguous();  // [B]
      const int64_t* tok = chosen.data_ptr<int64_t>();

      const auto now = Clock::now();
      std::vector<int64_t> grow_rows, grow_at;
      for (int64_t i = 0; i < B; ++i) {
        if (!active[i]) continue;
        seqs[i].push_back(static_cast<int32_t>(tok[i]));
        times[i].push_back(now);
        grow_rows.push_back(i);
        grow_at.push_back(ctx_len[i]++);
        const int64_t produced = seqs[i].size() - prompt_len[i];
        if (tok[i] == opt.eos_id || produced >= opt.max_new_tokens) active[i] = false;
      }
      auto grow = torch::tensor(grow_rows, torch::kLong).to(dev);
      ctx_h.index_put_({grow, torch::tensor(grow_at, torch::kLong).to(dev)}, h_chosen.index_select(0, grow));
      if (std::none_of(active.begin(), active.end(), [](bool a) { return a; })) break;
      // Finished sequences fed candidates too: roll them back so their rows
      // do not grow while the others go on.
      std::vector<int64_t> done(B * K);
      for (int64_t r = 0; r < B * K; ++r) done[r] = !active[r / K];
      big.lengths -= torch::tensor(done, torch::kLong).to(dev);
    }

    for (int64_t i = 0; i < B; ++i)
      out.record(first + i, seqs[i].begin() + prompt_len[i], seqs[i].end(), opt.eos_id, start, times[i]);
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start_all).count();
  return out;
}

namespace {

class ContrastiveStage : public VariantStage {
 public:
  Serving serving(const StageContext& ctx, const DecodeOptions& opt, uint64_t seed) override {
    return {opt, nullptr, "contrastive search decodes on the reference step, with a loop of its own"};
  }

  DecodeOutput decode(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts,
                      const DecodeOptions& opt, at::Generator& gen, bool logged) override {
    return contrastive_decode(ctx.model, prompts, opt, {ctx.cfg.contrastive.k, ctx.cfg.contrastive.alpha});
  }

  // Each generated token runs the whole model on k rows (the candidates),
  // and compares k hidden states with the context's.
  void add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) override {
    const double k = static_cast<double>(std::min<int64_t>(ctx.cfg.contrastive.k, ctx.model->cfg.vocab));
    for (auto& [module, flops] : per_module) flops *= k;
    per_module["degeneration_penalty"] = 2.0 * k * context * ctx.model->cfg.dim;
  }
};

}  // namespace

std::unique_ptr<VariantStage> make_contrastive_stage(const RunConfig& cfg) {
  return std::make_unique<ContrastiveStage>();
}

}  // namespace zl
