// The tiny models the C++ tests build, in one place. A test that needs
// another shape starts from one of these and sets the field it needs, so that
// the difference shows where it matters:
//   ModelConfig c = tiny_model();
//   c.context = 64;  // room for 48 new tokens after a 16-token prompt
#pragma once
#include <torch/torch.h>

#include <cstdint>

#include "models/model_config.h"
#include "models/transformer.h"

namespace zl {

// V 50, L 2, H 2, C 16 (D 8), T_max 24: more than one layer and one head, so
// that a slip between layers or heads shows, and a forward pass takes
// microseconds. Every variant's switch is off (ModelConfig's defaults).
inline ModelConfig tiny_model() {
  ModelConfig c;
  c.vocab = 50;
  c.layers = 2;
  c.heads = 2;
  c.dim = 16;
  c.context = 24;
  return c;
}

// The same model with four heads of the same width (C 32, D 8): for the
// per-head paths (a head's cached rows, its own eviction order, a latent
// shared by more heads than one) and weights that span several panels of
// models/blas.h (kPanel = 32 columns) in the fast decode step.
inline ModelConfig tiny_model_four_heads() {
  ModelConfig c = tiny_model();
  c.heads = 4;
  c.dim = 32;
  return c;
}

// Transformer(cfg) drawn right after torch::manual_seed(seed): the same
// weights, and the same generator state for the draws that follow.
inline Transformer tiny_transformer(uint64_t seed, const ModelConfig& cfg = tiny_model()) {
  torch::manual_seed(seed);
  return Transformer(cfg);
}

}  // namespace zl
