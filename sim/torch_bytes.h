// LibTorch's serialisation through memory: what torch::save would write to a
// file, as bytes, and torch::load from bytes already read (and checked).
// LibTorch's file writer reports a failed write by throwing from its
// destructor, which ends the process; in memory nothing fails, and the write
// (write_file_atomically) is ours to check.
#pragma once
#include <sstream>
#include <string>

#include <torch/serialize.h>

namespace zl {

template <class T>
std::string torch_bytes(const T& value) {
  std::ostringstream out;
  torch::save(value, out);
  return out.str();
}

template <class T>
void torch_load_bytes(T& value, const std::string& bytes) {
  std::istringstream in(bytes);
  torch::load(value, in);
}

}  // namespace zl
