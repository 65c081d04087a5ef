// Google Benchmark of one training step's update (sim/optimizer.h) on the
// claims study's model (4 x 128, vocabulary 1024: 0.94M parameters in 38
// tensors), 2 threads: BM_OptimizerUpdate/0 is LibTorch's zero_grad,
// clip_grad_norm_ and AdamW::step, /1 the fused clip_step and drop_grads.
// Gradients are refreshed outside the timed region.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "models/factory.h"
#include "sim/optimizer.h"

namespace {

void BM_OptimizerUpdate(benchmark::State& state) {
  torch::set_num_threads(2);
  zl::ModelConfig mc;
  mc.vocab = 1024;
  auto model = zl::make_model("baseline", mc);
  zl::TrainConfig t;
  auto optim = zl::make_optimizer(model, t);
  const bool fused = state.range(0) == 1;
  std::vector<torch::Tensor> params = model->parameters();
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) grads.push_back(torch::randn_like(p));
  for (auto _ : state) {
    state.PauseTiming();
    for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[i].clone();
    state.ResumeTiming();
    if (fused) {
      zl::clip_step(optim, 1.0);
      zl::drop_grads(optim);
    } else {
      torch::nn::utils::clip_grad_norm_(params, 1.0);
      optim.step();
      optim.zero_grad();
    }
  }
}
BENCHMARK(BM_OptimizerUpdate)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
