// Variant contrastive: contrastive search (Su et al., "A Contrastive
// Framework for Neural Text Generation", NeurIPS 2022, §3.2), a decode-time
// method on the baseline's checkpoint (it shares the baseline's train_id),
// set beside the fused logits gate, which also reranks the top candidates by
// cosine similarities (issue 13). At step t, among V(k), the k most probable
// next tokens,
//
//   x_t = argmax_{v in V(k)}  (1 − α)·p(v | x<t) − α·max_{j<t} cos(h_v, h_{x_j})
//
// where h_v is the candidate's own hidden state (the model run on x<t and v)
// and h_{x_j} those of the context's tokens, prompt included. The first term
// is the model's confidence, the second the degeneration penalty: a candidate
// whose representation repeats one already in the context loses. α = 0 is
// greedy decoding; the search is deterministic, so decode.temperature, top_k
// and top_p do not apply (and are not part of the run's identity).
//
// Readings of the paper, documented here:
// - h is the last layer's output after the final LayerNorm, the vector the LM
//   head reads (HF's GPT-2 `hidden_states[-1]` is the same tensor).
// - p is the softmax of the logits at temperature 1.
// - The k candidates are run in one batched forward: the KV cache holds k
//   rows per sequence (every row the same context), each candidate is fed on
//   its own row, and after the choice the chosen row's new K/V slot is copied
//   to its siblings, so each step costs one forward of B·k rows and the
//   chosen candidate's forward gives the next step's distribution. The cache
//   is thus k times the baseline's per sequence, plus one hidden vector per
//   context token: kv_bytes_per_token counts both, from the tensors.
// - Defaults k = 8, α = 0.6: the paper's setting for its document
//   generation experiments (GPT-2 on Wikitext-103; the authors' SimCTG
//   README reproduces the paper's Table 3 with beam_width 8, alpha 0.6).
//
// It runs on the reference (LibTorch) step: the hand-written fast step
// serves one token per sequence and has no hidden-state output.
#pragma once
#include <memory>

#include "sim/stages/variant.h"

namespace zl {

struct ContrastiveOptions {
  int64_t k = 8;
  double alpha = 0.6;
};

// The rule of §3.2 for one step of B sequences: p [B,K] the candidates'
// probabilities, h [B,K,C] their hidden states, context [B,S,C] the hidden
// states of the context's tokens, of which the first context_len[b] ([B]
// int64, each >= 1) are sequence b's. Returns [B] int64, the index of the
// chosen candidate; ties go to the lower index (the more probable one).
torch::Tensor contrastive_choice(const torch::Tensor& p, const torch::Tensor& h, const torch::Tensor& context,
                                 const torch::Tensor& context_len, double alpha);

// Contrastive search over every prompt (in batches of opt.batch; opt.sampling
// is not read). Prompts longer than model.context − max_new_tokens keep their
// last tokens, and eos ends a sequence, as in decode().
DecodeOutput contrastive_decode(Transformer& model, const std::vector<std::vector<int32_t>>& prompts,
                                const DecodeOptions& opt, const ContrastiveOptions& search);

std::unique_ptr<VariantStage> make_contrastive_stage(const RunConfig& cfg);

}  // namespace zl
