#include "datasets/spm_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>

namespace zl {
namespace {

template <class F>
F symbol(void* lib, const char* name, const std::string& path) {
  void* f = dlsym(lib, name);
  if (!f) throw std::runtime_error(path + ": missing symbol " + name);
  return reinterpret_cast<F>(f);
}

SpmLibrary load_library() {
  const char* env = std::getenv("ZL_SPM_MODULE");
  const std::string path = env && *env ? env : ZL_SPM_MODULE;
#ifdef ZL_SANITIZE
  // The sanitizers' runtime refuses RTLD_DEEPBIND (it would bypass their
  // malloc); the module then binds to the process's symbols first.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
#else
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
#endif
  if (!lib) throw std::runtime_error("cannot load the SentencePiece module " + path + ": " + dlerror());
  SpmLibrary s;
  s.train = symbol<decltype(s.train)>(lib, "zl_spm_train", path);
  s.load = symbol<decltype(s.load)>(lib, "zl_spm_load", path);
  s.encode = symbol<decltype(s.encode)>(lib, "zl_spm_encode", path);
  s.piece_size = symbol<decltype(s.piece_size)>(lib, "zl_spm_piece_size", path);
  s.eos_id = symbol<decltype(s.eos_id)>(lib, "zl_spm_eos_id", path);
  s.piece = symbol<decltype(s.piece)>(lib, "zl_spm_piece", path);
  s.release = symbol<decltype(s.release)>(lib, "zl_spm_release", path);
  s.free = symbol<decltype(s.free)>(lib, "zl_spm_free", path);
  return s;
}

}  // namespace

const SpmLibrary& SpmLibrary::get() {
  static const SpmLibrary lib = load_library();
  return lib;
}

}  // namespace zl
