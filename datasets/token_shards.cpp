#include "datasets/token_shards.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <unistd.h>

namespace zl {
namespace {

// File layout: magic "ZLTOK1\0\0", int64 count, int64 text_bytes, int32[count].
constexpr char kMagic[8] = {'Z', 'L', 'T', 'O', 'K', '1', 0, 0};

bool read_cache(const std::string& path, TokenStream& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char magic[8];
  int64_t count = 0, bytes = 0;
  in.read(magic, 8).read(reinterpret_cast<char*>(&count), 8).read(reinterpret_cast<char*>(&bytes), 8);
  if (!in || std::string(magic, 8) != std::string(kMagic, 8) || count < 0)
    throw std::runtime_error(path + ": not a zerolayer token shard (delete it to rebuild)");
  out.tokens = torch::empty({count}, torch::kInt);
  in.read(reinterpret_cast<char*>(out.tokens.data_ptr<int32_t>()), count * 4);
  if (!in) throw std::runtime_error(path + ": token shard is truncated (delete it to rebuild)");
  out.text_bytes = bytes;
  return true;
}

void write_cache(const std::string& path, const TokenStream& s) {
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    int64_t count = s.tokens.numel();
    out.write(kMagic, 8).write(reinterpret_cast<const char*>(&count), 8).write(reinterpret_cast<const char*>(&s.text_bytes), 8);
    out.write(reinterpret_cast<const char*>(s.tokens.data_ptr<int32_t>()), count * 4);
    if (!out) throw std::runtime_error(tmp + ": cannot write token shard");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error(path + ": cannot publish token shard");
}

}  // namespace

TokenStream encode_documents(const std::vector<Document>& docs, const Tokenizer& tok, const std::string& cache_path) {
  TokenStream s;
  if (!cache_path.empty() && read_cache(cache_path, s)) return s;
  std::vector<int32_t> ids;
  for (const auto& d : docs) {
    auto part = tok.encode(d.text);
    ids.insert(ids.end(), part.begin(), part.end());
    ids.push_back(tok.eos_id());
    s.text_bytes += static_cast<int64_t>(d.text.size());
  }
  s.tokens = torch::from_blob(ids.data(), {static_cast<int64_t>(ids.size())}, torch::kInt).clone();
  if (!cache_path.empty()) write_cache(cache_path, s);
  return s;
}

}  // namespace zl
