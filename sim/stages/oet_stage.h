// The run stage of variant oet (seed 000 §2.2): starts from the trained sfcl
// model (same checkpoint), builds (or loads) the Offline State Modeller's
// table beside that checkpoint, and decodes with the Online Event Trigger:
// after each token every sequence's trigger is fed the token; if an event
// fired, the next forward (which processes that very token) multiplies the
// MLP input by the table's coefficients for (event kind, context bucket);
// otherwise the correction is skipped (c = 1) and the module never runs.
// Prompts are fed to the trigger too, and their events get table corrections
// in the prefill, so decoding sees what teacher-forced oet would.
//
// Metrics: oet_trigger_rate (share of generated tokens with an event),
// oet_trigger_interval_tokens (generated tokens per firing token),
// oet_events_entity / _nesting / _numeric (shares of the events fired),
// oet_table_bytes, oet_table_rows, oet_table_nnz, oet_trigger_bytes (the
// shared lexicon), oet_lookup_ns (one table lookup, timed in-process; the
// Google Benchmark in bench/ measures the same function), oet_val_loss
// (validation loss teacher-forced with oet's corrections). Table oet/events:
// every event fired in the quality pass (item, position, kind).
#pragma once
#include <cmath>
#include <memory>

#include "models/event_trigger.h"
#include "models/offline_table.h"
#include "sim/stages/variant.h"

namespace zl {

// The trigger over a tokenizer's vocabulary with the contracts corpus's
// party words as entities and "if", "unless", "provided" as openers.
EventTrigger make_contract_trigger(const Tokenizer& tok, const TriggerOptions& opt);

// Builds the table by running the model's correction over `windows` evenly
// spaced windows of `tokens` (teacher-forced).
OfflineTable build_offline_table(Transformer& model, const EventTrigger& trigger, const torch::Tensor& tokens,
                                 int64_t windows, int64_t buckets, double tolerance, const torch::Device& device);

// oet's coefficients for a batch of token windows [B,T] (each a stream from
// a fresh trigger state): [B,T,L,C] float, table rows where an event fired,
// 1 elsewhere. Sets *fired to whether any position fired.
torch::Tensor oet_coefficients(const EventTrigger& trigger, const OfflineTable& table, const torch::Tensor& tokens,
                               int64_t context, bool* fired);

// oet's decode without its stage: the trigger fed every token, the table's
// row applied on the forward after a firing token, nothing logged; the
// model's correction mode is Module again after `decode` (bench-decode's arm).
DecodeOutput oet_decode(Transformer& model, const EventTrigger& trigger, const OfflineTable& table,
                        const std::vector<std::vector<int32_t>>& prompts, const DecodeOptions& opt, at::Generator& gen);

// oet in a serving loop (sim/serving/engine.h): one trigger state per cache
// row, started afresh when a request takes the row, fed every token the step
// feeds (prompt chunks and newest tokens alike, in order); a fed token that
// fires an event gets the table's row for its (event, context bucket) on the
// step that processes it, as oet_decode gives it; a step where nothing fires
// skips the correction. Takes nothing back. The model, trigger and table
// must outlive the hook; the model's correction mode is left as the last
// step set it.
std::shared_ptr<DecodeHook> oet_serving_hook(Transformer& model, const EventTrigger& trigger, const OfflineTable& table);

// oet on a synthetic vocabulary, for a model of random weights (bench-decode,
// tests): one id in seven names one of two parties, so that random tokens
// switch entity on about 7% of tokens (the claims study's oet_trigger_rate is
// 6-10%), and a table whose rows are random coefficients near 1 (every entry
// kept).
struct SyntheticOet {
  EventTrigger trigger;
  OfflineTable table;
};
SyntheticOet synthetic_oet(const ModelConfig& mc, const OetConfig& o);

class OetStage : public VariantStage {
 public:
  void prepare(const StageContext& ctx, RunRecord& r) override;
  DecodeOutput decode(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts,
                      const DecodeOptions& opt, at::Generator& gen, bool logged) override;
  // Served with oet_serving_hook: a served step's corrections per row and token.
  Serving serving(const StageContext& ctx, const DecodeOptions& opt, uint64_t seed) override;
  void add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) override;
  void finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) override;
  // oet_lookup_ns: one block of lookups after each timed pass, the fastest.
  void add_timing(const StageContext& ctx, RunRecord& r) override;

 private:
  void time_lookups();

  std::unique_ptr<EventTrigger> trigger_;
  OfflineTable table_;
  // The quality pass's log.
  int64_t generated_ = 0, firing_ = 0;
  int64_t events_[kEventKinds] = {0, 0, 0};
  std::vector<int64_t> log_item_, log_position_;
  std::vector<std::string> log_kind_;
  // The fastest block of lookups so far, per lookup: thread CPU time and wall time.
  double lookup_cpu_ns_ = INFINITY, lookup_wall_ns_ = INFINITY;
};

}  // namespace zl
