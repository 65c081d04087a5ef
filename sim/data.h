// config → data: the corpus of a run, split, tokenized and cached under
// output.dir/cache, so a study pays for each tokenizer and token shard once.
#pragma once
#include <memory>
#include <string>

#include "datasets/corpus.h"
#include "datasets/token_shards.h"
#include "datasets/tokenizer.h"
#include "sim/config.h"

namespace zl {

struct Dataset {
  std::string corpus;
  std::shared_ptr<Tokenizer> tokenizer;
  Split docs;
  TokenStream train, val;
};

// The corpus options a data config describes (Brown from data/cache/brown).
CorpusOptions corpus_options(const DataConfig& d, const std::string& corpus);

// Loads (or builds and caches) the dataset of `corpus` with the tokenizer of
// the run's training corpus; `corpus` defaults to data.corpus. Evaluating on
// another corpus (out of distribution) keeps the training tokenizer.
Dataset prepare_data(const RunConfig& cfg, const std::string& corpus = "");

std::string cache_dir(const RunConfig& cfg);

}  // namespace zl
