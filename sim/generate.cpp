#include "sim/generate.h"

#include <torch/torch.h>

#include <filesystem>

#include "models/factory.h"
#include "sim/checkpoint.h"
#include "sim/decoder.h"
#include "sim/model_options.h"
#include "sim/runtime.h"
#include "sim/study_file.h"

namespace zl {
namespace fs = std::filesystem;

namespace {
RunConfig checkpoint_run_config(const std::string& dir, std::string* ini) {
  *ini = checkpoint_config(dir);
  return parse_study(*ini, dir + "/config.ini", {}).base;
}
std::unique_ptr<Tokenizer> tokenizer_for(const RunConfig& cfg, const std::string& dir) {
  return cfg.data.tokenizer == "byte" ? make_byte_tokenizer()
                                      : load_tokenizer("sentencepiece", (fs::path(dir) / "tokenizer.model").string());
}
}  // namespace

std::unique_ptr<Tokenizer> checkpoint_tokenizer(const std::string& dir) {
  std::string ini;
  return tokenizer_for(checkpoint_run_config(dir, &ini), dir);
}

struct Generator::Impl {
  std::string config_ini;
  RunConfig cfg;
  std::unique_ptr<Tokenizer> tok;
  ModelConfig mc;
  Transformer model{nullptr};
};

Generator::Generator(const std::string& dir) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (std::string why = path_text_problem(dir); !why.empty()) throw ConfigError("checkpoint directory: " + why);
  m.cfg = checkpoint_run_config(dir, &m.config_ini);
  configure_runtime(m.cfg.train.threads);
  m.tok = tokenizer_for(m.cfg, dir);
  m.mc = model_config(m.cfg, m.tok->vocab_size());
  m.model = make_model(trained_family(m.cfg), m.mc);
  CheckpointDir(dir).load(&m.model, nullptr);
  m.model->eval();
}

Generator::~Generator() = default;

std::vector<int32_t> Generator::generate(std::vector<int32_t> prompt, const GenerateOptions& o) {
  Impl& m = *impl_;
  for (int32_t id : prompt)
    if (id < 0 || id >= m.mc.vocab)
      throw std::out_of_range("prompt id " + std::to_string(id) + " outside the vocabulary [0, " +
                              std::to_string(m.mc.vocab) + ")");
  DecodeOptions opt;
  opt.sampling = {o.temperature, o.top_k, o.top_p};
  opt.max_new_tokens = std::min<int64_t>(o.max_new_tokens, m.mc.context - 1);
  opt.batch = 1;
  opt.eos_id = m.tok->eos_id();
  if (prompt.empty()) prompt.push_back(m.tok->eos_id());  // start of a document
  at::Generator gen = make_generator(o.seed);
  return decode(m.model, {prompt}, opt, gen).continuations[0];
}

std::string Generator::generate_text(const std::string& prompt, const GenerateOptions& opt) {
  return impl_->tok->decode(generate(impl_->tok->encode(prompt), opt));
}

std::vector<float> Generator::logits(const std::vector<int32_t>& prompt, int64_t* rows, int64_t* cols) {
  torch::NoGradGuard no_grad;
  auto ids = torch::tensor(std::vector<int64_t>(prompt.begin(), prompt.end()), torch::kLong).unsqueeze(0);
  auto out = impl_->model->forward(ids)[0].to(torch::kFloat).contiguous();  // [T,V]
  *rows = out.size(0);
  *cols = out.size(1);
  return std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
}

const Tokenizer& Generator::tokenizer() const { return *impl_->tok; }
const std::string& Generator::config_ini() const { return impl_->config_ini; }
const std::string& Generator::variant() const { return impl_->cfg.variant; }
int64_t Generator::context() const { return impl_->mc.context; }

}  // namespace zl
