#include "datasets/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace zl {

namespace {

std::string this_host() {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace

std::string temporary_name(const std::string& path, const std::string& host, long pid) {
  return path + ".tmp." + host + "." + std::to_string(pid);
}

int remove_stale_temporaries(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string marker = ".tmp." + this_host() + ".";
  int removed = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t at = name.rfind(marker);
    if (at == std::string::npos || !it->is_regular_file()) continue;
    const std::string pid_text = name.substr(at + marker.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::stol(pid_text);
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask)
    removed += fs::remove(it->path(), ec);
  }
  return removed;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = temporary_name(path, this_host(), ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
  auto fail = [&](int err) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + std::strerror(err));
  };
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(n < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail(errno);
  if (::close(fd) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot publish '" + path + "': " + std::strerror(err));
  }
}

}  // namespace zl
