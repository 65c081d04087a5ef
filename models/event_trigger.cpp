#include "models/event_trigger.h"

#include <algorithm>
#include <stdexcept>

namespace zl {
namespace {

constexpr uint64_t kFnvBasis = 1469598103934665603ull, kFnvPrime = 1099511628211ull;

bool is_word_char(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
unsigned char lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }
bool is_sentence_end(unsigned char c) { return c == '.' || c == ';' || c == '\n'; }

uint64_t hash_word(const std::string& w) {
  uint64_t h = kFnvBasis;
  for (unsigned char c : w) h = (h ^ lower(c)) * kFnvPrime;
  return h;
}

}  // namespace

const char* event_kind_name(int kind) {
  switch (kind) {
    case kEventEntity: return "entity";
    case kEventNesting: return "nesting";
    case kEventNumeric: return "numeric";
  }
  return "?";
}

EventTrigger::EventTrigger(const std::vector<std::string>& pieces, const std::vector<std::string>& entities,
                           const std::vector<std::string>& openers, TriggerOptions opt)
    : opt_(opt) {
  flags_.resize(pieces.size());
  offset_.reserve(pieces.size() + 1);
  offset_.push_back(0);
  for (size_t id = 0; id < pieces.size(); ++id) {
    const std::string& p = pieces[id];
    bool digit = false, numberish = !p.empty(), punct_only = !p.empty();
    for (unsigned char c : p) {
      const bool d = c >= '0' && c <= '9';
      const bool np = c == '$' || c == ',' || c == '.' || c == '-' || c == '/' || c == ':' || c == '%';
      digit |= d;
      numberish &= d || np || c == ' ';
      punct_only &= np;
    }
    uint8_t f = p.empty() ? 0 : kHasText;
    if (digit && numberish) f |= kNumeric;
    if (punct_only && p.find_first_of(".") == std::string::npos) f |= kNumberPunct;  // "," "-": a "." may end a sentence
    flags_[id] = f;
    text_.insert(text_.end(), p.begin(), p.end());
    offset_.push_back(static_cast<uint32_t>(text_.size()));
  }
  for (size_t i = 0; i < entities.size(); ++i) {
    if (entities[i].empty() || !std::all_of(entities[i].begin(), entities[i].end(), [](char c) { return is_word_char(c); }))
      throw std::invalid_argument("EventTrigger: entity '" + entities[i] + "' must be one word of letters and digits");
    keywords_.emplace_back(hash_word(entities[i]), static_cast<int16_t>(i));
  }
  for (const auto& o : openers) keywords_.emplace_back(hash_word(o), kOpener);
  std::sort(keywords_.begin(), keywords_.end());
  for (size_t i = 1; i < keywords_.size(); ++i)
    if (keywords_[i].first == keywords_[i - 1].first)
      throw std::invalid_argument("EventTrigger: a keyword is listed twice (entities and openers must be distinct)");
}

int16_t EventTrigger::keyword(uint64_t hash) const {
  auto it = std::lower_bound(keywords_.begin(), keywords_.end(), std::make_pair(hash, int16_t{-1}));
  return (it != keywords_.end() && it->first == hash) ? it->second : -1;
}

uint8_t EventTrigger::on_word(TriggerState& s) const {
  const int16_t k = keyword(s.word_hash);
  if (k < 0) return 0;
  s.word_done = 1;
  if (k == kOpener) {
    if (s.depth < 255) ++s.depth;
    return s.depth > opt_.nesting_depth ? event_bit(kEventNesting) : 0;
  }
  const bool switched = s.last_entity >= 0 && s.last_entity != k;
  s.last_entity = k;
  return switched ? event_bit(kEventEntity) : 0;
}

uint8_t EventTrigger::step(TriggerState& s, int32_t id) const {
  if (id < 0 || id >= static_cast<int32_t>(flags_.size())) return 0;
  const uint8_t f = flags_[id];
  uint8_t events = 0;

  // Numeric runs, per token.
  if (f & kNumeric) {
    if (++s.numeric_run == opt_.numeric_run) events |= event_bit(kEventNumeric);
  } else if (!((f & kNumberPunct) && s.numeric_run > 0) && (f & kHasText)) {
    s.numeric_run = 0;
  }

  // Words, per character.
  const char* p = text_.data() + offset_[id];
  const char* end = text_.data() + offset_[id + 1];
  for (; p != end; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (is_word_char(c)) {
      if (s.word_len == 0) s.word_hash = kFnvBasis, s.word_done = 0;
      s.word_hash = (s.word_hash ^ lower(c)) * kFnvPrime;
      if (s.word_len < 0xffff) ++s.word_len;
      continue;
    }
    if (s.word_len > 0 && !s.word_done) events |= on_word(s);
    s.word_len = 0;
    if (is_sentence_end(c)) s.depth = 0;
  }
  // Eager match: the piece ends inside (or at the end of) a word that already
  // spells a keyword.
  if (s.word_len > 0 && !s.word_done) events |= on_word(s);
  return events;
}

int64_t EventTrigger::lexicon_bytes() const {
  return static_cast<int64_t>(flags_.size() * sizeof(uint8_t) + offset_.size() * sizeof(uint32_t) + text_.size() +
                              keywords_.size() * sizeof(keywords_[0]));
}

}  // namespace zl
