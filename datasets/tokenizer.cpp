// Tokenizer factory by name, for reopening the tokenizer a checkpoint names,
// and the UTF-8 check of text a user hands a tokenizer.
#include <cstdint>
#include <stdexcept>

#include "datasets/tokenizer.h"

namespace zl {

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& kind, const std::string& model_path) {
  if (kind == "byte") return make_byte_tokenizer();
  if (kind == "sentencepiece") return load_sentencepiece_tokenizer(model_path);
  throw std::runtime_error("unknown tokenizer kind '" + kind + "' (expected byte or sentencepiece)");
}

size_t first_invalid_utf8(const std::string& text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07, min = 0x10000;
    else return i;  // a continuation byte or 0xF8.. where a sequence should start
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string::npos;
}

}  // namespace zl
