// A scope that leaves LibTorch's global generator as it found it. Building
// and training a side model (the judge, a branch's trunk) draws from that
// generator; the run's own draws (its model's initialisation, its verifier)
// must not depend on whether this process trained the side model, loaded it,
// or has none.
#pragma once
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <mutex>

namespace zl {

class GlobalRngScope {
 public:
  GlobalRngScope() : gen_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    state_ = gen_.get_state();
  }
  ~GlobalRngScope() {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    gen_.set_state(state_);
  }
  GlobalRngScope(const GlobalRngScope&) = delete;
  GlobalRngScope& operator=(const GlobalRngScope&) = delete;

 private:
  at::Generator gen_;
  at::Tensor state_;
};

}  // namespace zl
