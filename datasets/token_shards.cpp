#include "datasets/token_shards.h"

#include <cstring>
#include <stdexcept>

#include "datasets/cache_file.h"

namespace zl {
namespace {

// File layout: magic "ZLTOK1\0\0", int64 count, int64 text_bytes, int32[count].
constexpr char kMagic[8] = {'Z', 'L', 'T', 'O', 'K', '1', 0, 0};

// A shard's tokens from its bytes, or why they are not a shard.
std::string parse_shard(const std::string& bytes, TokenStream& out) {
  int64_t count = 0, text_bytes = 0;
  if (bytes.size() < 24 || bytes.compare(0, 8, std::string(kMagic, 8)) != 0) return "not a zerolayer token shard";
  std::memcpy(&count, bytes.data() + 8, 8);
  std::memcpy(&text_bytes, bytes.data() + 16, 8);
  if (count < 0 || text_bytes < 0 || static_cast<uint64_t>(count) != (bytes.size() - 24) / 4 || bytes.size() % 4 != 0)
    return "truncated or overlong: " + std::to_string(bytes.size()) + " bytes for " + std::to_string(count) + " tokens";
  out.tokens = torch::empty({count}, torch::kInt);
  std::memcpy(out.tokens.data_ptr<int32_t>(), bytes.data() + 24, static_cast<size_t>(count) * 4);
  out.text_bytes = text_bytes;
  return "";
}

std::string shard_bytes(const TokenStream& s) {
  const int64_t count = s.tokens.numel();
  std::string bytes(24 + static_cast<size_t>(count) * 4, '\0');
  std::memcpy(bytes.data(), kMagic, 8);
  std::memcpy(bytes.data() + 8, &count, 8);
  std::memcpy(bytes.data() + 16, &s.text_bytes, 8);
  std::memcpy(bytes.data() + 24, s.tokens.data_ptr<int32_t>(), static_cast<size_t>(count) * 4);
  return bytes;
}

}  // namespace

TokenStream encode_documents(const std::vector<Document>& docs, const Tokenizer& tok, const std::string& cache_path) {
  TokenStream s;
  if (!cache_path.empty()) {
    auto cached = read_cache_file(cache_path, [](const std::string& bytes) {
      TokenStream read;
      const std::string why = parse_shard(bytes, read);
      if (!why.empty()) throw std::runtime_error(why);
      return read;
    });
    if (cached) return std::move(*cached);
  }
  std::vector<int32_t> ids;
  for (const auto& d : docs) {
    auto part = tok.encode(d.text);
    ids.insert(ids.end(), part.begin(), part.end());
    ids.push_back(tok.eos_id());
    s.text_bytes += static_cast<int64_t>(d.text.size());
  }
  s.tokens = torch::from_blob(ids.data(), {static_cast<int64_t>(ids.size())}, torch::kInt).clone();
  if (!cache_path.empty()) publish_cache_file(cache_path, shard_bytes(s));
  return s;
}

}  // namespace zl
