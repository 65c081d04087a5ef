// sfcl's and oet's correction (models/correction.h) as a before-MLP hook
// (models/attention_hook.h, point c): u ← u·c on the MLP input u = ln2(h) of
// every block, c as each block's decode-time switches say
// (BlockImpl::correction_mode, set by the stages through
// TransformerImpl::set_correction_*): the block's module (sfcl, and
// training), the coefficients a stage set per sequence (oet's table
// lookups), or none (c = 1: the product and the module skipped).
//
// The module's parameters stay in each block (blocks.l.correction.* in the
// state dict, drawn where they always were), read by the hook at every call;
// the fast step's copy (for_fast_step) packs them as panels (models/blas.h)
// when a DecodeStep packs the model, and names them as its own
// (trained_parameters). The transformer installs the hook on itself when the
// model has a correction module (cfg.correction_hidden > 0).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/attention_hook.h"
#include "models/block.h"

namespace zl {

class CorrectionHook : public AttentionHook {
 public:
  // Each layer's block, whose module and switches it applies.
  explicit CorrectionHook(std::vector<Block> blocks);
  std::string name() const override { return "correction"; }
  bool uses_mlp_input() const override { return true; }
  torch::Tensor before_mlp(const torch::Tensor& u, int64_t layer) const override;
  // Each block's mode, and oet's coefficients as CPU float32, checked against the call's rows.
  std::unique_ptr<const CallPlan> plan_call(const StepRow* rows, int64_t M, int64_t batch) const override;
  // Only on the copy for_fast_step() returns (the modules packed).
  void before_mlp_rows(float* u, int64_t M, int64_t C, const MlpRows& site) const override;
  std::shared_ptr<const AttentionHook> for_fast_step() const override;
  std::vector<torch::Tensor> trained_parameters() const override;

 private:
  struct Packed {  // one layer's module: c = s·sigmoid(W2·gelu(W1·u + b1) + b2)
    std::vector<float> fc, out;        // W1 [Hc,C], W2 [C,Hc] as panels
    std::vector<float> fc_b, out_b;    // b1 [Hc], b2 [C]
    int64_t hidden = 0;
    float scale = 1;                   // s
  };
  // Module mode on the fast step: u ← u·c from the packed module of `layer`.
  void apply_module(float* u, int64_t M, int64_t C, const Packed& p, const RowsProduct& product) const;
  std::vector<Block> blocks_;
  std::vector<Packed> packed_;  // per layer; empty but on the fast step's copy
};

}  // namespace zl
