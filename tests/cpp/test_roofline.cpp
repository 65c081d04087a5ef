// The serving simulator's hardware projection (sim/serving/hardware.h,
// sim/serving/roofline.h): the shipped data file, Llama 2's sizes counted by
// hand, the roofline's bounds, vLLM's KV sizing, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <string>

#include "sim/serving/hardware.h"
#include "sim/serving/roofline.h"
#include "tests/cpp/temp_dir.h"

namespace {

using zl::Accelerator;
using zl::ModelShape;
using zl::RooflineCost;
using zl::StepShape;
using zl::VariantScaling;

std::string hardware_path() {
#ifdef ZL_SOURCE_DIR
  return std::string(ZL_SOURCE_DIR) + "/ablations/hardware.ini";
#else
  return "ablations/hardware.ini";
#endif
}

const zl::HardwareCatalog& shipped() {
  static const zl::HardwareCatalog cat = zl::read_hardware(hardware_path());
  return cat;
}

// The message of the std::exception `f` throws; "" when it throws none.
std::string thrown(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

StepShape decodes(int64_t batch, int64_t context) {
  StepShape s;
  for (int64_t i = 0; i < batch; ++i) s.parts.push_back({1, context, true});
  return s;
}

StepShape prefill(int64_t tokens) {
  StepShape s;
  s.parts.push_back({tokens, 0, true});
  return s;
}

// A file holding `text`, in a fresh directory.
std::string write_file(const TempDir& dir, const std::string& text) {
  const std::string path = dir / "hardware.ini";
  std::ofstream(path) << text;
  return path;
}

const char* kGoodAccelerator =
    "[accelerator X]\n"
    "bf16_tflops = 100\nmemory_tb_s = 1\nmemory_gb = 10\ntdp_w = 100\n"
    "bandwidth_efficiency = 0.8\nflops_efficiency = 0.7\n"
    "power_idle_w = 10\npower_prefill_w = 100\npower_decode_w = 50\n"
    "source = a test\npower_source = a test\n";

TEST(Hardware, ShippedFileHoldsEveryAcceleratorAndModel) {
  const auto& cat = shipped();
  for (const char* name : {"H100-SXM", "H200-SXM", "A100-80GB-SXM", "L4"}) {
    const Accelerator& a = cat.accelerator(name);
    EXPECT_EQ(a.name, name);
    EXPECT_FALSE(a.source.empty()) << name;
    EXPECT_FALSE(a.power_source.empty()) << name;
    EXPECT_GT(a.power_prefill_w, a.power_decode_w) << name;
    EXPECT_GT(a.power_decode_w, a.power_idle_w) << name;
  }
  EXPECT_EQ(cat.accelerators.size(), 4u);
  EXPECT_DOUBLE_EQ(cat.accelerator("H100-SXM").bf16_tflops, 989);
  EXPECT_DOUBLE_EQ(cat.accelerator("H100-SXM").memory_tb_s, 3.35);
  EXPECT_DOUBLE_EQ(cat.accelerator("H200-SXM").memory_tb_s, 4.8);
  EXPECT_DOUBLE_EQ(cat.accelerator("A100-80GB-SXM").bf16_tflops, 312);
  EXPECT_DOUBLE_EQ(cat.accelerator("L4").bf16_tflops, 121);  // half of the 242 sparse figure
  // Splitwise measured A100 and H100 only: the others say how theirs were derived.
  EXPECT_TRUE(cat.accelerator("H100-SXM").power_note.empty());
  EXPECT_FALSE(cat.accelerator("H200-SXM").power_note.empty());
  EXPECT_FALSE(cat.accelerator("L4").power_note.empty());

  const ModelShape& m7 = cat.model_shape("llama2-7b");
  EXPECT_EQ(m7.layers, 32);
  EXPECT_EQ(m7.kv_heads, 32);
  const ModelShape& m70 = cat.model_shape("llama2-70b");
  EXPECT_EQ(m70.layers, 80);
  EXPECT_EQ(m70.kv_heads, 8);
  EXPECT_EQ(m70.head_dim(), 128);
  EXPECT_EQ(cat.models.size(), 2u);
}

TEST(Hardware, Llama2ParamsMatchThePublishedCounts) {
  // 7B by hand: embedding and head 2·32000·4096 = 262,144,000; per layer
  // 4·4096² = 67,108,864 attention + 3·4096·11008 = 135,266,304 MLP + 8,192
  // norms = 202,383,360, times 32 = 6,476,267,520; + the final norm 4,096.
  const ModelShape& m7 = shipped().model_shape("llama2-7b");
  EXPECT_EQ(m7.params(), 6738415616);
  EXPECT_NEAR(static_cast<double>(m7.params()), 6.74e9, 0.02 * 6.74e9);
  // 70B: embedding and head 2·32000·8192 = 524,288,000; per layer q and o
  // 2·8192² = 134,217,728, k and v 2·8192·1024 = 16,777,216, MLP
  // 3·8192·28672 = 704,643,072, norms 16,384: 855,654,400, times 80 =
  // 68,452,352,000; + the final norm 8,192.
  const ModelShape& m70 = shipped().model_shape("llama2-70b");
  EXPECT_EQ(m70.params(), 68976648192);
  EXPECT_NEAR(static_cast<double>(m70.params()), 68.98e9, 0.02 * 68.98e9);
  EXPECT_EQ(m70.weight_bytes(), 2 * m70.params());
}

TEST(Hardware, KvBytesPerToken) {
  // 2 (k, v) · layers · kv_heads · head_dim · 2 bytes.
  EXPECT_EQ(shipped().model_shape("llama2-7b").kv_bytes_per_token(), 2 * 32 * 32 * 128 * 2);  // 524288
  EXPECT_EQ(shipped().model_shape("llama2-7b").kv_bytes_per_token(), 524288);
  EXPECT_EQ(shipped().model_shape("llama2-70b").kv_bytes_per_token(), 327680);  // 2·80·8·128·2: GQA's 8x saving
}

TEST(Hardware, FlopsPerTokenCountsEachMatrixWeightTwice) {
  for (const char* name : {"llama2-7b", "llama2-70b"}) {
    const ModelShape& m = shipped().model_shape(name);
    // At no context: 2 per weight of every matrix but the embedding (a
    // gather); the norms are elementwise and left out, as cost.cpp does.
    const double norms = static_cast<double>(m.dim) * (2 * m.layers + 1);
    const double matmul = static_cast<double>(m.params()) - static_cast<double>(m.vocab * m.dim) - norms;
    EXPECT_DOUBLE_EQ(m.flops_per_token(0), 2 * matmul) << name;
    // Each key adds a score and a mix per layer: 2·2·layers·dim.
    EXPECT_DOUBLE_EQ(m.flops_per_token(1000) - m.flops_per_token(0), 4.0 * m.layers * m.dim * 1000) << name;
  }
}

TEST(Roofline, BatchOneDecodeIsBoundByReadingTheWeights) {
  const Accelerator& h100 = shipped().accelerator("H100-SXM");
  const ModelShape& m7 = shipped().model_shape("llama2-7b");
  RooflineCost cost(h100, m7, {});
  EXPECT_EQ(cost.kind(), "projected");
  const auto t = cost.terms(decodes(1, 128));
  EXPECT_TRUE(t.memory_bound());
  const double weights_ns = static_cast<double>(m7.weight_bytes()) / (3.35e12 * 0.8) * 1e9;  // ~5.03 ms
  EXPECT_NEAR(static_cast<double>(cost.step_ns(decodes(1, 128))), weights_ns, 0.01 * weights_ns);
  EXPECT_GT(cost.step_ns(decodes(1, 128)), 4'900'000);
  EXPECT_LT(cost.step_ns(decodes(1, 128)), 5'200'000);
}

TEST(Roofline, LongPrefillIsComputeBound) {
  const Accelerator& h100 = shipped().accelerator("H100-SXM");
  const ModelShape& m7 = shipped().model_shape("llama2-7b");
  RooflineCost cost(h100, m7, {});
  const auto t = cost.terms(prefill(4096));
  EXPECT_FALSE(t.memory_bound());
  // 4096 tokens at the mean context 2048, at 70% of 989 TFLOP/s: ~85 ms.
  const double flops = 4096 * m7.flops_per_token(2048);
  EXPECT_DOUBLE_EQ(t.flops, flops);
  EXPECT_NEAR(static_cast<double>(cost.step_ns(prefill(4096))), flops / (989e12 * 0.7) * 1e9, 1.0);
  EXPECT_GT(t.compute_ns, 5 * t.memory_ns);
}

TEST(Roofline, DoublingBandwidthHalvesAMemoryBoundStep) {
  Accelerator a = shipped().accelerator("A100-80GB-SXM");
  const ModelShape& m7 = shipped().model_shape("llama2-7b");
  const auto step = decodes(8, 1000);
  RooflineCost slow(a, m7, {});
  ASSERT_TRUE(slow.terms(step).memory_bound());
  a.memory_tb_s *= 2;
  RooflineCost fast(a, m7, {});
  EXPECT_NEAR(fast.terms(step).total_ns() / slow.terms(step).total_ns(), 0.5, 1e-12);
  // Doubling the FLOP rate leaves it as it was.
  a.memory_tb_s /= 2;
  a.bf16_tflops *= 2;
  EXPECT_EQ(RooflineCost(a, m7, {}).step_ns(step), slow.step_ns(step));
}

TEST(Roofline, TensorParallelDividesTheStep) {
  const Accelerator& h100 = shipped().accelerator("H100-SXM");
  const ModelShape& m70 = shipped().model_shape("llama2-70b");
  const auto step = decodes(16, 2000);
  const double one = RooflineCost(h100, m70, {}, 1).terms(step).total_ns();
  EXPECT_NEAR(RooflineCost(h100, m70, {}, 4).terms(step).total_ns(), one / 4, 1e-6 * one);
}

TEST(Roofline, VariantScalingMovesTheRightTerms) {
  const Accelerator& h100 = shipped().accelerator("H100-SXM");
  const ModelShape& m7 = shipped().model_shape("llama2-7b");
  const double kv = static_cast<double>(m7.kv_bytes_per_token());
  const double weights = static_cast<double>(m7.weight_bytes());
  const auto step = decodes(4, 3000);
  const auto base = RooflineCost(h100, m7, {}).terms(step);
  EXPECT_DOUBLE_EQ(base.bytes, weights + 4 * (3000 + 1) * kv);

  VariantScaling evict;
  evict.kv_token_budget = 1000;  // StreamingLLM-like: reads 1000 held tokens, not 3000
  const auto e = RooflineCost(h100, m7, evict).terms(step);
  EXPECT_DOUBLE_EQ(e.bytes, weights + 4 * (1000 + 1) * kv);
  EXPECT_DOUBLE_EQ(e.flops, base.flops);  // the cap is on bytes only

  VariantScaling latent;
  latent.kv_bytes_ratio = 0.25;
  latent.flops_ratio = 1.1;
  latent.extra_weight_ratio = 0.05;  // a verifier 5% the model's size
  const auto l = RooflineCost(h100, m7, latent).terms(step);
  EXPECT_DOUBLE_EQ(l.bytes, weights * 1.05 + 4 * (3000 + 1) * kv * 0.25);
  EXPECT_DOUBLE_EQ(l.flops, base.flops * 1.1);

  // Re-sampling: half a step more per sampled token; at batch 1 a re-sample
  // is a whole extra decode, so the step costs ~1.5 times.
  VariantScaling resample;
  resample.extra_step_fraction = 0.5;
  const auto one = decodes(1, 500);
  const double plain = RooflineCost(h100, m7, {}).terms(one).total_ns();
  EXPECT_NEAR(RooflineCost(h100, m7, resample).terms(one).total_ns() / plain, 1.5, 1e-3);
  // A step whose parts sample nothing (a prefill chunk mid-prompt) is not charged.
  StepShape chunk;
  chunk.parts.push_back({512, 0, false});
  EXPECT_EQ(RooflineCost(h100, m7, resample).step_ns(chunk), RooflineCost(h100, m7, {}).step_ns(chunk));

  VariantScaling bad;
  bad.kv_bytes_ratio = 0;
  EXPECT_TRUE(contains(thrown([&] { RooflineCost(h100, m7, bad); }), "kv_bytes_ratio"));
}

TEST(Roofline, OverheadAndTheEmptyStep) {
  const Accelerator& h100 = shipped().accelerator("H100-SXM");
  const ModelShape& m7 = shipped().model_shape("llama2-7b");
  EXPECT_EQ(RooflineCost(h100, m7, {}).step_ns(StepShape{}), 1);  // at least 1 ns
  EXPECT_EQ(RooflineCost(h100, m7, {}, 1, 30'000).step_ns(StepShape{}), 30'000);
  const auto step = decodes(2, 10);
  EXPECT_EQ(RooflineCost(h100, m7, {}, 1, 30'000).step_ns(step), RooflineCost(h100, m7, {}).step_ns(step) + 30'000);
}

TEST(Roofline, KvBlocksFollowVllmsSizing) {
  const Accelerator& h100 = shipped().accelerator("H100-SXM");
  const ModelShape& m7 = shipped().model_shape("llama2-7b");
  // (80e9·0.9 − 13,476,831,232) / (16·524288) = 58,523,168,768 / 8,388,608 = 6976.5 → 6976.
  EXPECT_EQ(zl::kv_blocks(h100, m7, {}, 1), 6976);
  VariantScaling half;
  half.kv_bytes_ratio = 0.5;
  const double ratio =
      static_cast<double>(zl::kv_blocks(h100, m7, half, 1)) / static_cast<double>(zl::kv_blocks(h100, m7, {}, 1));
  EXPECT_NEAR(ratio, 2.0, 0.01);
  VariantScaling verifier;
  verifier.extra_weight_ratio = 0.5;
  EXPECT_LT(zl::kv_blocks(h100, m7, verifier, 1), zl::kv_blocks(h100, m7, {}, 1));
  // 70B's weights (138 GB) do not fit one 80 GB GPU.
  const std::string msg = thrown([&] { zl::kv_blocks(h100, shipped().model_shape("llama2-70b"), {}, 1); });
  EXPECT_TRUE(contains(msg, "H100-SXM")) << msg;
  EXPECT_TRUE(contains(msg, "llama2-70b")) << msg;
}

TEST(Roofline, TensorParallelForTheWeights) {
  const auto& cat = shipped();
  const ModelShape& m70 = cat.model_shape("llama2-70b");
  // 70B on A100 80GB: weights 2 · 68,976,648,192 = 137.95e9 B. Two GPUs give
  // 80e9 · 0.9 · 2 = 144e9 B, whose 90% (129.6e9) is below the weights
  // (they would leave 4% for KV); four give 288e9 B, whose 90% (259.2e9)
  // holds them. So 4.
  EXPECT_EQ(zl::tensor_parallel_for(cat.accelerator("A100-80GB-SXM"), m70), 4);
  // H200: one gives 141e9 · 0.9 · 0.9 = 114.2e9 < 137.95e9; two 228.4e9. So 2.
  EXPECT_EQ(zl::tensor_parallel_for(cat.accelerator("H200-SXM"), m70), 2);
  // L4: 24e9 · 0.9 · 0.9 · 8 = 155.5e9 holds them only at 8.
  EXPECT_EQ(zl::tensor_parallel_for(cat.accelerator("L4"), m70), 8);
  EXPECT_EQ(zl::tensor_parallel_for(cat.accelerator("L4"), cat.model_shape("llama2-7b")), 1);
  ModelShape huge = m70;
  huge.name = "huge";
  huge.layers = 800;
  const std::string msg = thrown([&] { zl::tensor_parallel_for(cat.accelerator("L4"), huge); });
  EXPECT_TRUE(contains(msg, "huge")) << msg;
  EXPECT_TRUE(contains(msg, "L4")) << msg;
}

TEST(Roofline, EnergyUnderConstantPowerPerPhase) {
  const Accelerator& h100 = shipped().accelerator("H100-SXM");
  // Splitwise's H100: 700 W prefill, 380 W decode, 75 W idle, per GPU.
  EXPECT_DOUBLE_EQ(zl::energy_j(h100, 1, 1'000'000'000, 0, 0), 700);
  EXPECT_DOUBLE_EQ(zl::energy_j(h100, 1, 0, 2'000'000'000, 0), 760);
  EXPECT_DOUBLE_EQ(zl::energy_j(h100, 2, 1'000'000'000, 1'000'000'000, 1'000'000'000), 2 * (700 + 380 + 75));
  const zl::PowerModel p(h100, 4);
  EXPECT_DOUBLE_EQ(p.watts(true), 2800);
  EXPECT_DOUBLE_EQ(p.watts(false), 1520);
  EXPECT_DOUBLE_EQ(p.idle(), 300);
  EXPECT_FALSE(thrown([&] { zl::energy_j(h100, 1, -1, 0, 0); }).empty());
}

TEST(HardwareErrors, UnknownNamesListTheKnownOnes) {
  const std::string a = thrown([] { shipped().accelerator("B200"); });
  EXPECT_TRUE(contains(a, "B200")) << a;
  EXPECT_TRUE(contains(a, "H100-SXM, H200-SXM, L4") || (contains(a, "H100-SXM") && contains(a, "L4"))) << a;
  EXPECT_TRUE(contains(a, "A100-80GB-SXM")) << a;
  const std::string m = thrown([] { shipped().model_shape("llama3-8b"); });
  EXPECT_TRUE(contains(m, "llama2-7b")) << m;
  EXPECT_TRUE(contains(m, "llama2-70b")) << m;
}

TEST(HardwareErrors, MalformedLinesNameTheLine) {
  TempDir dir("zl_roofline");
  // Line 3 is neither a key, a section nor a comment.
  std::string msg =
      thrown([&] { zl::read_hardware(write_file(dir, "# hardware\n[accelerator X]\nbf16_tflops 100\n")); });
  EXPECT_TRUE(contains(msg, "hardware.ini:3:")) << msg;
  // A bad number names its line and key.
  msg =
      thrown([&] { zl::read_hardware(write_file(dir, std::string(kGoodAccelerator) + "\n[model m]\nlayers = 2x\n")); });
  EXPECT_TRUE(contains(msg, "hardware.ini:15: layers")) << msg;
  // An unknown key is an error, on its line.
  msg = thrown([&] { zl::read_hardware(write_file(dir, std::string(kGoodAccelerator) + "tflops = 3\n")); });
  EXPECT_TRUE(contains(msg, "hardware.ini:13: tflops")) << msg;
  EXPECT_TRUE(contains(msg, "unknown key")) << msg;
  // An efficiency above 1 is out of range.
  std::string over = kGoodAccelerator;
  over.replace(over.find("flops_efficiency = 0.7"), 22, "flops_efficiency = 1.5");
  msg = thrown([&] { zl::read_hardware(write_file(dir, over)); });
  EXPECT_TRUE(contains(msg, "hardware.ini:7: flops_efficiency")) << msg;
  // A key before any section.
  msg = thrown([&] { zl::read_hardware(write_file(dir, "tdp_w = 3\n")); });
  EXPECT_TRUE(contains(msg, "hardware.ini:1: tdp_w")) << msg;
  // A repeated section.
  msg = thrown([&] { zl::read_hardware(write_file(dir, std::string(kGoodAccelerator) + kGoodAccelerator)); });
  EXPECT_TRUE(contains(msg, "hardware.ini:13:")) << msg;
  EXPECT_TRUE(contains(msg, "repeated")) << msg;
  // The file itself missing.
  msg = thrown([&] { zl::read_hardware(dir / "absent.ini"); });
  EXPECT_TRUE(contains(msg, "absent.ini")) << msg;
}

TEST(HardwareErrors, MissingKeyNamesTheSectionAndKey) {
  TempDir dir("zl_roofline");
  std::string text = kGoodAccelerator;
  text.erase(text.find("tdp_w = 100\n"), 12);
  std::string msg = thrown([&] { zl::read_hardware(write_file(dir, text)); });
  EXPECT_TRUE(contains(msg, "[accelerator X]")) << msg;
  EXPECT_TRUE(contains(msg, "tdp_w")) << msg;
  msg = thrown([&] {
    zl::read_hardware(write_file(dir,
                                 "[model tiny]\nlayers = 2\ndim = 64\nheads = 4\nkv_heads = 4\nmlp_hidden = 128\n"
                                 "vocab = 100\ncontext = 64\nsource = a test\n"));
  });
  EXPECT_TRUE(contains(msg, "[model tiny]")) << msg;
  EXPECT_TRUE(contains(msg, "bytes_per_param")) << msg;
  // A file that parses: the good accelerator alone.
  const auto cat = zl::read_hardware(write_file(dir, kGoodAccelerator));
  EXPECT_DOUBLE_EQ(cat.accelerator("X").flops_efficiency, 0.7);
  EXPECT_TRUE(cat.accelerator("X").power_note.empty());
}

}  // namespace
