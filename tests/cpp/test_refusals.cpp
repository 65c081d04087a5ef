// What cannot work is refused up front with an error naming its cause
// (issue 30 §6): a checkpoint of another family, a path no file can have, a
// served run that would fail only after its training (an accelerator or
// shape ablations/hardware.ini does not name, a KV budget that holds no block).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "models/factory.h"
#include "sim/checkpoint.h"
#include "sim/config.h"
#include "sim/model_options.h"
#include "sim/serving/hardware.h"
#include "sim/serving/serving_checks.h"
#include "sim/study/study.h"
#include "sim/study_file.h"
#include "tests/cpp/message_of.h"
#include "tests/cpp/temp_dir.h"

namespace zl {
namespace {
namespace fs = std::filesystem;

const std::string kSource = ZL_SOURCE_DIR;

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

// The smoke study's shape served: 2 layers of 32, context 64. The
// baseline's cache is 2 layers × (K + V) 32 floats = 512 bytes per token.
RunConfig served(const std::string& variant) {
  RunConfig c = small(variant);
  c.model.layers = 2;
  c.model.heads = 2;
  c.model.context = 64;
  c.serve.enabled = true;
  return c;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Refusals, AServedRunsNamesAndKvBudgetAreCheckedFromItsConfig) {
  const HardwareCatalog catalog = read_hardware(kSource + "/ablations/hardware.ini");
  EXPECT_EQ(serving_problem(served("baseline"), catalog), "");

  // Names the projection would look up after training: the key, the name and the known ones.
  RunConfig c = served("baseline");
  c.serve.hardware = "H100-SXM, TPUv9";
  std::string msg = serving_problem(c, catalog);
  EXPECT_EQ(msg.rfind("serve.hardware: ", 0), 0u) << msg;
  for (const std::string& part : {"'TPUv9'", "hardware.ini", "known: A100-80GB-SXM, H100-SXM, H200-SXM, L4"})
    EXPECT_TRUE(has(msg, part)) << part << " in: " << msg;
  c = served("baseline");
  c.serve.shapes = "llama2-7b,llama9";
  msg = serving_problem(c, catalog);
  EXPECT_EQ(msg.rfind("serve.shapes: ", 0), 0u) << msg;
  EXPECT_TRUE(has(msg, "'llama9'") && has(msg, "known: llama2-70b, llama2-7b")) << msg;
  // Not projected (either list empty), or not served: nothing is looked up, as after training.
  c.serve.hardware = "";
  EXPECT_EQ(serving_problem(c, catalog), "");
  c = served("baseline");
  c.serve.hardware = "TPUv9";
  c.serve.enabled = false;
  EXPECT_EQ(serving_problem(c, catalog), "");

  // A budget that holds no block of 16 tokens: the figure a block needs, the variant's own.
  c = served("baseline");
  c.serve.kv_budget_mb = 0.001;
  msg = serving_problem(c, catalog);
  EXPECT_EQ(msg.rfind("serve.kv_budget_mb: 0.001 MB (1000 bytes) holds no KV block of variant baseline's cache", 0), 0u)
      << msg;
  for (const std::string& part : {"serve.block_size = 16 tokens at 512 bytes per token needs 8192 bytes",
                                  "set serve.kv_budget_mb to at least 0.0082"})
    EXPECT_TRUE(has(msg, part)) << part << " in: " << msg;
  c.serve.kv_budget_mb = 0.0082;  // the figure it gave
  EXPECT_EQ(serving_problem(c, catalog), "");
  c.serve.kv_budget_mb = 0.005;  // 5000 bytes: not the baseline's block, but latent_kv's (r = 32: 256 bytes a token)
  EXPECT_TRUE(has(serving_problem(c, catalog), "8192 bytes"));
  c.variant = "latent_kv";
  EXPECT_EQ(serving_problem(c, catalog), "");
  c.serve.block_size = 32;
  EXPECT_TRUE(has(serving_problem(c, catalog), "serve.block_size = 32 tokens at 256 bytes per token needs 8192 bytes"));
  // The default budget (serve.max_num_seqs full contexts of the baseline's cache) with blocks too large for it.
  c = served("baseline");
  c.serve.max_num_seqs = 1;
  c.serve.block_size = 65;
  msg = serving_problem(c, catalog);
  EXPECT_TRUE(has(msg, "0, the default (serve.max_num_seqs = 1 full contexts of the baseline's cache: 32768 bytes)"))
      << msg;

  c = served("baseline");
  c.serve.output_len = 64;
  EXPECT_EQ(serving_problem(c, catalog),
            "serve.output_len: 64 leaves no room for a prompt in model.context = 64 (at most 63)");
}

// The study refuses it when it resolves its runs: before any data, model,
// checkpoint or folder is made, naming where the key was set.
TEST(Refusals, AStudyRefusesAnUnservableRunBeforeTrainingAnything) {
  TempDir tmp("zl_refusals");
  const std::string out = tmp / "out";
  const Overrides tiny = {{"output.dir", out},       {"serve.enabled", "on"},        {"train.steps", "2"},
                          {"train.warmup", "1"},      {"train.eval_every", "2"},      {"train.checkpoint_every", "2"},
                          {"data.tokenizer", "byte"}, {"data.documents", "20"},       {"output.verbosity", "0"},
                          {"serve.requests", "2"}};
  auto refusal = [&](const Overrides& extra) {
    Overrides o = tiny;
    o.insert(o.end(), extra.begin(), extra.end());
    const Study study = load_study(kSource + "/ablations/smoke.ini", o);
    try {
      run_study(study, StudyOptions{});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no ConfigError");
  };
  std::string msg = refusal({{"serve.hardware", "nonsense"}});
  EXPECT_EQ(msg.rfind("command line: serve.hardware: unknown accelerator 'nonsense'", 0), 0u) << msg;
  EXPECT_TRUE(has(msg, "H100-SXM")) << msg;
  msg = refusal({{"serve.kv_budget_mb", "0.001"}});
  EXPECT_EQ(msg.rfind("command line: serve.kv_budget_mb: 0.001 MB", 0), 0u) << msg;
  EXPECT_TRUE(has(msg, "needs 8192 bytes")) << msg;
  // A grid point of the study: the variant swept, the budget holding latent_kv's block but not the baseline's.
  msg = refusal({{"serve.kv_budget_mb", "0.005"}, {"variant", "latent_kv,baseline"}});
  EXPECT_TRUE(has(msg, "variant baseline's cache") && has(msg, "needs 8192 bytes")) << msg;
  EXPECT_FALSE(fs::exists(out)) << "the refused study made " << out;
}

}  // namespace
}  // namespace zl
