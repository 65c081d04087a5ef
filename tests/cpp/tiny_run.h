// The tiny run the C++ tests train end to end, in one place: a byte
// tokenizer over 60 contracts, one layer of width 16 over 32 tokens, three
// steps of two sequences, one validation batch, nothing printed. A test that
// needs more (steps, a variant, a branch) sets those fields after it.
#pragma once
#include <string>

#include "sim/config.h"

namespace zl {

inline RunConfig tiny_run(const std::string& dir) {
  RunConfig c;
  c.data.tokenizer = "byte";
  c.data.documents = 60;
  c.model.layers = 1;
  c.model.heads = 2;
  c.model.dim = 16;
  c.model.context = 32;
  c.train.steps = 3;
  c.train.warmup = 1;
  c.train.batch = 2;
  c.train.eval_every = 3;
  c.train.eval_batches = 1;
  c.output.dir = dir;
  c.output.verbosity = 0;
  return c;
}

}  // namespace zl
