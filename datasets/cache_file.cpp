#include "datasets/cache_file.h"

#include <zlib.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "datasets/atomic_file.h"

namespace zl {
namespace fs = std::filesystem;

namespace {

uint32_t crc32_of(const std::string& bytes) {
  return static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<z_size_t>(bytes.size())));
}

std::string sidecar(const std::string& path) { return path + ".crc32"; }

}  // namespace

std::string checksum_record(const std::string& bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "crc32 %08" PRIx32 " bytes %zu", crc32_of(bytes), bytes.size());
  return text;
}

std::string checksum_mismatch(const std::string& bytes, const std::string& record) {
  unsigned crc = 0;
  unsigned long long size = 0;
  char tail = 0;
  if (std::sscanf(record.c_str(), "crc32 %8x bytes %llu %c", &crc, &size, &tail) != 2)
    return "its checksum record '" + record + "' is unreadable";
  if (bytes.size() != size)
    return std::to_string(bytes.size()) + " bytes where " + std::to_string(size) + " were published";
  if (crc32_of(bytes) != crc) {
    char text[80];
    std::snprintf(text, sizeof text, "crc32 %08" PRIx32 " where %08x was published", crc32_of(bytes), crc);
    return text;
  }
  return "";
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read '" + path + "'");
  return buf.str();
}

void publish_cache_file(const std::string& path, const std::string& bytes) {
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  write_file_atomically(sidecar(path), checksum_record(bytes) + "\n");
  write_file_atomically(path, bytes);
}

void set_aside_damaged(const std::string& path, const std::string& why) {
  std::error_code ec;
  fs::rename(path, path + ".corrupt", ec);
  fs::rename(sidecar(path), sidecar(path) + ".corrupt", ec);
  std::fprintf(stderr, "warning: '%s' is damaged (%s); set aside as '%s.corrupt', building it again\n", path.c_str(),
               why.c_str(), path.c_str());
}

std::optional<std::string> read_cache_file(const std::string& path) {
  if (!fs::exists(path)) return std::nullopt;
  std::string bytes = read_whole_file(path);
  if (!fs::exists(sidecar(path))) return bytes;  // published before checksums: the reader's own checks apply
  std::string record = read_whole_file(sidecar(path));
  while (!record.empty() && (record.back() == '\n' || record.back() == '\r')) record.pop_back();
  const std::string why = checksum_mismatch(bytes, record);
  if (why.empty()) return bytes;
  set_aside_damaged(path, why);
  return std::nullopt;
}

}  // namespace zl
