#include "sim/stages/oet_stage.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include "datasets/batch_sampler.h"
#include "datasets/cache_file.h"
#include "datasets/contracts_checker.h"
#include "sim/stages/offline_table_file.h"
#include "sim/trainer.h"

namespace zl {
namespace fs = std::filesystem;

EventTrigger make_contract_trigger(const Tokenizer& tok, const TriggerOptions& opt) {
  std::vector<std::string> pieces(static_cast<size_t>(tok.vocab_size()));
  for (int32_t id = 0; id < tok.vocab_size(); ++id)
    if (id != tok.eos_id()) pieces[id] = tok.decode({id});
  std::vector<std::string> entities = contract_roles();
  for (const auto& name : contract_company_names()) entities.push_back(name.substr(0, name.find(' ')));  // "Acme"
  return EventTrigger(pieces, entities, {"if", "unless", "provided"}, opt);
}

OfflineTable build_offline_table(Transformer& model, const EventTrigger& trigger, const torch::Tensor& tokens,
                                 int64_t windows, int64_t buckets, double tolerance, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model->eval();
  const auto& mc = model->cfg;
  const int64_t B = std::min<int64_t>(8, windows), count = (windows + B - 1) / B, T = mc.context;
  BatchSampler sampler(tokens, B, T, /*seed=*/0);
  OfflineTableBuilder builder(kEventKinds, buckets, mc.layers, mc.dim);
  for (int64_t i = 0; i < count; ++i) {
    auto x = sampler.eval_batch(i, count).first;                                                  // [B,T]
    auto cs = model->corrections(x.to(device));                                                    // L x [B,T,C]
    auto c = torch::stack(cs, 2).to(torch::kCPU, torch::kFloat).contiguous();                     // [B,T,L,C]
    const float* cp = c.data_ptr<float>();
    const int64_t* xp = x.data_ptr<int64_t>();
    const int64_t per_pos = mc.layers * mc.dim;
    for (int64_t b = 0; b < B; ++b) {
      TriggerState st;
      for (int64_t t = 0; t < T; ++t) {
        const uint8_t ev = trigger.step(st, static_cast<int32_t>(xp[b * T + t]));
        for (int k = 0; k < kEventKinds; ++k)
          if (ev & event_bit(k))
            builder.add(k * buckets + OfflineTable::bucket_of(t, T, buckets), cp + (b * T + t) * per_pos);
      }
    }
  }
  return builder.finish(tolerance);
}

namespace {

// Event `k`'s coefficients for a token at text `position` (its context bucket) into out [L·C].
void look_up(const OfflineTable& table, int k, int64_t position, int64_t context, float* out) {
  table.lookup(table.row(k, OfflineTable::bucket_of(position, context, table.buckets)), out);
}

// The model's corrections for its next forward: `coeff` [B,T,L,C] (1 where
// nothing fired) when an event fired, else none at all (c = 1, the module
// skipped).
void set_corrections(Transformer& model, const torch::Tensor& coeff, bool fired) {
  if (!fired) return model->set_correction_mode(CorrectionMode::Identity);
  auto c = coeff.to(model->wte->weight.device());
  std::vector<torch::Tensor> per_layer;  // views [B,T,C]
  for (int64_t l = 0; l < c.size(2); ++l) per_layer.push_back(c.select(2, l));
  model->set_correction_override(per_layer);
}

}  // namespace

torch::Tensor oet_coefficients(const EventTrigger& trigger, const OfflineTable& table, const torch::Tensor& tokens,
                               int64_t context, bool* fired) {
  auto x = tokens.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t B = x.size(0), T = x.size(1), n = table.cols();
  auto coeff = torch::ones({B, T, table.layers, table.dim}, torch::kFloat);
  float* out = coeff.data_ptr<float>();
  const int64_t* xp = x.data_ptr<int64_t>();
  *fired = false;
  for (int64_t b = 0; b < B; ++b) {
    TriggerState st;
    for (int64_t t = 0; t < T; ++t) {
      const int k = primary_event(trigger.step(st, static_cast<int32_t>(xp[b * T + t])));
      if (k < 0) continue;
      look_up(table, k, t, context, out + (b * T + t) * n);
      *fired = true;
    }
  }
  return coeff;
}

namespace {

// The decode hook: one trigger state per sequence.
class OetHook : public DecodeHook {
 public:
  OetHook(Transformer& model, const EventTrigger& trigger, const OfflineTable& table, double temperature, OetStage* log,
          int64_t* generated, int64_t* firing, int64_t* events, std::vector<int64_t>* item, std::vector<int64_t>* pos,
          std::vector<std::string>* kind)
      : model_(model), trigger_(trigger), table_(table), temperature_(temperature), logging_(log != nullptr),
        generated_(generated), firing_(firing), events_(events), item_(item), pos_(pos), kind_(kind) {}

  void begin_batch(int64_t batch) override {
    first_item_ += batch_;
    batch_ = batch;
    states_.assign(batch, TriggerState{});
    fed_.assign(batch, 0);
  }

  void before_prefill(const std::vector<std::vector<int32_t>>& prompts) override {
    const int64_t B = prompts.size();
    int64_t T = 0;
    for (const auto& p : prompts) T = std::max<int64_t>(T, p.size());
    const int64_t n = table_.cols();
    auto coeff = torch::ones({B, T, table_.layers, table_.dim}, torch::kFloat);
    float* out = coeff.data_ptr<float>();
    bool any = false;
    for (int64_t i = 0; i < B; ++i) {
      for (size_t t = 0; t < prompts[i].size(); ++t) {
        const int k = primary_event(trigger_.step(states_[i], prompts[i][t]));
        if (k < 0) continue;
        look_up(table_, k, t, model_->cfg.context, out + (i * T + t) * n);
        any = true;
      }
      fed_[i] = prompts[i].size();
    }
    set_corrections(model_, coeff, any);
  }

  Verdict review(const std::vector<std::vector<int32_t>>& seqs, const std::vector<bool>& active) override {
    const int64_t B = seqs.size(), n = table_.cols();
    Verdict v{std::vector<int64_t>(B, 0), std::vector<double>(B, temperature_)};
    bool any = false;
    float* out = nullptr;
    for (int64_t i = 0; i < B; ++i) {
      if (!active[i]) continue;
      int k = -1;
      for (; fed_[i] < static_cast<int64_t>(seqs[i].size()); ++fed_[i]) {  // normally the one new token
        const uint8_t ev = trigger_.step(states_[i], seqs[i][fed_[i]]);
        k = primary_event(ev);
        if (logging_) {
          ++*generated_;
          *firing_ += ev != 0;
          for (int e = 0; e < kEventKinds; ++e) {
            if (!(ev & event_bit(e))) continue;
            ++events_[e];
            item_->push_back(first_item_ + i);
            pos_->push_back(fed_[i]);
            kind_->push_back(event_kind_name(e));
          }
        }
      }
      if (k < 0) continue;
      if (!any) {
        buffer_ = torch::ones({B, 1, table_.layers, table_.dim}, torch::kFloat);
        out = buffer_.data_ptr<float>();
        any = true;
      }
      const int64_t position = static_cast<int64_t>(seqs[i].size()) - 1;  // the token the next forward processes
      look_up(table_, k, position, model_->cfg.context, out + i * n);
    }
    set_corrections(model_, buffer_, any);
    return v;
  }

 private:
  Transformer& model_;
  const EventTrigger& trigger_;
  const OfflineTable& table_;
  double temperature_;
  bool logging_;
  int64_t *generated_, *firing_, *events_;
  std::vector<int64_t>*item_, *pos_;
  std::vector<std::string>* kind_;
  int64_t first_item_ = 0, batch_ = 0;
  std::vector<TriggerState> states_;
  std::vector<int64_t> fed_;
  torch::Tensor buffer_;
};

// oet_serving_hook's hook: corrections set before each served step.
class OetServingHook : public DecodeHook {
 public:
  OetServingHook(Transformer& model, const EventTrigger& trigger, const OfflineTable& table)
      : model_(model), trigger_(trigger), table_(table) {}

  void begin_batch(int64_t batch) override { states_.assign(batch, TriggerState{}); }
  void begin_sequence(int64_t sequence, int64_t prompt_len) override { states_.at(sequence) = TriggerState{}; }

  void before_step(const std::vector<Fed>& fed, int64_t batch) override {
    int64_t T = 1;  // rows of one sequence in this step
    for (const Fed& f : fed) T = std::max(T, f.count);
    const int64_t n = table_.cols();
    float* out = nullptr;
    for (const Fed& f : fed) {
      for (int64_t j = 0; j < f.count; ++j) {
        const int k = primary_event(trigger_.step(states_.at(f.sequence), static_cast<int32_t>(f.tokens[j])));
        if (k < 0) continue;
        if (!out) {
          buffer_ = torch::ones({batch, T, table_.layers, table_.dim}, torch::kFloat);
          out = buffer_.data_ptr<float>();
        }
        look_up(table_, k, f.position + j, model_->cfg.context, out + (f.sequence * T + j) * n);
      }
    }
    set_corrections(model_, buffer_, out != nullptr);
  }

  Verdict review(const std::vector<std::vector<int32_t>>& seqs, const std::vector<bool>&) override {
    return {std::vector<int64_t>(seqs.size(), 0), std::vector<double>(seqs.size(), 0.0)};
  }

 private:
  Transformer& model_;
  const EventTrigger& trigger_;
  const OfflineTable& table_;
  std::vector<TriggerState> states_;
  torch::Tensor buffer_;
};

}  // namespace

std::shared_ptr<DecodeHook> oet_serving_hook(Transformer& model, const EventTrigger& trigger, const OfflineTable& table) {
  return std::make_shared<OetServingHook>(model, trigger, table);
}

VariantStage::Serving OetStage::serving(const StageContext& ctx, const DecodeOptions& opt, uint64_t seed) {
  return {opt, oet_serving_hook(ctx.model, *trigger_, table_), ""};
}

SyntheticOet synthetic_oet(const ModelConfig& mc, const OetConfig& o) {
  std::vector<std::string> pieces(mc.vocab);
  for (int64_t id = 0; id < mc.vocab; ++id)
    pieces[id] = id % 7 == 0 ? ((id / 7) % 2 ? " Seller" : " Buyer") : " w" + std::to_string(id);
  EventTrigger trigger(pieces, {"seller", "buyer"}, {"if"},
                       TriggerOptions{static_cast<int>(o.numeric_run), static_cast<int>(o.nesting_depth)});
  OfflineTableBuilder builder(kEventKinds, o.buckets, mc.layers, mc.dim);
  for (int64_t row = 0; row < kEventKinds * o.buckets; ++row) {
    auto c = (1 + 0.1 * torch::randn({mc.layers * mc.dim})).contiguous();
    builder.add(row, c.data_ptr<float>());
  }
  return {std::move(trigger), builder.finish(/*tolerance=*/0)};
}

void OetStage::prepare(const StageContext& ctx, RunRecord& r) {
  auto& m = r.metrics;
  const auto& o = ctx.cfg.oet;
  TORCH_CHECK(ctx.model->has_correction(), "variant oet needs the sfcl model's correction module");
  trigger_ = std::make_unique<EventTrigger>(
      make_contract_trigger(*ctx.data.tokenizer, TriggerOptions{static_cast<int>(o.numeric_run), static_cast<int>(o.nesting_depth)}));

  // The table is a function of the checkpoint and the oet.* keys: they name it.
  char tol[32];
  std::snprintf(tol, sizeof tol, "%.6g", o.tolerance);
  const std::string key = "buckets=" + std::to_string(o.buckets) + ";numeric_run=" + std::to_string(o.numeric_run) +
                          ";nesting_depth=" + std::to_string(o.nesting_depth) + ";windows=" +
                          std::to_string(o.table_windows) + ";tolerance=" + tol + ";vocab=" +
                          std::to_string(ctx.data.tokenizer->vocab_size());
  const std::string path = (fs::path(ctx.checkpoint_dir) / ("oet_table-" + hash_hex(key) + ".bin")).string();
  const auto t0 = std::chrono::steady_clock::now();
  auto cached = read_cache_file(path, [&](const std::string& bytes) { return parse_offline_table(bytes, path); });
  const bool loaded = cached.has_value();
  if (loaded) table_ = std::move(*cached);
  if (loaded && (table_.kinds != kEventKinds || table_.buckets != o.buckets || table_.layers != ctx.model->cfg.layers ||
                 table_.dim != ctx.model->cfg.dim))
    throw std::runtime_error("offline table '" + path + "' does not match this model or oet.buckets; delete it to rebuild");
  if (!loaded) {
    table_ = build_offline_table(ctx.model, *trigger_, ctx.data.train.tokens, o.table_windows, o.buckets, o.tolerance,
                                 ctx.device);
    save_offline_table(table_, path);
  }
  m["oet_table_built"] = loaded ? 0.0 : 1.0;
  m["oet_table_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m["oet_table_bytes"] = static_cast<double>(table_.bytes());
  m["oet_table_nnz"] = static_cast<double>(table_.delta.nonZeros());
  int64_t rows = 0;
  for (auto c : table_.counts) rows += c > 0;
  m["oet_table_rows"] = static_cast<double>(rows);
  m["oet_trigger_bytes"] = static_cast<double>(trigger_->lexicon_bytes());

  // Validation loss with oet's corrections, teacher-forced.
  {
    torch::NoGradGuard no_grad;
    ctx.model->eval();
    BatchSampler val(ctx.data.val.tokens, ctx.cfg.train.batch, ctx.cfg.model.context, static_cast<uint64_t>(ctx.cfg.seed));
    double total = 0;
    for (int64_t i = 0; i < ctx.cfg.train.eval_batches; ++i) {
      auto [x, y] = val.eval_batch(i, ctx.cfg.train.eval_batches);
      bool fired = false;
      auto coeff = oet_coefficients(*trigger_, table_, x, ctx.cfg.model.context, &fired);
      set_corrections(ctx.model, coeff, fired);
      total += ctx.model->loss(x.to(ctx.device), y.to(ctx.device)).item<double>();
    }
    ctx.model->set_correction_mode(CorrectionMode::Module);
    m["oet_val_loss"] = total / ctx.cfg.train.eval_batches;
  }
}

DecodeOutput oet_decode(Transformer& model, const EventTrigger& trigger, const OfflineTable& table,
                        const std::vector<std::vector<int32_t>>& prompts, const DecodeOptions& opt, at::Generator& gen) {
  OetHook hook(model, trigger, table, opt.sampling.temperature, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
               nullptr);
  auto out = zl::decode(model, prompts, opt, gen, &hook);
  model->set_correction_mode(CorrectionMode::Module);
  return out;
}

DecodeOutput OetStage::decode(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts,
                              const DecodeOptions& opt, at::Generator& gen, bool logged) {
  OetHook hook(ctx.model, *trigger_, table_, opt.sampling.temperature, logged ? this : nullptr, &generated_, &firing_,
               events_, &log_item_, &log_position_, &log_kind_);
  auto out = zl::decode(ctx.model, prompts, opt, gen, &hook);
  ctx.model->set_correction_mode(CorrectionMode::Module);
  if (!logged) time_lookups();
  return out;
}

// One lookup, timed in-process over every row in turn, in this thread's CPU
// time (the wall time beside it), one block of 5000 after each timed pass,
// and the fastest block kept: a block that met a context switch, a cold
// cache or a busy sibling hyperthread only errs upward. Blocks spread over
// the passes (over the paired timing's rounds, sim/study/paired_timing.h) see the
// machine at several moments; 5 blocks back to back in one run's
// preparation still gave one seed 396 ns against the others' 280 (issue 12).
// bench/zl_bench.cpp has the Google Benchmark of the same call.
void OetStage::time_lookups() {
  std::vector<float> buf(static_cast<size_t>(table_.cols()));
  constexpr int64_t kLookups = 5000;
  volatile float sink = 0;
  timespec c0{}, c1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  const auto s0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < kLookups; ++i) {
    table_.lookup(i % table_.rows(), buf.data());
    sink = sink + buf[static_cast<size_t>(i % table_.cols())];
  }
  const auto s1 = std::chrono::steady_clock::now();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  lookup_cpu_ns_ = std::min(lookup_cpu_ns_, ((c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec)) / kLookups);
  lookup_wall_ns_ = std::min(lookup_wall_ns_, std::chrono::duration<double, std::nano>(s1 - s0).count() / kLookups);
}

void OetStage::add_timing(const StageContext& ctx, RunRecord& r) {
  r.metrics["oet_lookup_ns"] = lookup_cpu_ns_;
  r.metrics["oet_lookup_wall_ns"] = lookup_wall_ns_;
}

void OetStage::add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) {
  // Per generated token: on a firing token, the MLP input of every layer is
  // multiplied by the looked-up coefficients; the module itself never runs.
  const auto& mc = ctx.model->cfg;
  const double rate = generated_ > 0 ? static_cast<double>(firing_) / generated_ : 0.0;
  per_module["lookup"] = rate * mc.layers * mc.dim;
}

void OetStage::finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) {
  auto& m = r.metrics;
  const double nan = std::nan("");
  m["oet_generated_tokens"] = static_cast<double>(generated_);
  m["oet_trigger_rate"] = generated_ > 0 ? static_cast<double>(firing_) / generated_ : nan;
  m["oet_trigger_interval_tokens"] = firing_ > 0 ? static_cast<double>(generated_) / firing_ : nan;
  const int64_t total = events_[0] + events_[1] + events_[2];
  for (int k = 0; k < kEventKinds; ++k)
    m[std::string("oet_events_") + event_kind_name(k)] = total > 0 ? static_cast<double>(events_[k]) / total : nan;
  Table events;
  events.add("item", log_item_);
  events.add("position", log_position_);
  events.add("kind", log_kind_);
  r.tables["oet/events"] = events;
}

std::unique_ptr<VariantStage> make_oet_stage(const RunConfig&) { return std::make_unique<OetStage>(); }

}  // namespace zl
