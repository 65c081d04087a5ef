// libFuzzer harness (issue 16): the tokenizers on arbitrary bytes. Both are
// exact (bytes, and SentencePiece with byte fallback and no normalisation),
// so for any input, encode gives ids inside the vocabulary, never eos, and
// decode gives the input back; decode of arbitrary ids gives text or throws
// std::out_of_range naming the id. Anything else, a crash or undefined
// behaviour is a finding.
//
// In this build there is no LibTorch, hence no second protobuf: the
// SentencePiece module loads without RTLD_DEEPBIND, which AddressSanitizer
// refuses (datasets/spm_library.cpp), so ASan watches it too.
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/tokenizer.h"

namespace {

std::unique_ptr<zl::Tokenizer> byte_tok, sp_tok;

// Text enough for a 320-piece BPE vocabulary: words, punctuation, numbers,
// indentation and a few multi-byte characters, from a fixed seed.
std::vector<std::string> training_text() {
  const char* words[] = {"the", "party", "shall", "pay", "within", "days", "of", "notice", "agreement", "section",
                         "Licensee", "may", "not", "terminate", "§", "café", "—", "(a)", "1.", "2,500"};
  std::mt19937 rng(16);
  std::vector<std::string> docs;
  for (int d = 0; d < 200; ++d) {
    std::string doc;
    for (int w = 0; w < 120; ++w) {
      doc += words[rng() % (sizeof words / sizeof *words)];
      doc += rng() % 9 == 0 ? "\n    " : " ";
    }
    docs.push_back(doc);
  }
  return docs;
}

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

void check_round_trip(const zl::Tokenizer& tok, const std::string& text) {
  const std::vector<int32_t> ids = tok.encode(text);
  for (int32_t id : ids)
    if (id < 0 || id >= tok.vocab_size() || id == tok.eos_id())
      finding("id outside the text vocabulary", tok.kind() + " id " + std::to_string(id));
  if (tok.decode(ids) != text) finding("round trip changed the text", tok.kind());
}

void check_decode(const zl::Tokenizer& tok, const uint8_t* data, size_t size) {
  std::vector<int32_t> ids(size / 4);
  if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
  try {
    tok.decode(ids);
  } catch (const std::out_of_range& e) {
    if (std::string(e.what()).find(" id ") == std::string::npos) finding("error without the id", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / "zl_fuzz_tok_XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) finding("mkdtemp failed", dir);
  byte_tok = zl::make_byte_tokenizer();
  sp_tok = zl::make_sentencepiece_tokenizer(training_text(), 320, dir + "/sp.model");  // held in memory
  fs::remove_all(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const zl::Tokenizer* tok : {byte_tok.get(), sp_tok.get()}) {
    check_round_trip(*tok, text);
    check_decode(*tok, data, size);
  }
  return 0;
}
