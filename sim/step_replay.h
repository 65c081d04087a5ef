// What a part of a model costs per decode step, measured where it runs: the
// quality pass's tokens are replayed (teacher-forced) through one KV cache
// per setting in lockstep, each step timed under every setting back to back
// in rotating order, so that all settings see the same machine load. A
// setting switches a part off: sfcl's correction module (its block mode,
// read at each call), or one of fused's parts on the fast step
// (DecodeStep::skip_for_timing). Used for time_share_correction and
// time_share_<part>, beside each part's analytic FLOP share.
#pragma once
#include <functional>
#include <vector>

#include "models/decode_step.h"
#include "models/transformer.h"

namespace zl {

// Milliseconds per decode step under each of `settings` settings, replaying
// `continuations` after `prompts` (as the decode truncated them for
// `max_new_tokens`) in batches of `batch`, on the fast step when `fast_step`
// and the model allows it (`apply` then gets it; else nullptr). `apply(k,
// step)` puts setting k in force before each call.
std::vector<double> replay_step_ms(Transformer& model, const std::vector<std::vector<int32_t>>& prompts,
                                   const std::vector<std::vector<int32_t>>& continuations, int64_t batch,
                                   int64_t max_new_tokens, bool fast_step, int settings,
                                   const std::function<void(int setting, DecodeStep* step)>& apply);

// Best of `passes` replays (the least disturbed by other load, by their sum).
std::vector<double> best_replay_step_ms(int passes, const std::function<std::vector<double>()>& replay);

}  // namespace zl
