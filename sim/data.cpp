#include "sim/data.h"

#include <filesystem>
#include <mutex>

namespace zl {
namespace fs = std::filesystem;

std::string cache_dir(const RunConfig& cfg) {
  auto dir = fs::path(cfg.output.dir) / "cache";
  fs::create_directories(dir);
  return dir.string();
}

CorpusOptions corpus_options(const DataConfig& d, const std::string& corpus) {
  CorpusOptions o;
  o.name = corpus;
  o.contracts.documents = d.documents > 0 ? d.documents : 2000;
  o.contracts.max_nesting = static_cast<int>(d.nesting);
  o.contracts.facts = static_cast<int>(d.facts);
  o.contracts.reference_distance = static_cast<int>(d.reference_distance);
  o.brown_dir = (fs::path(ZL_SOURCE_DIR) / "data" / "cache" / "brown").string();
  o.max_documents = corpus == "contracts" ? 0 : d.documents;
  return o;
}

namespace {

// The corpus is generated with a fixed seed: the data (and its split) is
// the same for every run seed, which is what makes runs comparable; the run
// seed varies the order batches are drawn in.
constexpr uint64_t kCorpusSeed = 1234;

std::string corpus_key(const DataConfig& d, const std::string& corpus) {
  return corpus + "|" + std::to_string(d.documents) + "|" + std::to_string(d.nesting) + "|" + std::to_string(d.facts) +
         "|" + std::to_string(d.reference_distance) + "|" + std::to_string(d.val_fraction);
}

Split load_split(const DataConfig& d, const std::string& corpus) {
  auto docs = load_corpus(corpus_options(d, corpus), kCorpusSeed);
  return split_corpus(docs, d.val_fraction, kCorpusSeed);
}

std::vector<std::string> texts(const std::vector<Document>& docs) {
  std::vector<std::string> out;
  out.reserve(docs.size());
  for (const auto& d : docs) out.push_back(d.text);
  return out;
}

}  // namespace

Dataset prepare_data(const RunConfig& cfg, const std::string& corpus_arg) {
  const DataConfig& d = cfg.data;
  const std::string corpus = corpus_arg.empty() ? d.corpus : corpus_arg;
  const std::string dir = cache_dir(cfg);

  Dataset ds;
  ds.corpus = corpus;
  ds.docs = load_split(d, corpus);

  std::string tok_key = "byte";
  if (d.tokenizer == "byte") {
    ds.tokenizer = make_byte_tokenizer();
  } else {
    tok_key = "sp" + hash_hex(corpus_key(d, d.corpus) + "|" + std::to_string(d.vocab_size));
    auto model = (fs::path(dir) / ("tokenizer-" + tok_key + ".model")).string();
    ds.tokenizer = make_sentencepiece_tokenizer(
        [&] { return texts(corpus == d.corpus ? ds.docs.train : load_split(d, d.corpus).train); }, d.vocab_size,
        model);
  }
  std::string key = hash_hex(corpus_key(d, corpus) + "|" + tok_key);
  ds.train = encode_documents(ds.docs.train, *ds.tokenizer, (fs::path(dir) / ("tokens-" + key + "-train.bin")).string());
  ds.val = encode_documents(ds.docs.val, *ds.tokenizer, (fs::path(dir) / ("tokens-" + key + "-val.bin")).string());
  return ds;
}

}  // namespace zl
