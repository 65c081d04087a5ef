#include "sim/serving/hardware.h"

#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

namespace zl {

int64_t ModelShape::layer_matmul_params() const {
  const int64_t C = dim, F = mlp_hidden, KV = kv_heads * head_dim();
  return C * C         // q
         + 2 * C * KV  // k, v (kv_heads · head_dim wide each)
         + C * C       // o
         + 3 * C * F;  // SwiGLU gate, up, down
}

int64_t ModelShape::params() const {
  const int64_t C = dim;
  return vocab * C                                   // input embedding
         + layers * (layer_matmul_params() + 2 * C)  // matrices and the two RMSNorm weights
         + C                                         // final norm
         + C * vocab;                                // untied head
}

int64_t ModelShape::kv_bytes_per_token() const { return 2 * layers * kv_heads * head_dim() * bytes_per_param; }

double ModelShape::flops_per_token(double ctx) const {
  const double C = dim, L = layers, V = vocab;
  return 2.0 * L * static_cast<double>(layer_matmul_params())  // every layer matrix
         + 2.0 * C * V                                         // the head
         + L * (2.0 * ctx * C + 2.0 * ctx * C);                // q·kᵀ and weights·v
}

namespace {

template <typename T>
std::string known_names(const std::map<std::string, T>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ", ") + k;
  return s.empty() ? "(none)" : s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// One section's keys as read, checked and converted when the section ends.
class Section {
 public:
  struct Entry {
    std::string value;
    int line = 0;
  };
  Section(std::string path, std::string kind, std::string name, int line)
      : path_(std::move(path)), kind_(std::move(kind)), name_(std::move(name)), line_(line) {}

  const std::string& kind() const { return kind_; }
  const std::string& name() const { return name_; }

  void add(const std::string& key, const std::string& value, int line, const std::vector<std::string>& allowed) {
    bool known = false;
    std::string list;
    for (const auto& a : allowed) {
      known = known || a == key;
      list += (list.empty() ? "" : ", ") + a;
    }
    if (!known) fail(line, key, "unknown key in [" + kind_ + "] (known: " + list + ")");
    if (entries_.count(key)) fail(line, key, "repeated (first at line " + std::to_string(entries_[key].line) + ")");
    if (value.empty()) fail(line, key, "has no value");
    entries_[key] = {value, line};
  }

  std::string text(const std::string& key, bool required = true) const {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      if (required) missing(key);
      return "";
    }
    return it->second.value;
  }

  // A number > lo (or >= lo when lo_inclusive) and <= hi.
  double number(const std::string& key, double lo, bool lo_inclusive = false, double hi = 1e300) const {
    const Entry& e = entry(key);
    double v = 0;
    size_t used = 0;
    try {
      v = std::stod(e.value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != e.value.size()) fail(e.line, key, "'" + e.value + "' is not a number");
    const bool low_ok = lo_inclusive ? v >= lo : v > lo;
    if (!low_ok || v > hi) {
      std::string range = (lo_inclusive ? "[" : "(") + fmt(lo) + ", " + (hi < 1e300 ? fmt(hi) + "]" : "inf)");
      fail(e.line, key, "'" + e.value + "' is outside " + range);
    }
    return v;
  }

  int64_t integer(const std::string& key, int64_t lo) const {
    const Entry& e = entry(key);
    int64_t v = 0;
    size_t used = 0;
    try {
      v = std::stoll(e.value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != e.value.size()) fail(e.line, key, "'" + e.value + "' is not an integer");
    if (v < lo) fail(e.line, key, "'" + e.value + "' is below " + std::to_string(lo));
    return v;
  }

  // An error about the section as a whole, at its header line.
  [[noreturn]] void fail_section(const std::string& what) const {
    throw std::runtime_error(path_ + ":" + std::to_string(line_) + ": [" + kind_ + " " + name_ + "] " + what);
  }
  int line_of(const std::string& key) const { return entry(key).line; }
  [[noreturn]] void fail(int line, const std::string& key, const std::string& what) const {
    throw std::runtime_error(path_ + ":" + std::to_string(line) + ": " + key + ": " + what);
  }

 private:
  const Entry& entry(const std::string& key) const {
    auto it = entries_.find(key);
    if (it == entries_.end()) missing(key);
    return it->second;
  }
  [[noreturn]] void missing(const std::string& key) const { fail_section("lacks required key '" + key + "'"); }
  static std::string fmt(double x) {
    std::string s = std::to_string(x);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }

  std::string path_, kind_, name_;
  int line_ = 0;
  std::map<std::string, Entry> entries_;
};

const std::vector<std::string> kAcceleratorKeys = {
    "bf16_tflops",  "memory_tb_s",     "memory_gb",      "tdp_w",  "bandwidth_efficiency", "flops_efficiency",
    "power_idle_w", "power_prefill_w", "power_decode_w", "source", "power_source",         "power_note"};
const std::vector<std::string> kModelKeys = {"layers", "dim",     "heads",           "kv_heads", "mlp_hidden",
                                             "vocab",  "context", "bytes_per_param", "source"};

Accelerator to_accelerator(const Section& s) {
  Accelerator a;
  a.name = s.name();
  a.bf16_tflops = s.number("bf16_tflops", 0);
  a.memory_tb_s = s.number("memory_tb_s", 0);
  a.memory_gb = s.number("memory_gb", 0);
  a.tdp_w = s.number("tdp_w", 0);
  a.bandwidth_efficiency = s.number("bandwidth_efficiency", 0, false, 1);
  a.flops_efficiency = s.number("flops_efficiency", 0, false, 1);
  a.power_idle_w = s.number("power_idle_w", 0, true);
  a.power_prefill_w = s.number("power_prefill_w", 0, true);
  a.power_decode_w = s.number("power_decode_w", 0, true);
  a.source = s.text("source");
  a.power_source = s.text("power_source");
  a.power_note = s.text("power_note", /*required=*/false);
  return a;
}

ModelShape to_model(const Section& s) {
  ModelShape m;
  m.name = s.name();
  m.layers = s.integer("layers", 1);
  m.dim = s.integer("dim", 1);
  m.heads = s.integer("heads", 1);
  m.kv_heads = s.integer("kv_heads", 1);
  m.mlp_hidden = s.integer("mlp_hidden", 1);
  m.vocab = s.integer("vocab", 1);
  m.context = s.integer("context", 1);
  m.bytes_per_param = s.integer("bytes_per_param", 1);
  m.source = s.text("source");
  if (m.dim % m.heads != 0)
    s.fail(s.line_of("heads"), "heads",
           "dim " + std::to_string(m.dim) + " is not a multiple of " + std::to_string(m.heads));
  if (m.heads % m.kv_heads != 0)
    s.fail(s.line_of("kv_heads"), "kv_heads",
           std::to_string(m.kv_heads) + " does not divide heads " + std::to_string(m.heads));
  return m;
}

}  // namespace

const Accelerator& HardwareCatalog::accelerator(const std::string& name) const {
  auto it = accelerators.find(name);
  if (it == accelerators.end())
    throw std::invalid_argument("unknown accelerator '" + name + "' in " + path +
                                " (known: " + known_names(accelerators) + ")");
  return it->second;
}

const ModelShape& HardwareCatalog::model_shape(const std::string& name) const {
  auto it = models.find(name);
  if (it == models.end())
    throw std::invalid_argument("unknown model '" + name + "' in " + path + " (known: " + known_names(models) + ")");
  return it->second;
}

HardwareCatalog read_hardware(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  HardwareCatalog cat;
  cat.path = path;
  std::map<std::string, int> section_lines;  // "kind name" -> header line, for repeats
  std::unique_ptr<Section> cur;
  auto close = [&]() {
    if (!cur) return;
    if (cur->kind() == "accelerator")
      cat.accelerators[cur->name()] = to_accelerator(*cur);
    else
      cat.models[cur->name()] = to_model(*cur);
    cur.reset();
  };
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string s = trim(raw);
    if (s.empty() || s[0] == '#') continue;
    const std::string at = path + ":" + std::to_string(line) + ": ";
    if (s[0] == '[') {
      if (s.back() != ']') throw std::runtime_error(at + "a section header must end with ']': " + s);
      const std::string inner = trim(s.substr(1, s.size() - 2));
      const auto sp = inner.find_first_of(" \t");
      const std::string kind = inner.substr(0, sp);
      const std::string name = sp == std::string::npos ? "" : trim(inner.substr(sp));
      if (kind != "accelerator" && kind != "model")
        throw std::runtime_error(at + "unknown section kind '" + kind + "' (known: accelerator, model)");
      if (name.empty() || name.find_first_of(" \t") != std::string::npos)
        throw std::runtime_error(at + "[" + kind + " NAME] needs one name without spaces: " + s);
      const std::string id = kind + " " + name;
      if (section_lines.count(id))
        throw std::runtime_error(at + "[" + id + "] repeated (first at line " + std::to_string(section_lines[id]) +
                                 ")");
      close();
      section_lines[id] = line;
      cur = std::make_unique<Section>(path, kind, name, line);
      continue;
    }
    const auto eq = s.find('=');
    if (eq == std::string::npos)
      throw std::runtime_error(at + "expected `key = value`, a [section] or a # comment: " + s);
    const std::string key = trim(s.substr(0, eq));
    if (key.empty()) throw std::runtime_error(at + "a line without a key: " + s);
    if (!cur) throw std::runtime_error(at + key + ": outside any [accelerator NAME] or [model NAME] section");
    cur->add(key, trim(s.substr(eq + 1)), line, cur->kind() == "accelerator" ? kAcceleratorKeys : kModelKeys);
  }
  close();
  if (section_lines.empty()) throw std::runtime_error(path + ": no [accelerator NAME] or [model NAME] section");
  return cat;
}

}  // namespace zl
