// Process-wide execution settings: threads, device, autocast. zerolayer sets
// its threading itself, so a user gets the fast setting without knowing that
// OpenBLAS's own thread pool fights LibTorch's (measured here: an eager GPT
// trains 1.7x faster with OpenBLAS on one thread and LibTorch on all cores).
#pragma once
#include <torch/torch.h>

#include <string>

namespace zl {

// OpenBLAS to one thread (via its runtime API, since its environment
// variable is read before main), LibTorch intra-op threads to n (0 = cores),
// and glibc's allocator set to keep freed memory for reuse: by default each
// tensor above 128 KiB-32 MiB is mapped fresh and unmapped when freed, so a
// training step page-faults its T×T scores into existing again every time
// (measured here, one thread, the bench_train shape: 5.5k tok/s against
// 12.7k with freed memory kept; page faults are dear in this VM).
void configure_runtime(int64_t n);
int64_t hardware_threads();
std::string blas_name();  // the BLAS library LibTorch's matrix products use

// LibTorch intra-op threads set to n for a scope, then set back (n = 0:
// left as they are). The real server's team is sized from them
// (models/decode_step.h), so serve.threads uses this.
class ScopedThreads {
 public:
  explicit ScopedThreads(int64_t n);
  ~ScopedThreads();
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int before_;
};

// "cpu" or "cuda"; throws naming train.device when CUDA is asked for but absent.
torch::Device resolve_device(const std::string& name);

// bf16 autocast for the scope of the guard (no-op when disabled). The
// autocast API changed in LibTorch 2.4; both are handled here.
class AutocastGuard {
 public:
  AutocastGuard(bool enabled, const torch::Device& device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_;
  bool cuda_;
};

}  // namespace zl
