#include "sim/runtime.h"

#include <ATen/autocast_mode.h>
#include <dlfcn.h>
#include <torch/version.h>

#include <fstream>
#include <limits>
#include <stdexcept>
#include <thread>
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace zl {

int64_t hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

void configure_runtime(int64_t n) {
#ifdef __GLIBC__
  // Blocks up to 32 MiB (glibc's ceiling) come from the heap, and the heap
  // is not trimmed: a step's activations reuse the last step's pages.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
  using SetThreads = void (*)(int);
  if (auto f = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(1);
  at::set_num_threads(static_cast<int>(n > 0 ? n : hardware_threads()));
}

ScopedThreads::ScopedThreads(int64_t n) : before_(at::get_num_threads()) {
  if (n > 0) at::set_num_threads(static_cast<int>(n));
}

ScopedThreads::~ScopedThreads() {
  if (at::get_num_threads() != before_) at::set_num_threads(before_);
}

std::string blas_name() {
  // Which shared object provides sgemm_ decides the speed of every matmul.
  void* sym = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info;
  if (sym && dladdr(sym, &info) && info.dli_fname) {
    std::string path = info.dli_fname;
    char resolved[4096];
    if (realpath(path.c_str(), resolved)) path = resolved;
    return path;
  }
  return "built-in (MKL or none)";
}

torch::Device resolve_device(const std::string& name) {
  if (name == "cpu") return torch::kCPU;
  if (name == "cuda") {
    if (!torch::cuda::is_available())
      throw std::runtime_error("train.device = cuda, but this LibTorch has no CUDA device available");
    return torch::kCUDA;
  }
  throw std::runtime_error("train.device: unknown device '" + name + "'");
}

AutocastGuard::AutocastGuard(bool enabled, const torch::Device& device) : enabled_(enabled), cuda_(device.is_cuda()) {
  if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  at::autocast::set_autocast_dtype(cuda_ ? at::kCUDA : at::kCPU, at::kBFloat16);
  at::autocast::set_autocast_enabled(cuda_ ? at::kCUDA : at::kCPU, true);
#else
  if (cuda_) {
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
  } else {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
#endif
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!enabled_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  at::autocast::set_autocast_enabled(cuda_ ? at::kCUDA : at::kCPU, false);
#else
  if (cuda_) at::autocast::set_enabled(false);
  else at::autocast::set_cpu_enabled(false);
#endif
}

}  // namespace zl
