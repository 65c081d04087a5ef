#include "sim/checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "datasets/atomic_file.h"
#include "datasets/cache_file.h"
#include "sim/config.h"
#include "sim/torch_bytes.h"
#include "sim/util/stop.h"

namespace zl {
namespace fs = std::filesystem;

namespace {

constexpr const char* kChecksumKey = "checksum.";  // checksum.<file name>=<checksum_record>

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

CheckpointState CheckpointDir::load(Transformer* model, torch::optim::Optimizer* optim,
                                    const std::string& family) const {
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
    if (kv.count("commit")) s.code.commit = kv.at("commit");
    if (kv.count("training_code")) s.code.fingerprint = kv.at("training_code");
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
  // Every recorded file is checked before anything loads: a damaged
  // checkpoint leaves the model as it was, to be trained again from scratch.
  const std::string model_name = "model-" + std::to_string(s.step) + ".pt";
  const std::string optim_name = "optim-" + std::to_string(s.step) + ".pt";
  const auto model_file = fs::path(path_) / model_name, optim_file = fs::path(path_) / optim_name;
  // Another family's network (a latent_kv checkpoint where a baseline's was
  // expected) is refused before its bytes are read: loaded, its tensors
  // would take the model's places under their names, whatever their shapes.
  if (model && !family.empty()) {
    std::string variant;
    const std::string recorded = checkpoint_family(path_, &variant);
    if (!recorded.empty() && recorded != family)
      throw std::runtime_error(model_file.string() + ": a checkpoint of family " + recorded +
                               " (its config.ini: variant = " + variant + "), but the model loading it is of family " +
                               family + "; refusing to load another family's network");
  }
  std::map<std::string, std::string> bytes;  // file name -> its checked bytes
  for (const auto& [k, record] : kv) {
    if (k.rfind(kChecksumKey, 0) != 0) continue;
    const std::string name = k.substr(std::string(kChecksumKey).size());
    if (name == optim_name && !optim) continue;
    const auto file = fs::path(path_) / name;
    if (!fs::exists(file)) throw DamagedCheckpoint(file.string() + ": missing (state.ini records it)");
    std::string b = read_whole_file(file.string());
    const std::string why = checksum_mismatch(b, record);
    if (!why.empty()) throw DamagedCheckpoint(file.string() + ": " + why);
    bytes[name] = std::move(b);
  }
  auto file_bytes = [&](const std::string& name, const fs::path& file) {  // unchecked in older checkpoints
    auto it = bytes.find(name);
    return it != bytes.end() ? it->second : read_whole_file(file.string());
  };
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;  // the model's, before the file replaces them
  if (model)
    for (const auto& p : (*model)->named_parameters()) shapes.emplace_back(p.key(), p.value().sizes().vec());
  try {
    if (model) torch_load_bytes(*model, file_bytes(model_name, model_file));
  } catch (const std::exception& e) {
    throw std::runtime_error(model_file.string() + ": cannot load checkpoint model (corrupt or another shape)");
  }
  if (model) {
    const auto params = (*model)->named_parameters();
    for (const auto& [name, shape] : shapes) {
      const auto* loaded = params.find(name);
      if (loaded && loaded->sizes().vec() == shape) continue;
      throw std::runtime_error(model_file.string() + ": parameter " + name + " is " +
                               (loaded ? "[" + join(loaded->sizes().vec()) + "]" : "missing") +
                               " in the checkpoint but [" + join(shape) +
                               "] in the model: a checkpoint of another shape or family");
    }
  }
  try {
    if (optim && fs::exists(optim_file)) torch_load_bytes(*optim, file_bytes(optim_name, optim_file));
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
  std::map<std::string, std::string> checksums;  // file name -> checksum_record, into state.ini
  auto publish = [&](const fs::path& file, const std::string& bytes) {
    write_file_atomically(file.string(), bytes);
    checksums[file.filename().string()] = checksum_record(bytes);
  };
  publish(model_file, torch_bytes(model));
  if (optim && !s.complete) publish(optim_file, torch_bytes(*optim));
  write_file_atomically((dir / "config.ini").string(), config_ini);
  if (!tokenizer_model.empty()) {
    const std::string tok = read_whole_file(tokenizer_model);
    const auto copy = dir / "tokenizer.model";
    if (!fs::exists(copy) || read_whole_file(copy.string()) != tok) write_file_atomically(copy.string(), tok);
    checksums["tokenizer.model"] = checksum_record(tok);
  }

  std::ostringstream st;
  st.precision(17);
  st << "step=" << s.step << "\ncomplete=" << (s.complete ? 1 : 0) << "\ntrain_seconds=" << s.train_seconds
     << "\ntimed_tokens=" << s.timed_tokens << "\n";
  if (!s.code.fingerprint.empty()) st << "commit=" << s.code.commit << "\ntraining_code=" << s.code.fingerprint << "\n";
  for (const auto& [name, c] : s.curves)
    st << "curve." << name << ".step=" << join(c.step) << "\ncurve." << name << ".value=" << join(c.value) << "\n";
  for (const auto& [name, record] : checksums) st << kChecksumKey << name << "=" << record << "\n";
  write_file_atomically((dir / "state.ini").string(), st.str());

  // Older step files are now unreferenced.
  for (const auto& e : fs::directory_iterator(dir)) {
    auto name = e.path().filename().string();
    bool step_file = (name.rfind("model-", 0) == 0 || name.rfind("optim-", 0) == 0);
    if (step_file && e.path() != model_file && e.path() != optim_file) fs::remove(e.path());
  }
}

void CheckpointDir::set_aside(const std::string& why) const {
  const auto state = fs::path(path_) / "state.ini";
  std::error_code ec;
  fs::rename(state, fs::path(path_) / "state.ini.corrupt", ec);
  std::fprintf(stderr, "warning: checkpoint damaged: %s; set aside (%s.corrupt), training it again\n", why.c_str(),
               state.string().c_str());
}

std::string checkpoint_family(const std::string& dir, std::string* variant) {
  std::ifstream in(fs::path(dir) / "config.ini");
  if (!in) return "";
  // Two keys of the INI that to_ini() wrote, read without the study parser:
  // a config.ini from another version (other keys) still names its family.
  auto trim = [](const std::string& t) {
    const size_t b = t.find_first_not_of(" \t\r");
    return b == std::string::npos ? std::string() : t.substr(b, t.find_last_not_of(" \t\r") - b + 1);
  };
  RunConfig c;
  std::string section;
  for (std::string raw; std::getline(in, raw);) {
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim(line.substr(1, line.size() - 2));
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (section.empty() && key == "variant") c.variant = value;
    if (section == "latent" && key == "mode") c.latent.mode = value;
  }
  if (variant) *variant = c.variant;
  return trained_family(c);
}

std::string checkpoint_config(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "config.ini");
  if (!in) throw std::runtime_error(dir + ": not a zerolayer checkpoint (no config.ini)");
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace zl
