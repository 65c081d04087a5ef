// Named accelerators and model shapes for the serving simulator's roofline
// projections (sim/serving/roofline.h), read from a data file whose every
// figure cites its source (ablations/hardware.ini). Units are SI: TFLOP/s is
// 1e12 FLOP/s, TB/s 1e12 B/s, GB 1e9 B.
//
// FLOPs are counted as the rest of the project counts them (sim/cost.cpp): a
// multiply-add is 2 FLOPs (Kaplan et al. 2020, table 1).
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace zl {

struct Accelerator {
  std::string name;                 // the section's name, e.g. "H100-SXM"
  double bf16_tflops = 0;           // dense BF16 tensor-core peak (no 2:4 sparsity), TFLOP/s
  double memory_tb_s = 0;           // peak memory bandwidth, TB/s
  double memory_gb = 0;             // device memory, GB (1e9 B) as the spec sheet prints it
  double tdp_w = 0;                 // board power limit, W
  double bandwidth_efficiency = 0;  // sustained share of peak bandwidth, (0, 1]
  double flops_efficiency = 0;      // achievable share of peak in dense GEMM, (0, 1]
  double power_idle_w = 0;          // Splitwise's constant power per phase, per GPU:
  double power_prefill_w = 0;       //   idle, a step with prompt tokens in it,
  double power_decode_w = 0;        //   a step of decodes only
  std::string source, power_source;
  std::string power_note;  // how the power figures were derived where Splitwise gives none ("" otherwise)

  double peak_flops_s() const { return bf16_tflops * 1e12; }
  double peak_bytes_s() const { return memory_tb_s * 1e12; }
  double memory_bytes() const { return memory_gb * 1e9; }
};

// A decoder-only transformer of the Llama family: pre-norm RMSNorm (one
// weight vector per norm, no biases anywhere), grouped-query attention,
// SwiGLU MLP (gate, up and down matrices), untied input embedding and output
// head.
struct ModelShape {
  std::string name;  // the section's name, e.g. "llama2-7b"
  int64_t layers = 0;
  int64_t dim = 0;         // C, the residual width
  int64_t heads = 0;       // query heads; head_dim = dim / heads
  int64_t kv_heads = 0;    // key/value heads (GQA); == heads without it
  int64_t mlp_hidden = 0;  // F, SwiGLU's inner width
  int64_t vocab = 0;
  int64_t context = 0;          // the longest sequence it was trained on
  int64_t bytes_per_param = 2;  // weights and KV cache (2: BF16/FP16)
  std::string source;

  int64_t head_dim() const { return dim / heads; }
  // Weights in one layer's matrices: q and o (C·C each), k and v
  // (C·kv_heads·head_dim each), gate, up and down (C·F each).
  int64_t layer_matmul_params() const;
  // Every parameter: input embedding V·C, per layer the matrices above and
  // two norms (2·C), the final norm C, and the untied head C·V.
  int64_t params() const;
  int64_t weight_bytes() const { return params() * bytes_per_param; }
  // Keys and values of one token in every layer: 2 · layers · kv_heads ·
  // head_dim · bytes_per_param.
  int64_t kv_bytes_per_token() const;
  // Forward FLOPs of one token attending over `context` keys, as cost.cpp
  // counts them: 2 per weight of every layer matrix, the head 2·C·V, and the
  // attention scores q·kᵀ and the mix weights·v at 2·context·C each per layer
  // (every query head reads its key, so GQA does not shrink these). Norms,
  // RoPE, softmax and the SwiGLU product are left out, as cost.cpp leaves out
  // its elementwise work; the embedding lookup is a gather.
  double flops_per_token(double context) const;
};

struct HardwareCatalog {
  std::string path;  // the file it was read from
  std::map<std::string, Accelerator> accelerators;
  std::map<std::string, ModelShape> models;

  // By section name; an unknown name throws std::invalid_argument listing the known ones.
  const Accelerator& accelerator(const std::string& name) const;
  const ModelShape& model_shape(const std::string& name) const;
};

// Reads a file of `[accelerator NAME]` and `[model NAME]` sections of
// `key = value` lines (`#` starts a comment line; see ablations/hardware.ini
// for the keys). Errors are std::runtime_error naming `path:line` and the
// key: a line that is neither a section, a key nor a comment; a key outside a
// section; an unknown or repeated key; a value that is not a number, or out
// of range; a repeated section. A missing required key names the section and
// the key.
HardwareCatalog read_hardware(const std::string& path);

}  // namespace zl
