// Issue 16, corruption: every cache zerolayer publishes (token shards, a
// tokenizer model, a verifier, an offline table) and every checkpoint
// records a checksum when it is published; a file damaged afterwards (real
// truncated and overwritten files here) is detected, set aside and built
// again, never loaded half-right.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "datasets/cache_file.h"
#include "datasets/token_shards.h"
#include "datasets/tokenizer.h"
#include "models/factory.h"
#include "sim/checkpoint.h"
#include "sim/stages/offline_table_file.h"
#include "tests/cpp/temp_dir.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {
namespace fs = std::filesystem;

std::string contents(const std::string& path) { return read_whole_file(path); }

void overwrite(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The same size, one byte changed: only the CRC can tell.
void flip_a_byte(const std::string& path, size_t at) {
  std::string b = contents(path);
  b.at(at) = static_cast<char>(b[at] ^ 0x40);
  overwrite(path, b);
}

TEST(CacheFile, ChecksumRecordsNameWhatDisagrees) {
  const std::string bytes = "step=3\n";
  const std::string record = checksum_record(bytes);
  EXPECT_EQ(record.rfind("crc32 ", 0), 0u) << record;
  EXPECT_NE(record.find(" bytes 7"), std::string::npos) << record;
  EXPECT_EQ(checksum_mismatch(bytes, record), "");
  EXPECT_EQ(checksum_mismatch("step=", record), "5 bytes where 7 were published");
  EXPECT_NE(checksum_mismatch("step=4\n", record).find("crc32"), std::string::npos);
  EXPECT_NE(checksum_mismatch(bytes, "crc32 zz").find("unreadable"), std::string::npos);
  EXPECT_NE(checksum_mismatch(bytes, record + " trailing").find("unreadable"), std::string::npos);
}

TEST(CacheFile, DamagedFilesAreSetAsideAndReadAsMissing) {
  TempDir dir("zl_damage");
  const std::string path = dir / "sub/cache.bin", payload(1000, 'x');
  EXPECT_FALSE(read_cache_file(path).has_value());
  publish_cache_file(path, payload);
  EXPECT_EQ(read_cache_file(path).value(), payload);

  fs::resize_file(path, 400);  // truncated: the size disagrees
  testing::internal::CaptureStderr();
  EXPECT_FALSE(read_cache_file(path).has_value());
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find(path), std::string::npos) << warning;
  EXPECT_NE(warning.find("400 bytes where 1000 were published"), std::string::npos) << warning;
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(contents(path + ".corrupt").size(), 400u);  // kept for a look

  publish_cache_file(path, payload);
  flip_a_byte(path, 500);  // same size: the CRC disagrees
  testing::internal::CaptureStderr();
  EXPECT_FALSE(read_cache_file(path).has_value());
  EXPECT_NE(testing::internal::GetCapturedStderr().find("crc32"), std::string::npos);

  // From before checksums: no sidecar, the bytes as they are (the reader's own checks apply).
  overwrite(path, "older");
  EXPECT_EQ(read_cache_file(path).value(), "older");
}

TEST(CacheFile, DamagedTokenShardIsEncodedAgain) {
  TempDir dir("zl_damage");
  const auto tok = make_byte_tokenizer();
  const std::vector<Document> docs = {{"first document", "a"}, {"second, longer document", "b"}};
  const std::string path = dir / "tokens.bin";
  const TokenStream fresh = encode_documents(docs, *tok, path);
  const int64_t n = fresh.tokens.numel();

  for (auto damage : {+[](const std::string& p) { fs::resize_file(p, 30); },
                      +[](const std::string& p) { flip_a_byte(p, 30); }}) {
    damage(path);
    testing::internal::CaptureStderr();
    // Other documents: a cache read back would give the old tokens.
    const TokenStream again = encode_documents({{"other", "c"}}, *tok, path);
    const std::string warning = testing::internal::GetCapturedStderr();
    EXPECT_NE(warning.find("set aside"), std::string::npos) << warning;
    EXPECT_EQ(again.tokens.numel(), 6) << "the damaged cache was read";
    fs::remove(path);
    fs::remove(path + ".crc32");
    encode_documents(docs, *tok, path);
  }
  // An undamaged cache is read, not encoded again.
  EXPECT_EQ(encode_documents({{"other", "c"}}, *tok, path).tokens.numel(), n);
  // From before checksums and not a shard: set aside too, never a crash.
  fs::remove(path + ".crc32");
  overwrite(path, "garbage that is no token shard");
  testing::internal::CaptureStderr();
  EXPECT_EQ(encode_documents(docs, *tok, path).tokens.numel(), n);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("not a zerolayer token shard"), std::string::npos);
}

TEST(CacheFile, OfflineTablePublishesItsChecksum) {
  TempDir dir("zl_damage");
  OfflineTable t;
  t.kinds = 1;
  t.buckets = 1;
  t.layers = 1;
  t.dim = 2;
  t.counts = {3};
  t.delta.resize(1, 2);
  t.delta.insert(0, 1) = 0.5f;
  t.delta.makeCompressed();
  const std::string path = dir / "table.bin";
  save_offline_table(t, path);
  const auto bytes = read_cache_file(path);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(parse_offline_table(*bytes, path).delta.coeff(0, 1), 0.5f);
  flip_a_byte(path, bytes->size() - 1);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(read_cache_file(path).has_value());
  testing::internal::GetCapturedStderr();
}

TEST(CheckpointDamage, DamagedFilesAreDetectedBeforeAnythingLoads) {
  TempDir dir("zl_damage");
  torch::manual_seed(1);
  Transformer saved = make_model("baseline", tiny_model());
  torch::optim::AdamW optim(saved->parameters(), torch::optim::AdamWOptions(1e-3));
  overwrite(dir / "tok.model", "a tokenizer");
  CheckpointDir ckpt((dir.path() / "ckpt").string());
  CheckpointState state;
  state.step = 7;
  ckpt.save(state, saved, &optim, "[model]\n", dir / "tok.model");
  const std::string model_file = (dir.path() / "ckpt/model-7.pt").string();
  EXPECT_NE(contents(ckpt.path() + "/state.ini").find("checksum.model-7.pt=crc32 "), std::string::npos);

  auto fresh_weights = [] {
    torch::manual_seed(2);
    return make_model("baseline", tiny_model());
  };
  Transformer loaded = fresh_weights();
  EXPECT_EQ(ckpt.load(&loaded, nullptr).step, 7);
  EXPECT_TRUE(torch::equal(loaded->parameters()[0], saved->parameters()[0]));

  // One flipped byte: named, and the model keeps its own weights.
  const std::string good = contents(model_file);
  flip_a_byte(model_file, good.size() / 2);
  Transformer untouched = fresh_weights();
  const torch::Tensor before = untouched->parameters()[0].clone();
  try {
    ckpt.load(&untouched, nullptr);
    ADD_FAILURE() << "a damaged checkpoint loaded";
  } catch (const DamagedCheckpoint& e) {
    EXPECT_NE(std::string(e.what()).find(model_file), std::string::npos) << e.what();
  }
  EXPECT_TRUE(torch::equal(untouched->parameters()[0], before));

  // Every recorded file is checked: the optimizer's (when asked for) and the tokenizer's copy.
  overwrite(model_file, good);
  fs::resize_file(dir.path() / "ckpt/optim-7.pt", 100);
  EXPECT_NO_THROW(ckpt.load(&loaded, nullptr));
  EXPECT_THROW(ckpt.load(&loaded, &optim), DamagedCheckpoint);
  fs::remove(dir.path() / "ckpt/optim-7.pt");
  EXPECT_THROW(ckpt.load(&loaded, &optim), DamagedCheckpoint);  // recorded, missing
  overwrite(dir.path() / "ckpt/tokenizer.model", "another tokenizer");
  EXPECT_THROW(ckpt.load(&loaded, nullptr), DamagedCheckpoint);

  // Set aside: the checkpoint no longer exists, so the trainer starts over.
  testing::internal::CaptureStderr();
  ckpt.set_aside("model-7.pt: crc32 disagrees");
  EXPECT_NE(testing::internal::GetCapturedStderr().find("training it again"), std::string::npos);
  EXPECT_FALSE(ckpt.exists());
  EXPECT_TRUE(fs::exists(ckpt.path() + "/state.ini.corrupt"));
}

TEST(CheckpointDamage, OlderCheckpointsWithoutChecksumsStillLoad) {
  TempDir dir("zl_damage");
  Transformer saved = make_model("baseline", tiny_model());
  CheckpointDir ckpt((dir.path() / "ckpt").string());
  CheckpointState state;
  state.step = 3;
  state.complete = true;
  ckpt.save(state, saved, nullptr, "[model]\n", "");
  const std::string ini = ckpt.path() + "/state.ini";
  std::string text = contents(ini), kept;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("checksum.", 0) != 0) kept += line + "\n";
  overwrite(ini, kept);
  Transformer loaded = make_model("baseline", tiny_model());
  EXPECT_TRUE(ckpt.load(&loaded, nullptr).complete);
  EXPECT_TRUE(torch::equal(loaded->parameters()[0], saved->parameters()[0]));
}

}  // namespace
}  // namespace zl
