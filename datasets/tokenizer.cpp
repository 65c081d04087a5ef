// Tokenizer factory by name, for reopening the tokenizer a checkpoint names.
#include <stdexcept>

#include "datasets/tokenizer.h"

namespace zl {

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& kind, const std::string& model_path) {
  if (kind == "byte") return make_byte_tokenizer();
  if (kind == "sentencepiece") return load_sentencepiece_tokenizer(model_path);
  throw std::runtime_error("unknown tokenizer kind '" + kind + "' (expected byte or sentencepiece)");
}

}  // namespace zl
