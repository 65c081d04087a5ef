// The check behind sfvl_oracle (issue 13 §7): re-sampling exactly where the
// contracts corpus's exact checker (datasets/contracts_checker.h) finds a
// violation, with sfvl's retry budget and temperature bump. No verifier of
// the same window and budget can fire more usefully, so its violation_rate
// is the floor any verifier could reach this way (an upper bound on what
// re-sampling buys); sfvl_random is the same budget fired blindly.
//
// When it fires. After each new token the oracle reads the prompt and the
// continuation as the checker does and fires when a violation appears that
// was not there one token earlier (the newest token completed it) and that
// starts inside the window of the last `window` tokens: a verifier that sees
// those tokens could have seen it; one that starts further back (an "if"
// opened early in a long sentence) is left alone, as it is for sfvl.
//
// Sentences still being written. The checker judges complete sentences only,
// so a wrong amount would be seen at the sentence's end, many tokens after it
// was written. The oracle also reads the text up to its last whitespace with
// the sentence closed there, and takes from that reading every violation
// but an unbalanced conditional (an "if" waits for its "then" until the
// sentence ends): a value, party or clause number followed by whitespace is
// complete, and the checker's verdict on it cannot change. A value is thus
// seen when the token after it is written.
//
// What a fire drops: `span` drops from the first token of the violation to
// the newest (at most the window), so the offending tokens are re-sampled;
// otherwise (span = false) verify.drop as sfvl does, which can only reach a
// violation in the newest one or two tokens.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "datasets/tokenizer.h"
#include "sim/stages/verify_hook.h"

namespace zl {

// A sequence check over the items of one decode call: item i's prompt text is
// the tokenizer's decoding of its prompt tokens (the tokenizers are byte-exact).
SequenceCheck checker_oracle(std::shared_ptr<const Tokenizer> tokenizer, int64_t window, bool span);

// What the oracle reads as violated in `continuation` after `prompt`: the
// checker's verdict on complete sentences and, but for conditionals, on the
// text up to its last whitespace with the sentence closed there. Each entry
// is a violation kind and its byte offset in the continuation, sorted.
std::vector<std::pair<std::string, size_t>> oracle_violations(const std::string& prompt,
                                                              const std::string& continuation);

}  // namespace zl
