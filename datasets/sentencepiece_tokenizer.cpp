// SentencePiece BPE tokenizer (docs/design.md#data-and-the-checker), byte-exact.
//
// SentencePiece alone is not byte-exact: it replaces malformed UTF-8 with
// U+FFFD, turns a literal U+2581 ("▁", its own space marker) into a space on
// decode, and its decoder re-validates byte pieces as UTF-8. So encode hands
// SentencePiece only well-formed UTF-8 runs and emits every other byte as its
// <0xNN> byte piece itself, and decode maps ids to bytes through our own
// table. The model is trained with identity normalization, no dummy prefix,
// no whitespace folding and byte fallback, so that table is exact.

#include <algorithm>
#include <array>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "datasets/cache_file.h"
#include "datasets/spm_library.h"
#include "datasets/tokenizer.h"

namespace zl {
namespace {

namespace fs = std::filesystem;

// Enough text for a 1024-piece BPE vocabulary to settle (held-out chars per
// token on brown, licenses and contracts came out the same with 1 MB and
// 3 MB), at a third of the training time: about 1 s on two cores. Larger
// training splits are sampled down to it.
constexpr size_t kTrainCharBudget = 1u << 20;
// SentencePiece skips (not truncates) longer sentences; we cut lines first.
constexpr size_t kMaxSentenceBytes = 8192;
constexpr const char* kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Length of the well-formed UTF-8 sequence starting at s[i] (Unicode 3-7:
// no overlongs, no surrogates, nothing past U+10FFFF), or 0 if malformed.
size_t utf8_length(const std::string& s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    const unsigned char c1 = byte(i + 1);
    if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
    if (c == 0xED && c1 > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    const unsigned char c1 = byte(i + 1);
    if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
    if (c == 0xF4 && c1 > 0x8F) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

// True for the bytes at s[i..i+len) that must bypass SentencePiece: malformed
// UTF-8 (len 0), NUL (C strings inside the library), and the space marker.
bool is_raw(const std::string& s, size_t i, size_t len) {
  if (len == 0 || s[i] == '\0') return true;
  return len == 3 && s.compare(i, 3, kSpaceMarker) == 0;
}

// Calls `on_text(begin, end)` for each run SentencePiece may see and
// `on_byte(b)` for each byte it may not, in order.
template <class OnText, class OnByte>
void segment(const std::string& s, OnText on_text, OnByte on_byte) {
  size_t run = 0, i = 0;
  while (i < s.size()) {
    const size_t len = utf8_length(s, i);
    if (!is_raw(s, i, len)) {
      i += len;
      continue;
    }
    if (i > run) on_text(run, i);
    const size_t n = len == 0 ? 1 : len;
    for (size_t k = 0; k < n; ++k) on_byte(static_cast<unsigned char>(s[i + k]));
    i += n;
    run = i;
  }
  if (i > run) on_text(run, i);
}

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // `serialized` is a ModelProto; `path` names it in errors and checkpoints.
  SentencePieceTokenizer(const std::string& serialized, const std::string& path) : path_(path) {
    char err[512] = {0};
    if (lib_.load(serialized.data(), serialized.size(), &sp_, err, sizeof err) != 0)
      throw std::runtime_error("corrupt SentencePiece model '" + path + "': " + err);
    build_tables();
  }
  ~SentencePieceTokenizer() override { lib_.release(sp_); }
  SentencePieceTokenizer(const SentencePieceTokenizer&) = delete;
  SentencePieceTokenizer& operator=(const SentencePieceTokenizer&) = delete;

  std::vector<int32_t> encode(const std::string& text) const override {
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 1);
    segment(
        text,
        [&](size_t b, size_t e) {
          int32_t* piece_ids = nullptr;
          size_t count = 0;
          char err[512] = {0};
          if (lib_.encode(sp_, text.data() + b, e - b, &piece_ids, &count, err, sizeof err) != 0)
            throw std::runtime_error(std::string("SentencePiece encode failed: ") + err);
          ids.insert(ids.end(), piece_ids, piece_ids + count);
          lib_.free(piece_ids);
        },
        [&](unsigned char c) { ids.push_back(byte_id_[c]); });
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text;
    for (int32_t id : ids) {
      if (id < 0 || id >= static_cast<int32_t>(surface_.size()))
        throw std::out_of_range("sentencepiece tokenizer: id " + std::to_string(id) + " outside [0, " +
                                std::to_string(surface_.size()) + ")");
      text += surface_[id];
    }
    return text;
  }

  int64_t vocab_size() const override { return lib_.piece_size(sp_); }
  int32_t eos_id() const override { return lib_.eos_id(sp_); }
  std::string kind() const override { return "sentencepiece"; }
  std::string model_path() const override { return path_; }

 private:
  // Byte-piece ids for encode and the exact bytes of every id for decode.
  void build_tables() {
    const int n = lib_.piece_size(sp_);
    surface_.assign(n, std::string());
    std::vector<bool> seen(256, false);
    for (int id = 0; id < n; ++id) {
      int kind = 0;
      const std::string piece = lib_.piece(sp_, id, &kind);
      if (kind == 1) {  // a byte piece
        // Byte pieces are spelled "<0xNN>".
        const int b = std::stoi(piece.substr(3, 2), nullptr, 16);
        byte_id_[b] = id;
        seen[b] = true;
        surface_[id] = std::string(1, static_cast<char>(b));
      } else if (kind == 0) {
        surface_[id] = replace_space_marker(piece);
      }
      // Control pieces (eos) and unk carry no text: eos separates documents,
      // and byte fallback means encode never produces unk.
    }
    for (int b = 0; b < 256; ++b)
      if (!seen[b])
        throw std::runtime_error("SentencePiece model '" + path_ +
                                 "' has no byte fallback pieces, so it cannot encode every byte; "
                                 "delete it to retrain");
    if (lib_.eos_id(sp_) < 0)
      throw std::runtime_error("SentencePiece model '" + path_ + "' has no end-of-document piece; delete it to retrain");
  }

  static std::string replace_space_marker(const std::string& piece) {
    std::string out;
    for (size_t i = 0; i < piece.size();) {
      if (piece.compare(i, 3, kSpaceMarker) == 0) {
        out.push_back(' ');
        i += 3;
      } else {
        out.push_back(piece[i++]);
      }
    }
    return out;
  }

  const SpmLibrary& lib_ = SpmLibrary::get();
  void* sp_ = nullptr;
  std::string path_;
  std::array<int32_t, 256> byte_id_{};
  std::vector<std::string> surface_;
};

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Appends the pieces of one line SentencePiece may train on: the well-formed
// runs, cut to kMaxSentenceBytes (at a UTF-8 boundary) so none is skipped.
void add_line(const std::string& line, std::vector<std::string>* out) {
  segment(
      line,
      [&](size_t b, size_t e) {
        while (b < e) {
          size_t cut = std::min(e, b + kMaxSentenceBytes);
          while (cut < e && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
          out->push_back(line.substr(b, cut - b));
          b = cut;
        }
      },
      [](unsigned char) {});
}

// Training sentences: lines of the documents (newline is a user-defined
// piece of its own, so no merge can span it), documents taken in a fixed
// pseudo-random order until kTrainCharBudget, so the model is a pure
// function of the documents.
std::vector<std::string> training_sentences(const std::vector<std::string>& docs) {
  std::vector<std::pair<uint64_t, size_t>> order;
  for (size_t i = 0; i < docs.size(); ++i) order.emplace_back(splitmix64(i), i);
  std::sort(order.begin(), order.end());
  std::vector<std::string> sentences;
  size_t chars = 0;
  for (const auto& [key, i] : order) {
    std::istringstream lines(docs[i]);
    for (std::string line; std::getline(lines, line);) {
      if (chars >= kTrainCharBudget) return sentences;
      if (!line.empty()) add_line(line, &sentences);
      chars += line.size() + 1;
    }
  }
  return sentences;
}

std::string train_model(const std::vector<std::string>& docs, int64_t vocab_size, const std::string& cache_path) {
  const std::vector<std::string> sentences = training_sentences(docs);
  if (sentences.empty())
    throw std::runtime_error("cannot train SentencePiece model '" + cache_path + "': no training text");
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(vocab_size)},
      // Exact round trip: no NFKC, no leading "▁", no folding of space runs.
      {"normalization_rule_name", "identity"},
      {"add_dummy_prefix", "false"},
      {"remove_extra_whitespaces", "false"},
      {"byte_fallback", "true"},
      {"allow_whitespace_only_pieces", "true"},  // indentation runs in license text
      {"user_defined_symbols", "\n"},
      {"unk_id", "0"},
      {"eos_id", "1"},
      {"bos_id", "-1"},
      {"pad_id", "-1"},
      // Speed and determinism: we sample ourselves, SentencePiece takes all.
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"max_sentence_length", std::to_string(kMaxSentenceBytes)},
      {"num_threads", "2"},
      {"minloglevel", "2"},  // its INFO and WARNING chatter would drown our logs
  };
  std::vector<const char*> text, keys, values;
  std::vector<size_t> lengths;
  for (const auto& s : sentences) {
    text.push_back(s.data());
    lengths.push_back(s.size());
  }
  for (const auto& [k, v] : args) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  const SpmLibrary& lib = SpmLibrary::get();
  char* model = nullptr;
  size_t model_len = 0;
  char err[512] = {0};
  if (lib.train(text.data(), lengths.data(), text.size(), keys.data(), values.data(), keys.size(), &model, &model_len,
                err, sizeof err) != 0)
    throw std::runtime_error("cannot train SentencePiece model '" + cache_path + "' (vocab_size " +
                             std::to_string(vocab_size) + "): " + err);
  std::string serialized(model, model_len);
  lib.free(model);
  return serialized;
}

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::string& model_path) {
  if (!fs::exists(model_path)) throw std::runtime_error("SentencePiece model '" + model_path + "' does not exist");
  return std::make_unique<SentencePieceTokenizer>(read_whole_file(model_path), model_path);
}

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::vector<std::string>& train_docs,
                                                        int64_t vocab_size, const std::string& cache_path) {
  return make_sentencepiece_tokenizer([&] { return train_docs; }, vocab_size, cache_path);
}

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::function<std::vector<std::string>()>& train_docs,
                                                        int64_t vocab_size, const std::string& cache_path) {
  if (cache_path.empty()) throw std::invalid_argument("make_sentencepiece_tokenizer: empty cache_path");
  auto cached = read_cache_file(
      cache_path, [&](const std::string& bytes) { return std::make_unique<SentencePieceTokenizer>(bytes, cache_path); });
  if (cached) {
    // A cache trained for another size would silently change the model shape.
    if ((*cached)->vocab_size() != vocab_size)
      throw std::runtime_error("SentencePiece model '" + cache_path + "' has vocabulary " +
                               std::to_string((*cached)->vocab_size()) + ", not the requested " +
                               std::to_string(vocab_size) + "; delete it to retrain");
    return std::move(*cached);
  }
  const std::string serialized = train_model(train_docs(), vocab_size, cache_path);
  publish_cache_file(cache_path, serialized);  // a reader (or a second trainer racing us) sees all or nothing
  return std::make_unique<SentencePieceTokenizer>(serialized, cache_path);
}

}  // namespace zl
