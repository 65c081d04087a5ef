// An advisory exclusive lock on a file (flock), for processes that share an
// output folder: study shards, two `ablate`s started on one folder, a
// `merge` beside them. The kernel drops the lock when its holder closes the
// file or dies, so a lock left by a killed process is free again at once:
// there is no stale lock to clean up, only a file. The holder writes who it
// is ("pid 1234 on host") into the file, for the messages of those who wait.
#pragma once
#include <functional>
#include <string>

namespace zl {

class FileLock {
 public:
  explicit FileLock(std::string path);  // creates the file's folder; takes no lock
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool try_lock();  // false at once when another process holds it
  // Waits. With `between_tries`, polls every 100 ms and calls it between
  // tries, so a waiter can give up (it throws) on a stop request.
  void lock(const std::function<void()>& between_tries = {});
  void unlock();
  bool held() const { return fd_ >= 0; }

  // Who holds (or last held) the lock, as that process wrote it; "" if nobody wrote.
  std::string holder() const;
  const std::string& path() const { return path_; }

 private:
  bool acquire(bool wait);
  std::string path_;
  int fd_ = -1;
};

}  // namespace zl
