// Token shards: a corpus split encoded once into one flat int32 stream with an
// eos token between documents, cached on disk (a cache file: published whole
// with its checksum) so that every run of a study reads the same tokens.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "datasets/corpus.h"
#include "datasets/tokenizer.h"

namespace zl {

struct TokenStream {
  torch::Tensor tokens;  // [N] int32, documents separated by eos
  int64_t text_bytes = 0;  // bytes of the text encoded (for bits per byte)
};

// Encodes docs (or loads `cache_path` if it exists and is intact; a damaged
// one is set aside and encoded again).
TokenStream encode_documents(const std::vector<Document>& docs, const Tokenizer& tok, const std::string& cache_path);

}  // namespace zl
