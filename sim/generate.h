// A trained checkpoint, loaded once and sampled from: what `zerolayer
// generate` and the Python module's Generator share. Torch-free header (the
// model sits behind a pointer to an implementation), so the pybind11 module
// compiles without <torch/torch.h>.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datasets/tokenizer.h"

namespace zl {

struct GenerateOptions {
  int64_t max_new_tokens = 64;  // capped at model.context - 1
  double temperature = 0.8;     // 0 = greedy
  int64_t top_k = 0;            // 0 = off
  double top_p = 1.0;           // 1 = off
  uint64_t seed = 1;            // sampling seed
};

// The tokenizer a checkpoint was trained with (byte, or the SentencePiece
// model saved beside it). Throws naming the directory.
std::unique_ptr<Tokenizer> checkpoint_tokenizer(const std::string& checkpoint_dir);

class Generator {
 public:
  // Loads the model, its resolved config and its tokenizer from a checkpoint
  // directory (output.dir/checkpoints/<train_id>). Throws naming the directory
  // when it is missing, corrupt or from another model.
  explicit Generator(const std::string& checkpoint_dir);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // The continuation's ids (eos excluded). An empty prompt starts a document.
  std::vector<int32_t> generate(std::vector<int32_t> prompt, const GenerateOptions& opt);
  std::string generate_text(const std::string& prompt, const GenerateOptions& opt);
  // Full-forward logits of `prompt`, float32 row-major [T, V] (parity checks).
  std::vector<float> logits(const std::vector<int32_t>& prompt, int64_t* rows, int64_t* cols);

  const Tokenizer& tokenizer() const;
  const std::string& config_ini() const;
  const std::string& variant() const;
  int64_t context() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zl
