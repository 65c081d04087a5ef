// Google Benchmark of oet's per-token costs (seed 000 §2.2: "单次查表耗时仅89纳秒"):
//  - BM_TriggerStep: the Online Event Trigger fed one token (per-token cost);
//  - BM_TableLookup: one offline-table lookup (oet_lookup_ns), for the table
//    shape of ablations/sfcl.ini (3 kinds x 4 buckets, 4 layers x 128 channels)
//    and of the smoke study (2 x 32);
//  - BM_CorrectionModule: the sfcl module it replaces, one token through one
//    layer's module in LibTorch (the reference the lookup is set beside).
// Run: ./build/zl_bench (or `make bench`). Figures are per iteration.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cctype>
#include <map>
#include <random>
#include <sstream>

#include "datasets/contracts.h"
#include "datasets/contracts_checker.h"
#include "models/correction.h"
#include "models/event_trigger.h"
#include "models/offline_table.h"

namespace {

// A word-level vocabulary from contract text (the pieces a SentencePiece
// model of the corpus mostly has: " word", punctuation, digits), and the
// corpus as a stream of its ids.
struct Stream {
  std::vector<std::string> pieces;
  std::vector<int32_t> ids;
};

const Stream& contract_stream() {
  static const Stream s = [] {
    Stream out;
    zl::ContractsOptions opt;
    opt.documents = 200;
    opt.max_nesting = 5;
    std::map<std::string, int32_t> id;
    auto piece = [&](const std::string& p) {
      auto it = id.find(p);
      if (it == id.end()) {
        it = id.emplace(p, static_cast<int32_t>(out.pieces.size())).first;
        out.pieces.push_back(p);
      }
      out.ids.push_back(it->second);
    };
    for (const auto& doc : zl::generate_contracts(opt, 7)) {
      std::string word;
      for (char c : doc) {
        const bool alpha = std::isalpha(static_cast<unsigned char>(c)) != 0;
        if (alpha && (word.empty() || std::isalpha(static_cast<unsigned char>(word.back())) || word == " ")) {
          word += c;
          continue;
        }
        if (!word.empty()) piece(word);
        word.assign(1, c);
        if (!alpha && c != ' ') piece(word), word.clear();  // digits, punctuation: one piece each
      }
      if (!word.empty()) piece(word);
    }
    return out;
  }();
  return s;
}

zl::EventTrigger contract_trigger() {
  std::vector<std::string> entities = zl::contract_roles();
  for (const auto& name : zl::contract_company_names()) entities.push_back(name.substr(0, name.find(' ')));
  return zl::EventTrigger(contract_stream().pieces, entities, {"if", "unless", "provided"}, zl::TriggerOptions{});
}

void BM_TriggerStep(benchmark::State& state) {
  const auto& s = contract_stream();
  const auto trigger = contract_trigger();
  zl::TriggerState st;
  size_t i = 0;
  int64_t fired = 0;
  for (auto _ : state) {
    const uint8_t e = trigger.step(st, s.ids[i]);
    benchmark::DoNotOptimize(e);
    fired += e != 0;
    if (++i == s.ids.size()) i = 0, st = zl::TriggerState{};
  }
  state.counters["fire_rate"] = benchmark::Counter(static_cast<double>(fired) / state.iterations());
  state.counters["lexicon_bytes"] = static_cast<double>(trigger.lexicon_bytes());
}
BENCHMARK(BM_TriggerStep);

// A full table (every row observed, every entry kept) of the given shape.
zl::OfflineTable dense_table(int64_t layers, int64_t dim) {
  zl::OfflineTableBuilder b(zl::kEventKinds, 4, layers, dim);
  std::mt19937 rng(1);
  std::normal_distribution<float> n(1.0f, 0.1f);
  std::vector<float> c(static_cast<size_t>(layers * dim));
  for (int64_t r = 0; r < zl::kEventKinds * 4; ++r) {
    for (auto& x : c) x = n(rng);
    b.add(r, c.data());
  }
  return b.finish(0.0);
}

void BM_TableLookup(benchmark::State& state) {
  const auto table = dense_table(state.range(0), state.range(1));
  std::vector<float> out(static_cast<size_t>(table.cols()));
  int64_t r = 0;
  for (auto _ : state) {
    table.lookup(r, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    if (++r == table.rows()) r = 0;
  }
  state.counters["table_bytes"] = static_cast<double>(table.bytes());
}
BENCHMARK(BM_TableLookup)->Args({4, 128})->Args({2, 32});

void BM_CorrectionModule(benchmark::State& state) {
  torch::NoGradGuard no_grad;
  at::set_num_threads(1);
  zl::Correction m(state.range(0), 16, true);
  auto u = torch::randn({1, 1, state.range(0)});
  for (auto _ : state) {
    auto c = u * m->forward(u);
    benchmark::DoNotOptimize(c.data_ptr<float>());
  }
}
BENCHMARK(BM_CorrectionModule)->Arg(128);

}  // namespace

BENCHMARK_MAIN();
