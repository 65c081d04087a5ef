// Cache files: what zerolayer can always build again (a tokenizer model,
// token shards, a verifier, an offline table) but would rather not. Each is
// published whole (write_file_atomically) with its size and CRC-32 in a
// sidecar, <path>.crc32, published first: a cache is never visible without
// its checksum, so one that disagrees with its sidecar was damaged after it
// was published (a disk, a half-finished copy, a hand), and is rebuilt.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>

namespace zl {

void publish_cache_file(const std::string& path, const std::string& bytes);

// The bytes of a cache file, or nothing when there is none to use: it is
// missing, or damaged (size or CRC-32 disagree with its sidecar), in which
// case it is set aside with a warning and the caller builds it again. A file
// without a sidecar (from before checksums) is returned unchecked.
std::optional<std::string> read_cache_file(const std::string& path);

// Moves a damaged file and its sidecar aside, to <path>.corrupt and
// <path>.crc32.corrupt, and says why on stderr, so that the next reader
// builds it again and the damaged bytes stay for a post-mortem.
void set_aside_damaged(const std::string& path, const std::string& why);

// read_cache_file as `parse` reads the bytes: nothing as well when `parse` refuses
// them with a std::runtime_error (a file from before checksums, or one
// damaged together with its sidecar), and the file is then set aside with
// that reason.
template <class Parse>
auto read_cache_file(const std::string& path, Parse&& parse) -> std::optional<decltype(parse(std::string()))> {
  auto bytes = read_cache_file(path);
  if (!bytes) return std::nullopt;
  try {
    return parse(*bytes);
  } catch (const std::runtime_error& e) {
    set_aside_damaged(path, e.what());
    return std::nullopt;
  }
}

// A checksum record, as sidecars and checkpoints' state.ini hold it:
// "crc32 <8 hex digits> bytes <size>".
std::string checksum_record(const std::string& bytes);

// Empty when `bytes` are what `record` describes; otherwise why not, e.g.
// "4096 bytes where 8192 were published" or "crc32 1a2b3c4d where 5e6f7a8b was published".
std::string checksum_mismatch(const std::string& bytes, const std::string& record);

// A whole file's bytes; throws naming the file when it cannot be read.
std::string read_whole_file(const std::string& path);

}  // namespace zl
