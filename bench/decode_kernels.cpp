// Google Benchmark of the hand-written decode step (models/decode_step.h) and
// its parts, at the shape of python/bench_decode.py (4 layers, 128 wide,
// vocabulary 1024, batch 8): where a decode step's time goes, per part.
//  - BM_PanelsProduct/N/K: one product C[8×N] = A[8×K]·Wᵀ (GFLOP/s counter);
//  - BM_DecodeStep/threads: one step at a context of 80 tokens (tok/s counter);
//  - BM_FusedStep/part/threads: the same step for fused with one part on (0
//    none, 1 key weighting by attn_mass, 2 by hidden_norm, 3 by grad_norm, 4
//    value distillation at r = D/2, 5 the gate, 6 all three as claims.ini has
//    them): what each part adds to the step;
//  - BM_TopK: the gate's top 5 of 1024 logits, for 8 rows;
//  - BM_GateParts/part: the gate's work in one step of the same shape, part
//    by part (0 the cosines of each query with its 3 most attended keys, 8
//    rows x 4 heads over 81 keys; 1 its two layers, 12 -> 32 -> 5, on the
//    step's kernels; 2 the top 5 of 1024 logits and their log factors, 8 rows;
//    3 part 0's selection alone, the top 3 of each head's 81 weights);
//  - BM_FusedRollback/tokens: attn_mass's column sums taken back by `tokens`
//    per sequence (models/kv_cache.h), every layer, batch 8 at 80 tokens;
//  - BM_Prefill/threads: 8 prompts of 32 tokens into an empty cache;
//  - BM_SampleNext: one draw per row of [8,1024] logits at temperature 0.8;
//  - BM_VerifierScore: sfvl's check of 8 windows of 5 tokens, the verifier
//    sized 1/20 of that model (its FLOPs per check are the counter).
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <vector>

#include "models/blas.h"
#include "models/decode_step.h"
#include "models/logits_gate.h"
#include "models/sampling.h"
#include "models/transformer.h"
#include "models/verifier.h"

namespace {

constexpr int64_t kBatch = 8;

void BM_PanelsProduct(benchmark::State& state) {
  const int64_t N = state.range(0), K = state.range(1);
  auto a = torch::randn({kBatch, K}), w = torch::randn({N, K}), c = torch::empty({kBatch, N});
  std::vector<float> panels(zl::panel_count(N) * K * zl::kPanel);
  zl::pack_panels(w.data_ptr<float>(), N, K, panels.data());
  for (auto _ : state) {
    zl::panels_product(kBatch, N, K, a.data_ptr<float>(), panels.data(), c.data_ptr<float>(), 0, zl::panel_count(N));
    benchmark::DoNotOptimize(c.data_ptr<float>());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kBatch * N * K * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
// qkv, attention projection, MLP in, MLP out, logits.
BENCHMARK(BM_PanelsProduct)->Args({384, 128})->Args({128, 128})->Args({512, 128})->Args({128, 512})->Args({1024, 128});

// The benchmarked model (4 layers, 128 wide, vocabulary 1024) in eval mode,
// with LibTorch's threads (and so the step's team) set to `threads`.
zl::Transformer bench_model(int64_t threads, const zl::FusedOptions& fused = {}) {
  at::set_num_threads(static_cast<int>(threads));
  torch::manual_seed(0);
  zl::ModelConfig cfg;
  cfg.vocab = 1024;
  cfg.fused = fused;
  zl::Transformer model(cfg);
  model->eval();
  return model;
}

// attn_mass's column sums and their row counts (models/kv_cache.h), to put
// back between timed steps: a step adds its query's row to the sums, and
// taking it out again is a rollback's cost (BM_FusedRollback), not a step's.
struct MassState {
  std::vector<torch::Tensor> saved;
  explicit MassState(const zl::KVCache& c) {
    for (const auto& l : c.layers)
      if (l.mass.defined()) saved.push_back(l.mass.clone()), saved.push_back(l.mass_rows.clone());
  }
  void restore(zl::KVCache& c) const {
    size_t i = 0;
    for (auto& l : c.layers)
      if (l.mass.defined()) l.mass.copy_(saved[i]), l.mass_rows.copy_(saved[i + 1]), i += 2;
  }
};

// One step at a context of 80 tokens, the same context every iteration.
void time_steps(benchmark::State& state, zl::Transformer& model) {
  zl::DecodeStep step(model);
  auto cache = model->make_cache(kBatch);
  model->forward(torch::randint(model->cfg.vocab, {kBatch, 80}, torch::kLong), cache);
  cache.lengths.fill_(80);
  const MassState mass(cache);
  std::vector<int64_t> tokens(kBatch, 7);
  for (auto _ : state) {
    auto logits = step.forward(tokens, cache);
    benchmark::DoNotOptimize(logits.data_ptr<float>());
    cache.lengths -= 1;  // the same context every iteration
    if (mass.saved.empty()) continue;
    state.PauseTiming();
    mass.restore(cache);
    state.ResumeTiming();
  }
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(kBatch * state.iterations()),
                                               benchmark::Counter::kIsRate);
}

void BM_DecodeStep(benchmark::State& state) {
  torch::NoGradGuard no_grad;
  auto model = bench_model(state.range(0));
  time_steps(state, model);
}
BENCHMARK(BM_DecodeStep)->Arg(1)->Arg(2)->UseRealTime();

void BM_FusedStep(benchmark::State& state) {
  using F = zl::FusedOptions;
  torch::NoGradGuard no_grad;
  const int64_t part = state.range(0);
  F o;
  if (part == 1 || part == 6) o.key_weighting = F::KeyWeighting::Scale;
  if (part == 2 || part == 3) o.key_weighting = F::KeyWeighting::Scale;
  if (part == 2) o.importance = F::Importance::HiddenNorm;
  if (part == 3) o.importance = F::Importance::GradNorm;
  if (part == 4 || part == 6) o.value_rank = zl::ModelConfig{}.head_dim() / 2;
  if (part == 5 || part == 6) o.gate = true;
  auto model = bench_model(state.range(1), o);
  time_steps(state, model);
}
BENCHMARK(BM_FusedStep)->ArgsProduct({benchmark::CreateDenseRange(0, 6, 1), {1, 2}})->UseRealTime();

void BM_Prefill(benchmark::State& state) {
  torch::NoGradGuard no_grad;
  auto model = bench_model(state.range(0));
  std::vector<std::vector<int32_t>> prompts(kBatch, std::vector<int32_t>(32, 7));
  zl::DecodeStep step(model);
  auto cache = model->make_cache(kBatch);
  for (auto _ : state) {
    auto logits = step.prefill(prompts, cache);
    benchmark::DoNotOptimize(logits.data_ptr<float>());
  }
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(kBatch * 32 * state.iterations()),
                                               benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Prefill)->Arg(1)->Arg(2)->UseRealTime();

void BM_SampleNext(benchmark::State& state) {
  auto logits = torch::randn({kBatch, 1024}) * 3;
  auto gen = zl::make_generator(1);
  for (auto _ : state) {
    auto next = zl::sample_next(logits, {0.8, 0, 1.0}, gen);
    benchmark::DoNotOptimize(next.data_ptr<int64_t>());
  }
}
BENCHMARK(BM_SampleNext);

void BM_VerifierScore(benchmark::State& state) {
  auto model = bench_model(1);
  const auto target = static_cast<int64_t>(model->parameter_count() / 20);
  zl::Verifier verifier(zl::VerifierConfig::sized_for(model->cfg.vocab, 5, target));
  verifier->eval();
  auto windows = torch::randint(model->cfg.vocab, {kBatch, 5}, torch::kLong);
  for (auto _ : state) {
    auto scores = verifier->score(windows);
    benchmark::DoNotOptimize(scores.data_ptr<float>());
  }
  state.counters["width"] = static_cast<double>(verifier->cfg.width);
  state.counters["GFLOP/s"] = benchmark::Counter(verifier->cfg.flops_per_check() * kBatch * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_VerifierScore);

void BM_TopK(benchmark::State& state) {
  auto x = torch::randn({8, 1024}) * 3;
  std::vector<int64_t> top(5);
  for (auto _ : state) {
    for (int r = 0; r < 8; ++r) zl::top_k(x.data_ptr<float>() + r * 1024, 1024, 5, top.data());
    benchmark::DoNotOptimize(top.data());
  }
}
BENCHMARK(BM_TopK);

void BM_GateParts(benchmark::State& state) {
  constexpr int64_t kHeads = 4, kD = 32, kKeys = 3, kSeen = 81, kVocab = 1024, kHidden = 32, kTop = 5;
  const int64_t part = state.range(0);
  auto q = torch::randn({kBatch, kHeads, kD}), K = torch::randn({kBatch, kHeads, kSeen, kD});
  auto w = torch::softmax(torch::randn({kBatch, kHeads, kSeen}) * 3, -1);
  auto features = torch::randn({kBatch, kHeads * kKeys}), logits = torch::randn({kBatch, kVocab}) * 3;
  auto w1 = torch::randn({kHidden, kHeads * kKeys}), w2 = torch::randn({kTop, kHidden});
  std::vector<float> p1(zl::panel_count(kHidden) * kHeads * kKeys * zl::kPanel), p2(zl::panel_count(kTop) * kHidden * zl::kPanel);
  zl::pack_panels(w1.data_ptr<float>(), kHidden, kHeads * kKeys, p1.data());
  zl::pack_panels(w2.data_ptr<float>(), kTop, kHidden, p2.data());
  // Outputs of 30 give log factors of about −1e−13, which leave the logits
  // as they are: every iteration selects over the same values.
  std::vector<float> hidden(kBatch * kHidden), out(kBatch * kTop, 30.0f), cos(kBatch * kHeads * kKeys);
  std::vector<int64_t> top(kTop);
  const float *qp = q.data_ptr<float>(), *kp = K.data_ptr<float>(), *wp = w.data_ptr<float>();
  float* lp = logits.data_ptr<float>();
  for (auto _ : state) {
    for (int64_t r = 0; r < kBatch; ++r) {
      if (part == 0)
        for (int64_t h = 0, rh = r * kHeads; h < kHeads; ++h, ++rh)
          zl::gate_cosines(qp + rh * kD, kp + rh * kSeen * kD, wp + rh * kSeen, kSeen, kD, kKeys, top.data(),
                           cos.data() + rh * kKeys);
      if (part == 3)  // part 0's selection alone
        for (int64_t h = 0, rh = r * kHeads; h < kHeads; ++h, ++rh) zl::top_k(wp + rh * kSeen, kSeen, kKeys, top.data());
      if (part == 2) zl::gate_candidates(lp + r * kVocab, kVocab, out.data() + r * kTop, kTop, top.data());
    }
    if (part == 1) {
      zl::panels_product(kBatch, kHidden, kHeads * kKeys, features.data_ptr<float>(), p1.data(), hidden.data(), 0, 1);
      zl::gelu_inplace(hidden.data(), kBatch * kHidden);
      zl::panels_product(kBatch, kTop, kHidden, hidden.data(), p2.data(), out.data(), 0, 1);
    }
    benchmark::DoNotOptimize(cos.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_GateParts)->DenseRange(0, 3);

void BM_FusedRollback(benchmark::State& state) {
  torch::NoGradGuard no_grad;
  zl::FusedOptions o;
  o.key_weighting = zl::FusedOptions::KeyWeighting::Scale;
  auto model = bench_model(1, o);
  const int64_t dropped = state.range(0);
  auto cache = model->make_cache(kBatch);
  model->forward(torch::randint(model->cfg.vocab, {kBatch, 80 + dropped}, torch::kLong), cache);
  const MassState fed(cache);
  for (auto _ : state) {
    for (auto& l : cache.layers)
      for (int64_t b = 0; b < kBatch; ++b) l.sync_mass(b, 80);
    benchmark::DoNotOptimize(cache.layers[0].mass.data_ptr<float>());
    state.PauseTiming();
    fed.restore(cache);
    state.ResumeTiming();
  }
}
BENCHMARK(BM_FusedRollback)->Arg(1)->Arg(4)->UseRealTime();

}  // namespace
