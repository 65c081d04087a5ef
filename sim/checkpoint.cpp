#include "sim/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/atomic_file.h"
#include "sim/stop.h"

namespace zl {
namespace fs = std::filesystem;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string join(const std::vector<int64_t>& v) {
  std::ostringstream o;
  for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
  return o.str();
}

std::string join(const std::vector<double>& v) {
  std::ostringstream o;
  o.precision(17);
  for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
  return o.str();
}

template <class T>
std::vector<T> split_numbers(const std::string& s) {
  std::vector<T> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(static_cast<T>(std::stod(item)));
  return out;
}

}  // namespace

CheckpointDir::CheckpointDir(std::string path)
    : path_(std::move(path)), lock_((fs::path(path_) / "lock").string()) {
  fs::create_directories(path_);
}

CheckpointDir::~CheckpointDir() = default;

void CheckpointDir::lock() {
  // Another process trains this model: wait for it, unless asked to stop.
  lock_.lock([this] {
    if (stop_requested())  // names the holder then only: not a file read every poll
      throw_if_stop_requested("while waiting for the checkpoint " + path_ + " (held by " + lock_.holder() + ")");
  });
}

bool CheckpointDir::exists() const { return fs::exists(fs::path(path_) / "state.ini"); }

CheckpointState CheckpointDir::load(Transformer* model, torch::optim::Optimizer* optim) const {
  auto state_path = fs::path(path_) / "state.ini";
  std::ifstream in(state_path);
  if (!in) throw std::runtime_error(state_path.string() + ": missing checkpoint state");
  CheckpointState s;
  std::map<std::string, std::string> kv;
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  try {
    s.step = std::stoll(kv.at("step"));
    s.complete = kv.at("complete") == "1";
    s.train_seconds = std::stod(kv.at("train_seconds"));
    s.timed_tokens = std::stoll(kv.at("timed_tokens"));
    for (const auto& [k, v] : kv) {
      if (k.rfind("curve.", 0) != 0 || k.size() < 11 || k.substr(k.size() - 5) != ".step") continue;
      std::string name = k.substr(6, k.size() - 11);
      s.curves[name].step = v.empty() ? std::vector<int64_t>{} : split_numbers<int64_t>(v);
      const std::string& vals = kv.at("curve." + name + ".value");
      s.curves[name].value = vals.empty() ? std::vector<double>{} : split_numbers<double>(vals);
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(state_path.string() + ": corrupt checkpoint state (" + e.what() + ")");
  }
  auto model_file = fs::path(path_) / ("model-" + std::to_string(s.step) + ".pt");
  auto optim_file = fs::path(path_) / ("optim-" + std::to_string(s.step) + ".pt");
  try {
    if (model) torch::load(*model, model_file.string());
  } catch (const std::exception& e) {
    throw std::runtime_error(model_file.string() + ": cannot load checkpoint model (corrupt or another shape)");
  }
  try {
    if (optim && fs::exists(optim_file)) torch::load(*optim, optim_file.string());
  } catch (const std::exception& e) {
    throw std::runtime_error(optim_file.string() + ": cannot load optimizer state");
  }
  return s;
}

void CheckpointDir::save(const CheckpointState& s, Transformer& model, torch::optim::Optimizer* optim,
                         const std::string& config_ini, const std::string& tokenizer_model) const {
  const fs::path dir(path_);
  // Step files first, under temporary names; state.ini, which points at
  // them, is renamed into place last.
  auto model_file = dir / ("model-" + std::to_string(s.step) + ".pt");
  auto optim_file = dir / ("optim-" + std::to_string(s.step) + ".pt");
  write_file_atomically(model_file.string(), torch_bytes(model));
  if (optim && !s.complete) write_file_atomically(optim_file.string(), torch_bytes(*optim));
  write_file_atomically((dir / "config.ini").string(), config_ini);
  if (!tokenizer_model.empty() && !fs::exists(dir / "tokenizer.model"))
    write_file_atomically((dir / "tokenizer.model").string(), read_bytes(tokenizer_model));

  std::ostringstream st;
  st.precision(17);
  st << "step=" << s.step << "\ncomplete=" << (s.complete ? 1 : 0) << "\ntrain_seconds=" << s.train_seconds
     << "\ntimed_tokens=" << s.timed_tokens << "\n";
  for (const auto& [name, c] : s.curves)
    st << "curve." << name << ".step=" << join(c.step) << "\ncurve." << name << ".value=" << join(c.value) << "\n";
  write_file_atomically((dir / "state.ini").string(), st.str());

  // Older step files are now unreferenced.
  for (const auto& e : fs::directory_iterator(dir)) {
    auto name = e.path().filename().string();
    bool step_file = (name.rfind("model-", 0) == 0 || name.rfind("optim-", 0) == 0);
    if (step_file && e.path() != model_file && e.path() != optim_file) fs::remove(e.path());
  }
}

std::string checkpoint_config(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "config.ini");
  if (!in) throw std::runtime_error(dir + ": not a zerolayer checkpoint (no config.ini)");
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace zl
