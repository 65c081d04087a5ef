// The Online Event Trigger of variant oet (seed 000 §2.2): a small state
// machine fed each token as it is generated, firing only on the three events
// the article names: an entity-reference switch ("实体指代切换"), conditional
// nesting deeper than 3 ("条件句嵌套深度>3") and consecutive numeric tokens
// ("数值型token连续出现"). On a fired event oet looks the correction up in
// the offline table (models/offline_table.h); otherwise it skips it.
//
// The article puts the trigger in "a 32KB micro state machine". Ours is two
// parts: a read-only lexicon shared by every sequence (per-token facts
// precomputed from each vocabulary id's text, plus a few keyword hashes; its
// bytes are reported), and a per-sequence TriggerState of 16 bytes.
//
// Readings chosen (documented here, tested in tests/cpp/test_sfcl.cpp):
//  - Words are assembled from the tokens' text (letters and digits; any other
//    character ends a word), so the trigger works with any tokenizer: a word
//    split over several pieces is still recognised. A keyword is matched as
//    soon as the text read so far spells it (eagerly, at the end of a piece)
//    so that with word-level pieces the event fires on the token that names
//    it; it then does not fire again when the word ends.
//  - Entity switch: every party word (a role such as "Seller", or a company
//    name such as "Acme") is an entity of its own; naming an entity other
//    than the last one named fires. So "the Seller ... Acme" fires even when
//    Acme is the Seller: the generator's switches between role and name are
//    the switches of seed 000 §2.2 (datasets/contracts.cpp, `mention`). The
//    first entity of a stream fires nothing (there is no switch yet).
//  - Nesting: conditional openers ("if", "unless", "provided") since the last
//    sentence boundary ('.', ';' or a newline) are the depth; "then" does not
//    close one, because the next "if" nests inside the consequent ("If A then
//    if B then X"). Each opener that makes the depth exceed `nesting_depth`
//    (3, as the article says) fires.
//  - Numeric run: a token is numeric if its text holds a digit and only
//    digits, spaces and number punctuation ($ , . - / : %); a token of number
//    punctuation alone (",") continues a run without counting. The event
//    fires once per run, on the token that makes it `numeric_run` long.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zl {

enum EventKind : int { kEventEntity = 0, kEventNesting = 1, kEventNumeric = 2 };
constexpr int kEventKinds = 3;
constexpr uint8_t event_bit(int kind) { return static_cast<uint8_t>(1u << kind); }
const char* event_kind_name(int kind);  // "entity", "nesting", "numeric"

// The event oet applies when several fire on one token: the lowest kind
// (entity, then nesting, then numeric). Returns -1 for no event.
inline int primary_event(uint8_t events) {
  for (int k = 0; k < kEventKinds; ++k)
    if (events & event_bit(k)) return k;
  return -1;
}

struct TriggerOptions {
  int numeric_run = 3;    // oet.numeric_run
  int nesting_depth = 3;  // oet.nesting_depth
};

// Per-sequence state: a plain struct, copied and reset freely.
struct TriggerState {
  uint64_t word_hash = 0;    // FNV-1a of the lower-cased word being read
  uint16_t word_len = 0;
  uint16_t numeric_run = 0;  // numeric tokens in the current run
  int16_t last_entity = -1;  // entity named last (-1: none yet)
  uint8_t depth = 0;         // conditional openers since the sentence began
  uint8_t word_done = 0;     // the word being read already matched a keyword
};
static_assert(sizeof(TriggerState) <= 16, "the trigger state must stay within a quarter cache line");

class EventTrigger {
 public:
  // pieces[id]: the exact text of each vocabulary id (empty for control ids);
  // entities: the party words (each its own entity); openers: conditional
  // openers. Matching is case-insensitive.
  EventTrigger(const std::vector<std::string>& pieces, const std::vector<std::string>& entities,
               const std::vector<std::string>& openers, TriggerOptions opt);

  // Feeds one token; returns the events it fired (event_bit mask, 0 = none).
  uint8_t step(TriggerState& s, int32_t id) const;

  int64_t vocab() const { return static_cast<int64_t>(flags_.size()); }
  // Bytes of the shared lexicon (flags, text, offsets, keywords).
  int64_t lexicon_bytes() const;
  const TriggerOptions& options() const { return opt_; }

 private:
  enum : uint8_t { kNumeric = 1, kNumberPunct = 2, kHasText = 4 };
  // A finished (or eagerly matched) word: applies its keyword, returns events.
  uint8_t on_word(TriggerState& s) const;
  int16_t keyword(uint64_t hash) const;  // -1 none, 0..n-1 entity, kOpener

  static constexpr int16_t kOpener = 0x7fff;
  TriggerOptions opt_;
  std::vector<uint8_t> flags_;      // per id
  std::vector<uint32_t> offset_;    // per id + 1: its text in text_
  std::vector<char> text_;
  std::vector<std::pair<uint64_t, int16_t>> keywords_;  // sorted by hash
};

}  // namespace zl
