// Tokenizers: text <-> token ids (docs/design.md#data-and-the-checker).
//
// Two kinds behind one interface:
//   - "byte": ids 0..255 are the bytes themselves, 256 is end-of-document.
//     No training, no file; for tests and speed comparisons.
//   - "sentencepiece": a BPE model trained on the training split (Debian's
//     libsentencepiece), vocabulary 1024 by default, so that the verifier's
//     5-token window spans a few words as it would in a large model.
//
// Both are byte-exact: decode(encode(x)) == x for any byte string x (ASCII
// text with newlines and runs of spaces, and also non-UTF-8 bytes from the
// license files). The end-of-document id separates documents in token
// streams; it is never produced by encode and decodes to nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace zl {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<int32_t> encode(const std::string& text) const = 0;
  // Throws std::out_of_range on an id outside [0, vocab_size()).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int32_t eos_id() const = 0;    // separates documents in token streams
  virtual std::string kind() const = 0;  // "byte" or "sentencepiece"
  // Where a trained model lives, so a checkpoint can name it; "" for byte.
  virtual std::string model_path() const { return ""; }
};

// The byte offset of the first byte of `text` that is not part of valid
// UTF-8 (overlong forms, surrogates and code points past U+10FFFF are
// invalid), or std::string::npos when it is all valid. SentencePiece would
// silently map such bytes to <unk>; callers that take text from a user say so.
size_t first_invalid_utf8(const std::string& text);

// 256 byte ids + eos (256) = 257.
std::unique_ptr<Tokenizer> make_byte_tokenizer();

// Default vocabulary of the SentencePiece model (docs/design.md#data-and-the-checker).
constexpr int64_t kDefaultSentencePieceVocab = 1024;

// Loads the SentencePiece BPE model at `cache_path` if that file exists and
// is intact; otherwise trains one on `train_docs` (at most a few MB of them,
// sampled deterministically) and publishes it there as a cache file
// (datasets/cache_file.h), so two processes racing on the same cache both
// end with a whole file, and a damaged one is set aside and trained again.
// Throws std::runtime_error naming the file when it cannot be written or is
// of another vocabulary size, and when training fails (e.g. too little text
// for `vocab_size`).
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::vector<std::string>& train_docs,
                                                        int64_t vocab_size,
                                                        const std::string& cache_path);
// The same, loading the training text only when the model must be trained.
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::function<std::vector<std::string>()>& train_docs,
                                                        int64_t vocab_size, const std::string& cache_path);

// Loads an existing SentencePiece model file (no training). Throws
// std::runtime_error naming the file when it is missing, corrupt, or not one
// of ours (a model without byte fallback cannot round-trip every byte).
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::string& model_path);

// Reopens a tokenizer recorded in a checkpoint: kind "byte" (model_path
// ignored) or "sentencepiece" (model_path must be a model file). Throws
// std::runtime_error naming the file, or the kind when it is unknown.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& kind, const std::string& model_path);

}  // namespace zl
