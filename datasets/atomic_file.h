// Files published whole or not at all: the bytes go to a temporary file of
// this process's own (two processes publishing one file never share it), are
// checked written and synced, and are renamed over the path. A failed write
// (a full disk, a file-size limit) throws an error naming the file and the
// reason, and leaves the old file and no temporary behind.
#pragma once
#include <string>

namespace zl {

void write_file_atomically(const std::string& path, const std::string& bytes);

// The temporary a process publishes `path` through: path.tmp.<host>.<pid>.
std::string temporary_name(const std::string& path, const std::string& host, long pid);

// Removes, under `dir`, the temporaries that processes of this host left
// when they were killed (their pid is gone); a live process's are kept, and
// another host's (a shared file system) are never touched. Returns how many.
int remove_stale_temporaries(const std::string& dir);

}  // namespace zl
