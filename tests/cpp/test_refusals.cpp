// What cannot work is refused up front with an error naming its cause
// (issue 30 §6): a checkpoint of another family, a path no file can have.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "models/factory.h"
#include "sim/checkpoint.h"
#include "sim/config.h"
#include "sim/model_options.h"
#include "sim/study_file.h"
#include "tests/cpp/message_of.h"
#include "tests/cpp/temp_dir.h"

namespace zl {
namespace {

RunConfig small(const std::string& variant) {
  RunConfig c;
  c.variant = variant;
  c.data.tokenizer = "byte";
  c.model.layers = 1;
  c.model.heads = 4;
  c.model.dim = 32;
  c.model.context = 16;
  return c;
}

Transformer built(const RunConfig& c) {
  torch::NoGradGuard no_grad;
  return make_model(trained_family(c), model_config(c, 257));
}

// A complete checkpoint of `c`'s model at step 3 under `dir`.
void save_checkpoint(const std::string& dir, const RunConfig& c) {
  Transformer model = built(c);
  CheckpointState s;
  s.step = 3;
  s.complete = true;
  CheckpointDir(dir).save(s, model, nullptr, to_ini(c), "");
}

TEST(Refusals, ALatentKvCheckpointIsNotLoadedIntoABaseline) {
  TempDir tmp("zl_refusals");
  const std::string dir = tmp / "ckpt";
  save_checkpoint(dir, small("latent_kv"));
  EXPECT_EQ(checkpoint_family(dir), "latent_kv");

  // Named by the family it expects: refused before anything loads, naming
  // the file, its family and the one expected.
  Transformer base = built(small("baseline"));
  const auto before = base->blocks[0]->as<Block>()->attn->qkv->weight.sizes().vec();
  const std::string msg = message_of([&] { CheckpointDir(dir).load(&base, nullptr, "baseline"); });
  for (const std::string& part :
       std::vector<std::string>{dir + "/model-3.pt", "family latent_kv", "variant = latent_kv", "of family baseline"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in: " << msg;
  EXPECT_EQ(base->blocks[0]->as<Block>()->attn->qkv->weight.sizes().vec(), before);  // untouched

  // Without a family, the shapes still refuse it, naming the parameter
  // (LibTorch alone would give the baseline's qkv the latent's [C+r,C]).
  Transformer other = built(small("baseline"));
  const std::string shape_msg = message_of([&] { CheckpointDir(dir).load(&other, nullptr); });
  EXPECT_NE(shape_msg.find("blocks.0.attn.qkv.weight"), std::string::npos) << shape_msg;
  // The latent's rank is auto: 4·D = 32, so its [W^Q; W^DKV] is [64,32], the baseline's qkv [96,32].
  EXPECT_NE(shape_msg.find("is [64,32] in the checkpoint but [96,32] in the model"), std::string::npos) << shape_msg;

  // Its own family loads.
  Transformer same = built(small("latent_kv"));
  EXPECT_EQ(CheckpointDir(dir).load(&same, nullptr, "latent_kv").step, 3);
}

TEST(Refusals, VariantsThatShareANetworkShareACheckpoint) {
  TempDir tmp("zl_refusals");
  // The baseline's checkpoint trained by an sfvl run or a latent_kv svd run
  // (both train the baseline's network) loads into a baseline model.
  RunConfig svd = small("latent_kv");
  svd.latent.mode = "svd";
  for (const RunConfig& writer : {small("sfvl"), svd, small("streaming")}) {
    const std::string dir = tmp / ("ckpt-" + writer.variant + writer.latent.mode);
    save_checkpoint(dir, writer);
    EXPECT_EQ(checkpoint_family(dir), "baseline") << writer.variant;
    Transformer base = built(small("baseline"));
    EXPECT_NO_THROW(CheckpointDir(dir).load(&base, nullptr, "baseline")) << writer.variant;
  }
  // oet decodes sfcl's network; an sfcl checkpoint is not a baseline's.
  const std::string dir = tmp / "ckpt-oet";
  save_checkpoint(dir, small("oet"));
  EXPECT_EQ(checkpoint_family(dir), "sfcl");
  Transformer sfcl = built(small("sfcl"));
  EXPECT_NO_THROW(CheckpointDir(dir).load(&sfcl, nullptr, "sfcl"));
  Transformer base = built(small("baseline"));
  EXPECT_NE(message_of([&] { CheckpointDir(dir).load(&base, nullptr, "baseline"); }).find("family sfcl"),
            std::string::npos);
}

// A NUL byte in a value that becomes a path would cut the path short there
// (the system call reads up to it): another folder would be written.
TEST(Refusals, APathWithANulByteIsRefusedNamingTheKey) {
  const std::string nul("res\0ults", 8);
  std::string msg = message_of([&] { parse_study("[output]\ndir = " + nul + "\n", "a.ini", {}); });
  EXPECT_NE(msg.find("a.ini:2: output.dir"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NUL byte (byte 4 of 8)"), std::string::npos) << msg;

  msg = message_of([&] { parse_study("", "a.ini", {{"output.dir", nul}}); });
  EXPECT_NE(msg.find("command line: output.dir"), std::string::npos) << msg;
  EXPECT_THROW(parse_study("", "a.ini", {{"output.dir", nul}}), ConfigError);

  msg = message_of([&] { parse_study("", "a.ini", {{"serve.trace", std::string("trace\0.csv", 10)}}); });
  EXPECT_NE(msg.find("serve.trace"), std::string::npos) << msg;

  // Other characters no file name should hold, and a component too long for one.
  msg = message_of([&] { parse_study("", "a.ini", {{"output.dir", "res\nults"}}); });
  EXPECT_NE(msg.find("output.dir: holds the control character 0x0a"), std::string::npos) << msg;
  msg = message_of([&] { parse_study("", "a.ini", {{"output.dir", "results/" + std::string(300, 'x')}}); });
  EXPECT_NE(msg.find("component of 300 bytes"), std::string::npos) << msg;
  EXPECT_EQ(message_of([&] { parse_study("", "a.ini", {{"output.dir", "/tmp/a b/é"}}); }), "");

  // The study file's own path.
  msg = message_of([&] { load_study(std::string("ablations/smoke.ini\0.bak", 24), {}); });
  EXPECT_NE(msg.find("study file path holds a NUL byte"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zl
