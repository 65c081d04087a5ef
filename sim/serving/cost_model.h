// What a scheduler step costs, for the serving simulator (sim/serving/simulator.h):
// the shape of the step (which requests it feeds, how many tokens each, at
// which context) in, its duration out. Two models implement it: one
// calibrated on this machine's real decode step (sim/serving/calibration.h,
// as Vidur profiles each operator), and a roofline per named accelerator
// (sim/serving/roofline.h) whose figures are projections.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace zl {

struct StepShape {
  struct Part {
    int64_t tokens = 0;    // tokens fed for one request in this step (1: a decode; more: a prefill chunk)
    int64_t context = 0;   // tokens of that request already in the KV cache before the step
    bool samples = false;  // the step ends its known tokens, so a token is sampled (and reviewed, for sfvl)
    // Keys its rows attend: row t of t tokens at context c sees c + t + 1.
    int64_t keys() const { return tokens * context + tokens * (tokens + 1) / 2; }
  };
  std::vector<Part> parts;
  // The step follows an idle wait: on this CPU the decode step's thread team
  // has gone to sleep and its caches have cooled (models/spin_team.h), a
  // cost of its own that a GPU would not have.
  bool after_idle = false;
  // What recent prefills left in this CPU's caches, in place of the
  // weights (their activations and new KV rows): the tokens the step before
  // prefilled, and those prefilled further back, halved for each step
  // further (integer halving; both 0 after an idle wait). Measured: a
  // decode step straight after a 128-token prefill costs 40-60% more than
  // one after a decode, the next 5-25%, the next 7%, then 4.5%, 2%...
  std::array<int64_t, 2> prefilled_before{0, 0};
  int64_t tokens() const;        // Σ tokens
  int64_t prefill_tokens() const;  // Σ tokens of the parts with tokens > 1 or context == 0
  int64_t decodes() const;         // parts that are single-token decodes at context > 0
  int64_t keys() const;            // Σ Part::keys()
  int64_t samples() const;         // parts that sample
};

class StepCostModel {
 public:
  virtual ~StepCostModel() = default;
  // The step's duration in ns (>= 1).
  virtual int64_t step_ns(const StepShape& step) const = 0;
  // What the figures are: "calibrated" here, or "projected" on named hardware.
  virtual std::string kind() const = 0;
};

// Another model's steps, each `factor` times as long: how far a figure moves
// per share of step time (its sensitivity: near saturation a queue turns 1%
// of step time into tens of % of TTFT), or a what-if on a faster machine.
class ScaledCost : public StepCostModel {
 public:
  ScaledCost(const StepCostModel& base, double factor) : base_(base), factor_(factor) {}
  int64_t step_ns(const StepShape& step) const override;
  std::string kind() const override { return base_.kind(); }

 private:
  const StepCostModel& base_;
  double factor_;
};

}  // namespace zl
