// Byte-level tokenizer: each byte is its own id, plus one end-of-document id.
#include <stdexcept>

#include "datasets/tokenizer.h"

namespace zl {
namespace {

constexpr int32_t kByteEos = 256;

class ByteTokenizer final : public Tokenizer {
 public:
  std::vector<int32_t> encode(const std::string& text) const override {
    std::vector<int32_t> ids;
    ids.reserve(text.size());
    for (unsigned char c : text) ids.push_back(static_cast<int32_t>(c));
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text;
    text.reserve(ids.size());
    for (int32_t id : ids) {
      if (id < 0 || id > kByteEos)
        throw std::out_of_range("byte tokenizer: id " + std::to_string(id) + " outside [0, 257)");
      // eos separates documents; it carries no text.
      if (id != kByteEos) text.push_back(static_cast<char>(id));
    }
    return text;
  }

  int64_t vocab_size() const override { return kByteEos + 1; }
  int32_t eos_id() const override { return kByteEos; }
  std::string kind() const override { return "byte"; }
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_tokenizer() { return std::make_unique<ByteTokenizer>(); }

}  // namespace zl
