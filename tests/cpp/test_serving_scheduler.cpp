// The serving scheduler (issue 14) against vLLM V1's rules, on small cases
// worked out by hand: running requests before waiting ones, admission in
// arrival order within the token budget, max_num_seqs and the KV blocks, a
// prefill chunked to the budget left, parts in slot order and a fresh
// request in the lowest free row; block counting (rounded up, capped for an
// evicting cache, all returned at the end); preemption by recompute; drops
// taken back by sfvl's review; and the errors that name what to change.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/serving/scheduler.h"
#include "tests/cpp/message_of.h"
#include "tests/cpp/scheduler_options.h"

namespace {

using zl::Scheduler;
using zl::SchedulerOptions;
using zl::ScheduledPart;
using zl::StepPlan;

using zl::message_of;
using zl::scheduler_options;

// Plans a step and completes it with nothing dropped; `finished` gets the
// requests that finished with it.
StepPlan step(Scheduler& s, std::vector<int64_t>* finished = nullptr) {
  StepPlan plan = s.schedule();
  auto done = s.complete(plan, std::vector<int64_t>(plan.parts.size(), 0));
  if (finished) *finished = done;
  return plan;
}

// One part, spelled out so a failure prints which field differs.
void expect_part(const ScheduledPart& p, int64_t request, int64_t slot, int64_t start, int64_t tokens, bool samples,
                 bool fresh_slot) {
  EXPECT_EQ(p.request, request);
  EXPECT_EQ(p.slot, slot) << "request " << request;
  EXPECT_EQ(p.start, start) << "request " << request;
  EXPECT_EQ(p.tokens, tokens) << "request " << request;
  EXPECT_EQ(p.samples, samples) << "request " << request;
  EXPECT_EQ(p.fresh_slot, fresh_slot) << "request " << request;
}

TEST(ServingScheduler, RunningFirstThenWaitingInArrivalOrderWithinBudgetAndSeqs) {
  // Budget 10 tokens a step, 3 rows, blocks plentiful.
  Scheduler s(scheduler_options(4, 100, 3, 10));
  s.add(0, 6, 3);
  s.add(1, 6, 3);
  s.add(2, 3, 2);
  s.add(3, 2, 2);

  // Step 1: request 0's whole prompt (6), then request 1 gets the 4 tokens
  // left: a chunk that does not sample. Requests 2 and 3 find no budget.
  StepPlan p = step(s);
  ASSERT_EQ(p.parts.size(), 2u);
  expect_part(p.parts[0], 0, 0, 0, 6, true, true);
  expect_part(p.parts[1], 1, 1, 0, 4, false, true);
  EXPECT_TRUE(p.preempted.empty());
  EXPECT_EQ(s.running(), 2);
  EXPECT_EQ(s.waiting(), 2);

  // Step 2: the running ones first (0's decode, 1's last 2 prompt tokens,
  // which now sample), then request 2 (arrived before 3) takes the third and
  // last row; request 3 waits for a row though budget is left.
  p = step(s);
  ASSERT_EQ(p.parts.size(), 3u);
  expect_part(p.parts[0], 0, 0, 6, 1, true, false);
  expect_part(p.parts[1], 1, 1, 4, 2, true, false);
  expect_part(p.parts[2], 2, 2, 0, 3, true, true);
  EXPECT_EQ(s.waiting(), 1);

  // Step 3: three decodes; 0 (3 tokens) and 2 (2 tokens) finish.
  std::vector<int64_t> finished;
  p = step(s, &finished);
  ASSERT_EQ(p.parts.size(), 3u);
  expect_part(p.parts[0], 0, 0, 7, 1, true, false);
  expect_part(p.parts[1], 1, 1, 6, 1, true, false);
  expect_part(p.parts[2], 2, 2, 3, 1, true, false);
  EXPECT_EQ(finished, (std::vector<int64_t>{0, 2}));

  // Step 4: rows 0 and 2 are free; request 3 takes row 0, the lowest, and
  // its part comes first although it was planned after request 1's (the
  // step feeds rows in order).
  p = step(s, &finished);
  ASSERT_EQ(p.parts.size(), 2u);
  expect_part(p.parts[0], 3, 0, 0, 2, true, true);
  expect_part(p.parts[1], 1, 1, 7, 1, true, false);
  EXPECT_EQ(finished, (std::vector<int64_t>{1}));

  p = step(s, &finished);
  ASSERT_EQ(p.parts.size(), 1u);
  expect_part(p.parts[0], 3, 0, 2, 1, true, false);
  EXPECT_EQ(finished, (std::vector<int64_t>{3}));
  EXPECT_TRUE(s.idle());
  EXPECT_EQ(s.free_blocks(), 100);
  EXPECT_TRUE(s.schedule().parts.empty());  // nothing to run
}

TEST(ServingScheduler, AdmissionStopsAtTheFirstRequestThatDoesNotFit) {
  // 4 blocks of 4. Request 1 (3 blocks) cannot come in beside request 0 (2
  // blocks, 3 later); request 2 (1 block) could, but arrived after it and
  // waits its turn (vLLM stops at the first waiting request it cannot place).
  Scheduler s(scheduler_options(4, 4, 4, 64));
  s.add(0, 8, 4);
  s.add(1, 12, 1);
  s.add(2, 2, 1);
  std::vector<int64_t> finished;
  for (int i = 0; i < 4; ++i) {
    StepPlan p = step(s, &finished);
    ASSERT_EQ(p.parts.size(), 1u) << "step " << i + 1;
    EXPECT_EQ(p.parts[0].request, 0);
    EXPECT_EQ(s.waiting(), 2);
  }
  EXPECT_EQ(finished, (std::vector<int64_t>{0}));
  StepPlan p = step(s, &finished);  // both fit now, in order
  ASSERT_EQ(p.parts.size(), 2u);
  expect_part(p.parts[0], 1, 0, 0, 12, true, true);
  expect_part(p.parts[1], 2, 1, 0, 2, true, true);
  EXPECT_EQ(finished, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(s.free_blocks(), 4);
}

TEST(ServingScheduler, LongPromptIsChunkedToTheBudgetAndSamplesOnlyAtItsEnd) {
  Scheduler s(scheduler_options(16, 100, 4, 10));
  s.add(0, 25, 2);
  StepPlan p = step(s);
  ASSERT_EQ(p.parts.size(), 1u);
  expect_part(p.parts[0], 0, 0, 0, 10, false, true);
  p = step(s);
  expect_part(p.parts[0], 0, 0, 10, 10, false, false);
  p = step(s);
  expect_part(p.parts[0], 0, 0, 20, 5, true, false);  // the prompt's end: the first token
  std::vector<int64_t> finished;
  p = step(s, &finished);
  expect_part(p.parts[0], 0, 0, 25, 1, true, false);  // the first output token fed, the second sampled
  EXPECT_EQ(finished, (std::vector<int64_t>{0}));
  EXPECT_EQ(s.free_blocks(), 100);
}

TEST(ServingScheduler, ShapeCarriesTokensContextAndSampling) {
  Scheduler s(scheduler_options(16, 100, 4, 10));
  s.add(0, 3, 4);
  s.add(1, 12, 4);
  step(s);                        // 0: 3 tokens; 1: a chunk of 7
  const StepPlan p = s.schedule();  // 0: decode at 3; 1: its last 5 at 7
  const auto shape = p.shape();
  ASSERT_EQ(shape.parts.size(), 2u);
  EXPECT_EQ(shape.parts[0].tokens, 1);
  EXPECT_EQ(shape.parts[0].context, 3);
  EXPECT_TRUE(shape.parts[0].samples);
  EXPECT_EQ(shape.parts[1].tokens, 5);
  EXPECT_EQ(shape.parts[1].context, 7);
  EXPECT_TRUE(shape.parts[1].samples);
  EXPECT_EQ(shape.tokens(), 6);
  EXPECT_EQ(shape.prefill_tokens(), 5);
  EXPECT_EQ(shape.decodes(), 1);
}

TEST(ServingScheduler, BlocksRoundUpAndAreCappedForAnEvictingCache) {
  Scheduler plain(scheduler_options(16, 10, 4, 64));
  EXPECT_EQ(plain.blocks_for(0), 0);
  EXPECT_EQ(plain.blocks_for(1), 1);
  EXPECT_EQ(plain.blocks_for(16), 1);
  EXPECT_EQ(plain.blocks_for(17), 2);
  EXPECT_EQ(plain.blocks_for(1000), 63);

  // An evicting cache holding 20 tokens writes the 21st before it evicts:
  // ceil(21 / 16) = 2 blocks however long the request, 3 with a cap of 32.
  SchedulerOptions o = scheduler_options(16, 2, 4, 64);
  o.held_token_cap = 20;
  Scheduler capped(o);
  EXPECT_EQ(capped.blocks_for(16), 1);
  EXPECT_EQ(capped.blocks_for(17), 2);
  EXPECT_EQ(capped.blocks_for(21), 2);
  EXPECT_EQ(capped.blocks_for(100000), 2);
  o.held_token_cap = 32;
  EXPECT_EQ(Scheduler(o).blocks_for(100000), 3);

  // So a request far longer than 2 blocks fits the capped budget and runs to
  // its end in it; the same one is refused without the cap.
  capped.add(0, 100, 50);
  std::vector<int64_t> finished;
  int steps = 0;
  while (!capped.idle() && steps < 1000) {
    step(capped, &finished);
    EXPECT_GE(capped.free_blocks(), 0);
    ++steps;
  }
  EXPECT_TRUE(capped.idle());
  EXPECT_EQ(finished, (std::vector<int64_t>{0}));
  EXPECT_EQ(capped.free_blocks(), 2);
  EXPECT_EQ(capped.preemptions(0), 0);
  Scheduler uncapped(scheduler_options(16, 2, 4, 64));
  EXPECT_THROW(uncapped.add(0, 100, 50), std::invalid_argument);
}

TEST(ServingScheduler, FreeBlocksFollowTheCacheAndAllComeBack) {
  Scheduler s(scheduler_options(4, 20, 4, 64));
  s.add(0, 5, 4);  // 5 tokens: 2 blocks
  s.add(1, 8, 2);  // 8 tokens: 2 blocks
  step(s);
  EXPECT_EQ(s.free_blocks(), 16);
  // Decodes feed tokens 6 and 9: 0 stays in 2 blocks (6 ≤ 8), 1 needs a third.
  StepPlan p = s.schedule();
  EXPECT_EQ(s.free_blocks(), 15);
  // Request 1 finishes with its second token and gives its 3 blocks back.
  EXPECT_EQ(s.complete(p, {0, 0}), (std::vector<int64_t>{1}));
  EXPECT_EQ(s.free_blocks(), 18);
  std::vector<int64_t> finished;
  while (!s.idle()) step(s, &finished);
  EXPECT_EQ(finished, (std::vector<int64_t>{0}));
  EXPECT_EQ(s.free_blocks(), 20);
}

TEST(ServingScheduler, PreemptsTheLatestAdmittedAndRecomputesIt) {
  // 4 blocks of 4 tokens; each request needs 3 over its life (4 + 8 tokens
  // fed), so two fit together only until both pass 8 tokens.
  Scheduler s(scheduler_options(4, 4, 4, 64));
  s.add(0, 4, 9);
  s.add(1, 4, 9);
  // Steps 1-5: both prefill (1 block each), then decode; after step 5 each
  // holds 8 tokens in 2 blocks and has produced 5.
  for (int i = 0; i < 5; ++i) {
    StepPlan p = step(s);
    ASSERT_EQ(p.parts.size(), 2u) << "step " << i + 1;
    EXPECT_TRUE(p.preempted.empty()) << "step " << i + 1;
  }
  EXPECT_EQ(s.free_blocks(), 0);

  // Step 6: request 0 needs a third block for token 9; none is free, so the
  // latest admitted, request 1, is preempted: its 2 blocks and row freed.
  StepPlan p = step(s);
  EXPECT_EQ(p.preempted, (std::vector<int64_t>{1}));
  ASSERT_EQ(p.parts.size(), 1u);
  expect_part(p.parts[0], 0, 0, 8, 1, true, false);
  EXPECT_EQ(s.preemptions(1), 1);
  EXPECT_EQ(s.preemptions(0), 0);
  EXPECT_EQ(s.running(), 1);
  EXPECT_EQ(s.waiting(), 1);
  EXPECT_EQ(s.free_blocks(), 1);

  // Steps 7-9: request 0 runs alone to its 9th token (request 1 needs 3
  // blocks to come back, only 1 is free) and finishes.
  std::vector<int64_t> finished;
  for (int i = 0; i < 3; ++i) {
    p = step(s, &finished);
    ASSERT_EQ(p.parts.size(), 1u);
    EXPECT_EQ(p.parts[0].request, 0);
  }
  EXPECT_EQ(finished, (std::vector<int64_t>{0}));
  EXPECT_EQ(s.free_blocks(), 4);

  // Step 10: request 1 comes back into row 0, the lowest free (it had row 1),
  // and recomputes from scratch: its prompt (4) and the 5 tokens it had
  // produced, in one part that samples its 6th.
  p = step(s);
  ASSERT_EQ(p.parts.size(), 1u);
  expect_part(p.parts[0], 1, 0, 0, 4 + 5, true, true);
  EXPECT_EQ(s.free_blocks(), 1);
  // Then decodes from where the recompute left it, to its 9th token.
  p = step(s);
  expect_part(p.parts[0], 1, 0, 9, 1, true, false);
  while (!s.idle()) step(s, &finished);
  EXPECT_EQ(finished, (std::vector<int64_t>{1}));
  EXPECT_EQ(s.preemptions(1), 1);
  EXPECT_EQ(s.free_blocks(), 4);
}

TEST(ServingScheduler, NothingIsAdmittedInAStepThatPreempted) {
  // As above, but a budget of 4 tokens a step, so that request 1 is admitted
  // later and chunked, and when it is preempted the 3 tokens of budget left
  // would let its first chunk (1 block) back in at once: vLLM does not.
  Scheduler s(scheduler_options(4, 4, 4, 4));
  s.add(0, 4, 9);
  s.add(1, 4, 9);
  StepPlan p = step(s);  // 0's prompt uses the whole budget
  ASSERT_EQ(p.parts.size(), 1u);
  p = step(s);  // 0 decodes; 1 gets a chunk of 3
  ASSERT_EQ(p.parts.size(), 2u);
  expect_part(p.parts[1], 1, 1, 0, 3, false, true);
  for (int i = 0; i < 3; ++i) {
    p = step(s);
    ASSERT_EQ(p.parts.size(), 2u);
    EXPECT_TRUE(p.preempted.empty());
  }
  // Request 0 holds 8 tokens (2 blocks), request 1 6 (2 blocks).
  EXPECT_EQ(s.free_blocks(), 0);
  p = step(s);
  EXPECT_EQ(p.preempted, (std::vector<int64_t>{1}));
  ASSERT_EQ(p.parts.size(), 1u);
  expect_part(p.parts[0], 0, 0, 8, 1, true, false);
  EXPECT_EQ(s.free_blocks(), 1);
  EXPECT_EQ(s.waiting(), 1);
  // The next step admits it: a first chunk of 3 (4 + 3 produced = 7 to
  // recompute), in the row it left, from position 0.
  p = step(s);
  ASSERT_EQ(p.parts.size(), 2u);
  EXPECT_TRUE(p.preempted.empty());
  expect_part(p.parts[1], 1, 1, 0, 3, false, true);
}

TEST(ServingScheduler, SeveralVictimsGoBackToTheHeadInAdmissionOrder) {
  // 3 blocks of 4 tokens; three requests of a 4-token prompt take one each.
  // Each then needs a second block for its first output token.
  Scheduler s(scheduler_options(4, 3, 4, 64));
  s.add(0, 4, 2);
  s.add(1, 4, 2);
  s.add(2, 4, 2);
  StepPlan p = step(s);
  ASSERT_EQ(p.parts.size(), 3u);
  EXPECT_EQ(s.free_blocks(), 0);
  // Step 2: request 0 preempts request 2 (the latest) and takes its block;
  // request 1 then finds no block and is itself the latest: it preempts
  // itself. Both go back to the head of the queue, 1 before 2.
  std::vector<int64_t> finished;
  p = step(s, &finished);
  EXPECT_EQ(p.preempted, (std::vector<int64_t>{2, 1}));
  ASSERT_EQ(p.parts.size(), 1u);
  expect_part(p.parts[0], 0, 0, 4, 1, true, false);
  EXPECT_EQ(finished, (std::vector<int64_t>{0}));
  EXPECT_EQ(s.waiting(), 2);
  EXPECT_EQ(s.preemptions(1), 1);
  EXPECT_EQ(s.preemptions(2), 1);
  // Step 3: request 1 comes back first (prompt + its 1 token, in row 0), and
  // its recompute samples its last token; request 2 finds no block.
  p = step(s, &finished);
  ASSERT_EQ(p.parts.size(), 1u);
  expect_part(p.parts[0], 1, 0, 0, 5, true, true);
  EXPECT_EQ(finished, (std::vector<int64_t>{1}));
  p = step(s, &finished);
  ASSERT_EQ(p.parts.size(), 1u);
  expect_part(p.parts[0], 2, 0, 0, 5, true, true);
  EXPECT_EQ(finished, (std::vector<int64_t>{2}));
  EXPECT_TRUE(s.idle());
  EXPECT_EQ(s.free_blocks(), 3);
}

TEST(ServingScheduler, DroppedTokensShrinkWhatIsKnownAndTheNewestKeptIsFedAgain) {
  Scheduler s(scheduler_options(16, 100, 2, 64));
  s.add(0, 5, 4);
  StepPlan p = s.schedule();
  expect_part(p.parts[0], 0, 0, 0, 5, true, true);
  EXPECT_TRUE(s.complete(p, {0}).empty());  // produced 1; known 6
  p = s.schedule();
  expect_part(p.parts[0], 0, 0, 5, 1, true, false);
  EXPECT_TRUE(s.complete(p, {0}).empty());  // produced 2; known 7
  p = s.schedule();
  expect_part(p.parts[0], 0, 0, 6, 1, true, false);
  // The review takes back the token just sampled and the one before: known
  // 8 - 2 = 6, and the newest kept token (position 5) is fed again.
  EXPECT_TRUE(s.complete(p, {2}).empty());
  p = s.schedule();
  expect_part(p.parts[0], 0, 0, 5, 1, true, false);
  // Taking back only the new token: known stays 6, position 5 fed again.
  EXPECT_TRUE(s.complete(p, {1}).empty());
  p = s.schedule();
  expect_part(p.parts[0], 0, 0, 5, 1, true, false);
  // Now four kept tokens are needed: produced 1 so far, so three more steps.
  EXPECT_TRUE(s.complete(p, {0}).empty());  // produced 2
  p = s.schedule();
  expect_part(p.parts[0], 0, 0, 6, 1, true, false);
  EXPECT_TRUE(s.complete(p, {0}).empty());  // produced 3
  p = s.schedule();
  expect_part(p.parts[0], 0, 0, 7, 1, true, false);
  EXPECT_EQ(s.complete(p, {0}), (std::vector<int64_t>{0}));  // produced 4: done
  EXPECT_TRUE(s.idle());
  EXPECT_EQ(s.free_blocks(), 100);
}

TEST(ServingScheduler, AOneTokenRequestFinishesWithItsPrefill) {
  Scheduler s(scheduler_options(16, 100, 2, 64));
  s.add(0, 7, 1);
  std::vector<int64_t> finished;
  StepPlan p = step(s, &finished);
  expect_part(p.parts[0], 0, 0, 0, 7, true, true);
  EXPECT_EQ(finished, (std::vector<int64_t>{0}));
  EXPECT_TRUE(s.idle());
  EXPECT_EQ(s.free_blocks(), 100);
}

TEST(ServingScheduler, CompleteWantsOneDropCountPerPart) {
  Scheduler s(scheduler_options(16, 100, 2, 64));
  s.add(0, 7, 3);
  s.add(1, 7, 3);
  StepPlan p = s.schedule();
  ASSERT_EQ(p.parts.size(), 2u);
  EXPECT_THROW(s.complete(p, {0}), std::invalid_argument);
}

TEST(ServingScheduler, ARequestThatCanNeverFitIsRefusedNamingTheBudget) {
  // 2 blocks of 16: a life of 32 tokens fits (the last output token is never
  // fed), 33 does not.
  Scheduler s(scheduler_options(16, 2, 4, 64));
  EXPECT_NO_THROW(s.add(0, 30, 3));
  const std::string msg = message_of([&] { s.add(1, 30, 4); });
  EXPECT_NE(msg.find("serve.kv_budget_mb"), std::string::npos) << msg;
  EXPECT_THROW(s.add(2, 0, 4), std::invalid_argument);
  EXPECT_THROW(s.add(2, 4, 0), std::invalid_argument);
}

TEST(ServingScheduler, BadOptionsAreRefusedNamingTheOption) {
  auto refused = [](SchedulerOptions o) { return message_of([&] { Scheduler s(o); }); };
  EXPECT_NE(refused(scheduler_options(0, 10, 4, 64)).find("serve.block_size"), std::string::npos);
  EXPECT_NE(refused(scheduler_options(16, 10, 0, 64)).find("serve.max_num_seqs"), std::string::npos);
  EXPECT_NE(refused(scheduler_options(16, 10, 4, 0)).find("serve.max_num_batched_tokens"), std::string::npos);
  EXPECT_NE(refused(scheduler_options(16, 0, 4, 64)).find("KV budget"), std::string::npos);
  EXPECT_EQ(refused(scheduler_options(16, 10, 4, 64)), "");
}

}  // namespace
