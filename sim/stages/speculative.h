// Exact speculative sampling (Leviathan et al. 2023, "Fast Inference from
// Transformers via Speculative Decoding"; Chen et al. 2023): a small draft
// model proposes `lookahead` tokens, the model scores them all in one
// forward pass, and drafted token x is kept with probability
// min(1, p(x)/q(x)); at the first rejection a token is drawn from
// norm(max(0, p − q)), and when all are kept one more is drawn from p. The
// output distribution is exactly the model's (p, after temperature, top-k
// and top-p), which is what makes it the reference beside sfvl's re-sampling
// at a raised temperature (docs/articles.md design notes).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "models/transformer.h"
#include "sim/decoder.h"

namespace zl {

struct SpeculativeStats {
  int64_t drafted = 0;       // draft tokens proposed
  int64_t accepted = 0;      // of which the model kept
  int64_t target_calls = 0;  // sequence-steps of the model (one forward per active sequence per round)
  int64_t emitted = 0;       // tokens produced (accepted + one per round)
};

// One round of the accept/reject rule for one sequence. p [γ+1,V]: the
// model's distributions at each drafted position and one past them; q [γ,V]:
// the draft's; drafted [γ]. Returns the kept tokens: the accepted prefix of
// the draft, then the token drawn from the residual (or from p[γ]).
std::vector<int64_t> accept_drafts(const torch::Tensor& p, const torch::Tensor& q, const std::vector<int64_t>& drafted,
                                   at::Generator& gen);

// The same rule on CPU float rows p [γ+1,V] and q [γ,V], with γ+1 uniforms
// u: u[j] tests draft j, u[γ] draws the last token (from the residual at a
// rejection, else from p[γ]); one uniform per test and one per draw, as
// the rule needs, drawn together.
std::vector<int64_t> accept_drafts(const float* p, const float* q, int64_t V, const std::vector<int64_t>& drafted,
                                   const float* u);

// Decodes like zl::decode (same options, prompts, timing definitions), with
// `draft` proposing `lookahead` tokens per round.
DecodeOutput speculative_decode(Transformer& model, Transformer& draft, const std::vector<std::vector<int32_t>>& prompts,
                                const DecodeOptions& opt, int64_t lookahead, at::Generator& gen,
                                SpeculativeStats& stats);

}  // namespace zl
