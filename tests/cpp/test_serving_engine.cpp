// The real server's step against the plain decoder: DecodeStep::feed (prefill
// chunks and decodes of different sequences in one pass) gives each sequence
// the logits the reference path gives it alone, and a served run, with
// chunked prefills, rows reused, preemptions and a hook taking tokens back,
// produces under greedy sampling exactly the tokens the batch decoder does.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <vector>

#include "models/decode_step.h"
#include "models/transformer.h"
#include "sim/decoder.h"
#include "sim/serving/engine.h"
#include "sim/serving/serve_loop.h"
#include "sim/stages/oet_stage.h"
#include "tests/cpp/tiny_model.h"

namespace zl {
namespace {

ModelConfig shape() {
  ModelConfig c = tiny_model_four_heads();
  c.vocab = 53;  // the prompts below hold ids up to 50, and ids drawn modulo 53
  return c;
}

// The logits of `tokens`' last row, on the reference path, alone in a cache.
torch::Tensor reference_last(Transformer& model, const std::vector<int64_t>& tokens) {
  auto cache = model->make_cache(1);
  auto t = torch::tensor(tokens, torch::kLong).view({1, static_cast<int64_t>(tokens.size())});
  return model->forward(t, cache).select(1, tokens.size() - 1)[0];
}

void expect_feed_matches(Transformer& model, int threads) {
  const int saved = at::get_num_threads();
  at::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  model->eval();
  {
    DecodeStep step(model);
    auto cache = model->make_cache(3);
    const std::vector<int64_t> a{3, 14, 15, 9, 26, 5}, b{2, 7, 18, 28}, c{1, 41, 42, 13, 50};
    std::vector<int64_t> sa, sb, sc;  // what each sequence has been fed
    auto feed = [&](std::vector<DecodeStep::Feed> feeds) {
      for (const auto& f : feeds) (f.sequence == 0 ? sa : f.sequence == 1 ? sb : sc).insert(
          (f.sequence == 0 ? sa : f.sequence == 1 ? sb : sc).end(), f.tokens.begin(), f.tokens.end());
      return step.feed(feeds, cache);
    };
    // Step 1: half of a's prompt (no logits), all of c's.
    auto l1 = feed({{0, {a[0], a[1], a[2]}, false}, {2, c, true}});
    ASSERT_EQ(l1.size(0), 1);
    EXPECT_TRUE(torch::allclose(l1[0], reference_last(model, sc), 1e-4, 1e-4));
    // Step 2: the rest of a's prompt beside c's first decode.
    auto l2 = feed({{0, {a[3], a[4], a[5]}, true}, {2, {17}, true}});
    EXPECT_TRUE(torch::allclose(l2[0], reference_last(model, sa), 1e-4, 1e-4));
    EXPECT_TRUE(torch::allclose(l2[1], reference_last(model, sc), 1e-4, 1e-4));
    // Step 3: b joins (its whole prompt) while a and c decode.
    auto l3 = feed({{0, {33}, true}, {1, b, true}, {2, {8}, true}});
    EXPECT_TRUE(torch::allclose(l3[0], reference_last(model, sa), 1e-4, 1e-4));
    EXPECT_TRUE(torch::allclose(l3[1], reference_last(model, sb), 1e-4, 1e-4));
    EXPECT_TRUE(torch::allclose(l3[2], reference_last(model, sc), 1e-4, 1e-4));
    auto len = cache.lengths;
    EXPECT_EQ(len[0].item<int64_t>(), 7);
    EXPECT_EQ(len[1].item<int64_t>(), 4);
    EXPECT_EQ(len[2].item<int64_t>(), 7);
    EXPECT_THROW(step.feed({{2, {1}, true}, {0, {1}, true}}, cache), c10::Error);  // out of sequence order
  }
  at::set_num_threads(saved);
}

TEST(ServingEngine, FeedMatchesTheReferencePathPerSequence) {
  Transformer model = tiny_transformer(11, shape());
  for (int threads : {1, 2}) expect_feed_matches(model, threads);
}

TEST(ServingEngine, FeedMatchesWithFusedKeyWeighting) {
  torch::manual_seed(12);
  ModelConfig c = shape();
  c.fused.key_weighting = FusedOptions::KeyWeighting::Scale;
  c.fused.importance = FusedOptions::Importance::AttnMass;
  Transformer model(c);
  for (int threads : {1, 2}) expect_feed_matches(model, threads);
}

// Takes back the newest token of every sequence the first time it reaches
// each even output length: a review that fires often, and deterministically.
class EvenDropper : public DecodeHook {
 public:
  void begin_batch(int64_t batch) override { prompt_.assign(batch, 0), fired_.assign(batch, {}); }
  void begin_sequence(int64_t s, int64_t prompt_len) override { prompt_[s] = prompt_len, fired_[s].clear(); }
  Verdict review(const std::vector<std::vector<int32_t>>& seqs, const std::vector<bool>& active) override {
    Verdict v{std::vector<int64_t>(seqs.size(), 0), std::vector<double>(seqs.size(), 0.0)};
    for (size_t s = 0; s < seqs.size(); ++s) {
      if (!active[s]) continue;
      const int64_t produced = seqs[s].size() - prompt_[s];
      if (produced % 2 == 0 && fired_[s].insert(produced).second) v.drop[s] = 1, ++drops;
    }
    return v;
  }
  int64_t drops = 0;

 private:
  std::vector<int64_t> prompt_;
  std::vector<std::set<int64_t>> fired_;
};

// Serves `requests` greedily and returns each one's output tokens.
std::vector<std::vector<int32_t>> serve_greedy(Transformer& model, const std::vector<ServeRequest>& requests,
                                               const SchedulerOptions& sched, DecodeHook* hook, ServeResult* result) {
  DecodeOptions opt;
  opt.sampling.temperature = 0;
  ServingEngine engine(model, requests, opt, hook, sched.max_num_seqs, 1);
  *result = serve(requests, sched, engine);
  std::vector<std::vector<int32_t>> out;
  for (const auto& q : requests) {
    const auto& t = engine.tokens(q.id);
    out.emplace_back(t.begin() + q.prompt.size(), t.end());
  }
  return out;
}

TEST(ServingEngine, ServesTheTokensTheBatchDecoderGives) {
  Transformer model = tiny_transformer(13, shape());
  std::vector<ServeRequest> requests;
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t i = 0; i < 7; ++i) {
    std::vector<int32_t> p;
    for (int64_t t = 0; t < 5 + 3 * (i % 4); ++t) p.push_back(static_cast<int32_t>((i * 13 + t * 7) % 53));
    prompts.push_back(p);
    requests.push_back({i, 0, p, 6 + i % 3});  // all at once: the rows and blocks run short
  }
  // The batch decoder, one prompt at a time, greedy, every token kept.
  DecodeOptions opt;
  opt.sampling.temperature = 0;
  opt.batch = 1;
  std::vector<std::vector<int32_t>> want;
  for (const auto& q : requests) {
    opt.max_new_tokens = q.output_len;
    at::Generator gen = make_generator(1);
    want.push_back(decode(model, {q.prompt}, opt, gen).continuations[0]);
  }
  // Tight: 3 rows, 8 tokens a step (prefills are chunked), and blocks of 4
  // for about 1.5 requests (the latest admitted is preempted and recomputed).
  SchedulerOptions sched;
  sched.block_size = 4;
  sched.num_blocks = 9;
  sched.max_num_seqs = 3;
  sched.max_num_batched_tokens = 8;
  ServeResult plain, reviewed;
  EXPECT_EQ(serve_greedy(model, requests, sched, nullptr, &plain), want);
  int64_t preempted = 0, chunked = 0;
  for (const auto& s : plain.steps) {
    preempted += s.preempted;
    for (const auto& p : s.shape.parts) chunked += p.tokens > 1 && !p.samples;
  }
  EXPECT_GT(preempted, 0);
  EXPECT_GT(chunked, 0);
  // A hook that takes tokens back: greedy re-sampling gives them again, so
  // the tokens are the same, in more steps.
  EvenDropper dropper;
  EXPECT_EQ(serve_greedy(model, requests, sched, &dropper, &reviewed), want);
  EXPECT_GT(dropper.drops, 10);
  EXPECT_GT(reviewed.steps.size(), plain.steps.size());
  for (size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(static_cast<int64_t>(reviewed.requests[i].token_ns.size()), requests[i].output_len);
}

// oet served (issue 29 item 4): with its corrections set per row and token
// before each step, chunked prefills, reused rows and preemptions give the
// tokens oet_decode gives each prompt alone.
TEST(ServingEngine, ServesOetWithTheCorrectionsItsDecodeGives) {
  torch::manual_seed(18);
  ModelConfig c = shape();
  c.correction_hidden = 8;
  Transformer model(c);
  {  // Larger MLP weights than an initialisation's, so that what the MLP reads decides the greedy token.
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters())
      if (p.key().find("mlp") != std::string::npos) p.value().mul_(8);
  }
  OetConfig o;
  SyntheticOet oet = synthetic_oet(model->cfg, o);
  // Coefficients far from 1 (0 to 3), so that a correction moves a random model's greedy choice.
  OfflineTableBuilder strong(kEventKinds, o.buckets, c.layers, c.dim);
  for (int64_t row = 0; row < kEventKinds * o.buckets; ++row) {
    auto coeff = (3 * torch::rand({c.layers * c.dim})).contiguous();
    strong.add(row, coeff.data_ptr<float>());
  }
  oet.table = strong.finish(/*tolerance=*/0);
  std::vector<ServeRequest> requests;
  for (int64_t i = 0; i < 7; ++i) {
    std::vector<int32_t> p;  // every fourth prompt token names a party (id % 7 == 0)
    for (int64_t t = 0; t < 5 + 3 * (i % 4); ++t) p.push_back(static_cast<int32_t>(t % 4 == 0 ? 7 * (1 + (i + t) % 7) : (i * 13 + t * 5) % 53));
    requests.push_back({i, 0, p, 6 + i % 3});
  }
  DecodeOptions opt;
  opt.sampling.temperature = 0;
  opt.batch = 1;
  std::vector<std::vector<int32_t>> want, plain;
  for (const auto& q : requests) {
    opt.max_new_tokens = q.output_len;
    at::Generator gen = make_generator(1), again = make_generator(1);
    want.push_back(oet_decode(model, oet.trigger, oet.table, {q.prompt}, opt, gen).continuations[0]);
    model->set_correction_mode(CorrectionMode::Identity);  // the same model with no correction anywhere
    plain.push_back(decode(model, {q.prompt}, opt, again).continuations[0]);
    model->set_correction_mode(CorrectionMode::Module);
  }
  ASSERT_NE(want, plain);  // the table's corrections change what is decoded: the test below can fail
  SchedulerOptions sched;
  sched.block_size = 4;
  sched.num_blocks = 9;
  sched.max_num_seqs = 3;
  sched.max_num_batched_tokens = 8;
  auto hook = oet_serving_hook(model, oet.trigger, oet.table);
  ServeResult served;
  EXPECT_EQ(serve_greedy(model, requests, sched, hook.get(), &served), want);
  int64_t preempted = 0;
  for (const auto& s : served.steps) preempted += s.preempted;
  EXPECT_GT(preempted, 0);  // a recomputed request's trigger starts again with its row
}

}  // namespace
}  // namespace zl
