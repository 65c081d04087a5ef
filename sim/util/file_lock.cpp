#include "sim/util/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace zl {
namespace fs = std::filesystem;

FileLock::FileLock(std::string path) : path_(std::move(path)) {
  const fs::path parent = fs::path(path_).parent_path();
  if (!parent.empty()) fs::create_directories(parent);
}

FileLock::~FileLock() { unlock(); }

bool FileLock::acquire(bool wait) {
  if (fd_ >= 0) return true;
  const int fd = ::open(path_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path_ + ": cannot open lock file: " + std::strerror(errno));
  int rc;
  do rc = ::flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    ::close(fd);
    if (!wait && err == EWOULDBLOCK) return false;
    throw std::runtime_error(path_ + ": cannot lock: " + std::strerror(err));
  }
  fd_ = fd;
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const std::string me = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    // The lock holds without the note; only the waiters' messages lose the holder's name.
  }
  return true;
}

bool FileLock::try_lock() { return acquire(false); }
void FileLock::lock(const std::function<void()>& between_tries) {
  if (!between_tries) {
    acquire(true);
    return;
  }
  while (!acquire(false)) {
    between_tries();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void FileLock::unlock() {
  if (fd_ < 0) return;
  ::close(fd_);  // closing releases the flock
  fd_ = -1;
}

std::string FileLock::holder() const {
  std::ifstream in(path_);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace zl
