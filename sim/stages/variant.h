// What a variant adds to a run around the shared transformer (docs/articles.md): side
// models trained after the language model (sfvl's verifier, a speculative
// draft, oet's offline table), its own decode loop or decode hook, its cost
// per module, and its own metrics and tables. sim/run/run.cpp calls the stage at
// each of these points; each variant's stage lives in its own file and is
// named by its row of the variant table (sim/variants.def). The baseline is
// the stage that adds nothing.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/transformer.h"
#include "sim/config.h"
#include "sim/data.h"
#include "sim/decoder.h"
#include "sim/prompts.h"
#include "sim/results.h"
#include "sim/variants.h"

namespace zl {

struct StageContext {
  const RunConfig& cfg;
  Transformer& model;        // trained (or loaded from its checkpoint)
  const Dataset& data;
  torch::Device device;
  std::string checkpoint_dir;  // the LM's checkpoint: side models are cached beside it
  Transformer* judge = nullptr;  // the independent judge (sim/judge.h); null when judge.enabled is off
};

class VariantStage {
 public:
  virtual ~VariantStage() = default;

  // After the language model is trained: train or load what the variant adds.
  // Figures of that work (a verifier's AUROC, a table's bytes) go into r.
  virtual void prepare(const StageContext& ctx, RunRecord& r) {}

  // One decode pass over the prompts. `logged` is the quality pass, whose
  // events the stage keeps for finish(); timed passes do the same work.
  virtual DecodeOutput decode(const StageContext& ctx, const std::vector<std::vector<int32_t>>& prompts,
                              const DecodeOptions& opt, at::Generator& gen, bool logged) {
    return zl::decode(ctx.model, prompts, opt, gen);
  }

  // How the variant decodes inside a serving loop (sim/serving/engine.h):
  // the decode options it changes (an evicting cache) and its hook (sfvl's
  // verifier reviewing every sampled token, oet's trigger setting each
  // step's corrections). A variant whose decoding is a loop of its own
  // cannot be served yet, and `unsupported` says why. `resamples`: the hook
  // takes tokens back, so the simulator draws re-samples at the rates the
  // real server's profile saw (sim/serving/resample.h).
  struct Serving {
    DecodeOptions opt;
    std::shared_ptr<DecodeHook> hook;
    std::string unsupported;
    bool resamples = false;
  };
  virtual Serving serving(const StageContext& ctx, const DecodeOptions& opt, uint64_t seed) { return {opt, nullptr, ""}; }

  // After the timed passes (decode with logged = false), which run in the
  // run's process or later beside the other arms of its seed: the variant's
  // figures of them, such as the share of decode time its own part took.
  virtual void add_timing(const StageContext& ctx, RunRecord& r) {}

  // Analytic forward FLOPs per generated token of what the variant adds
  // (docs/design.md#metrics-and-cost modules: verifier, gate, correction, lookup).
  virtual void add_flops(const StageContext& ctx, int64_t context, std::map<std::string, double>& per_module) {}

  // The operating point (docs/design.md#operating-points, sim/operating_point.h): `metric` with the
  // knob as ctx.cfg sets it, measured on the calibration prompts alone. It
  // must be deterministic in the knob (the same prompts from the same
  // sampling seed every call) so that the search over the knob repeats.
  // The metrics a variant offers are listed in operating_targets().
  virtual double operating_metric(const StageContext& ctx, const std::string& metric, const Prompts& prompts) {
    throw std::runtime_error("variant " + ctx.cfg.variant + " cannot measure operating metric '" + metric + "'");
  }

  // After every pass: the variant's metrics and tables, from the quality
  // pass (`quality`, with the prompts it answered) and its own logs.
  virtual void finish(const StageContext& ctx, const Prompts& prompts, const DecodeOutput& quality, RunRecord& r) {}
};

// The stage of cfg.variant: its row's factory (sim/variants.def), or the one
// add_variant gave.
std::unique_ptr<VariantStage> make_variant_stage(const RunConfig& cfg);

using StageFactory = std::function<std::unique_ptr<VariantStage>(const RunConfig&)>;

// A variant added at runtime, row and stage (a mechanism kept outside the
// tree, or a test's: tests/cpp/test_toy_mechanism.cpp), through the same
// table as the built-in ones (register_variant, sim/config.h). Before any
// config is read. A variant that trains a network of its own (its family is
// itself) registers that network too, under its name: add_network
// (models/factory.h).
void add_variant(VariantInfo info, StageFactory make_stage);

}  // namespace zl
