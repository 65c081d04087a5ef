// The contracts checker: a segmenter, a tokenizer and one reader that walks
// the sentences of a contract, keeps what has been stated, and reports what a
// later sentence contradicts. It is hand-written (no std::regex) because it
// runs on every judged continuation and must stay well under a microsecond
// per character.
#include "datasets/contracts_checker.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>

namespace zl {

// ---- vocabulary --------------------------------------------------------------

const char* contract_slot_name(ContractSlot slot) {
  switch (slot) {
    case ContractSlot::PaymentAmount: return "payment amount";
    case ContractSlot::PaymentPeriod: return "payment period";
    case ContractSlot::Deposit: return "deposit";
    case ContractSlot::Penalty: return "penalty";
    case ContractSlot::Quantity: return "quantity";
    case ContractSlot::DeliveryDate: return "delivery date";
    case ContractSlot::EndDate: return "end date";
    case ContractSlot::NoticePeriod: return "notice period";
    case ContractSlot::Warranty: return "warranty period";
    case ContractSlot::Term: return "term";
  }
  return "?";
}

const char* contract_slot_kind(ContractSlot slot) {
  switch (slot) {
    case ContractSlot::PaymentAmount:
    case ContractSlot::Deposit:
    case ContractSlot::Penalty:
    case ContractSlot::Quantity: return "amount";
    case ContractSlot::DeliveryDate:
    case ContractSlot::EndDate: return "date";
    case ContractSlot::PaymentPeriod:
    case ContractSlot::NoticePeriod:
    case ContractSlot::Warranty:
    case ContractSlot::Term: return "term";
  }
  return "?";
}

// One word before one suffix, so that a hallucinated multi-word name
// ("Northwind Trading Ltd") is read as the undeclared "Trading Ltd".
const std::vector<std::string>& contract_company_names() {
  static const std::vector<std::string> names = {"Acme Corp",    "Borealis Ltd", "Cobalt Inc",   "Dunmore LLC",
                                                 "Everly GmbH",  "Fairfax PLC",  "Granite Corp", "Halcyon Ltd",
                                                 "Ironwood Inc", "Juniper LLC",  "Kestrel GmbH", "Lumen PLC"};
  return names;
}

const std::vector<std::string>& contract_company_suffixes() {
  static const std::vector<std::string> suffixes = {"Corp", "Ltd", "Inc", "LLC", "GmbH", "PLC"};
  return suffixes;
}

const std::vector<std::string>& contract_roles() {
  static const std::vector<std::string> roles = {"Seller", "Buyer", "Supplier",  "Customer", "Contractor",
                                                 "Client", "Agent", "Guarantor", "Carrier"};
  return roles;
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
char to_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

bool contains(const std::vector<std::string>& list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

// Case-insensitive equality with a lower-case literal, without allocating.
bool is_word(std::string_view w, std::string_view lower_literal) {
  if (w.size() != lower_literal.size()) return false;
  for (size_t i = 0; i < w.size(); ++i) {
    if (to_lower(w[i]) != lower_literal[i]) return false;
  }
  return true;
}

bool is_any(std::string_view w, std::initializer_list<std::string_view> lower_literals) {
  for (std::string_view l : lower_literals) {
    if (is_word(w, l)) return true;
  }
  return false;
}

// ---- tokens ------------------------------------------------------------------

enum class Tok { Word, Money, Date, Number, Punct };

struct Token {
  Tok type;
  std::string_view text;  // as written, a view into the full text
  size_t begin;           // offset in the full text
  size_t end() const { return begin + text.size(); }
};

// Digits with optional ",ddd" groups ("12,400"); a comma not followed by a
// digit ends the number, because it is punctuation ("$500, otherwise").
size_t scan_number(const std::string& s, size_t i, size_t end) {
  while (i < end && (is_digit(s[i]) || (s[i] == ',' && i + 1 < end && is_digit(s[i + 1])))) ++i;
  return i;
}

bool is_date_at(const std::string& s, size_t i, size_t end) {
  static const char* shape = "dddd-dd-dd";
  if (i + 10 > end) return false;
  for (size_t k = 0; k < 10; ++k) {
    if (shape[k] == 'd' ? !is_digit(s[i + k]) : s[i + k] != '-') return false;
  }
  return i + 10 == end || !is_digit(s[i + 10]);
}

std::vector<Token> tokenize(const std::string& s, size_t begin, size_t end) {
  std::vector<Token> out;
  size_t i = begin;
  while (i < end) {
    const char c = s[i];
    size_t j = i + 1;
    Tok type = Tok::Punct;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    } else if (is_alpha(c)) {
      while (j < end && is_alpha(s[j])) ++j;
      type = Tok::Word;
    } else if (c == '$' && j < end && is_digit(s[j])) {
      j = scan_number(s, j, end);
      type = Tok::Money;
    } else if (is_date_at(s, i, end)) {
      j = i + 10;
      type = Tok::Date;
    } else if (is_digit(c)) {
      j = scan_number(s, i, end);
      type = Tok::Number;
    }
    out.push_back({type, std::string_view(s).substr(i, j - i), i});
    i = j;
  }
  return out;
}

// The words whose balance judge_conditional checks: a sentence with one of
// them is a conditional the checker judges.
bool is_conditional_word(const Token& t) { return t.type == Tok::Word && is_any(t.text, {"if", "then", "otherwise"}); }

// "$012,400" -> "12400": restating an amount with other digit grouping is not
// a contradiction.
std::string canonical_number(std::string_view written) {
  std::string digits;
  for (char c : written) {
    if (is_digit(c) && !(digits.empty() && c == '0')) digits += c;
  }
  return digits.empty() ? "0" : digits;
}

// ---- cues and slots ----------------------------------------------------------

enum class Cue { None, Pay, Deposit, Penalty, Delivery, End, Notice, Warranty, Term };
enum class Unit { None, Money, Date, Units, Days, Months };

Cue cue_of(std::string_view w) {
  if (is_any(w, {"pay", "pays", "payment"})) return Cue::Pay;
  if (is_word(w, "deposit")) return Cue::Deposit;
  if (is_word(w, "penalty")) return Cue::Penalty;
  if (is_any(w, {"deliver", "delivers", "delivery"})) return Cue::Delivery;
  if (is_any(w, {"terminate", "terminates", "termination", "expires"})) return Cue::End;
  if (is_word(w, "notice")) return Cue::Notice;
  if (is_word(w, "warranty")) return Cue::Warranty;
  if (is_word(w, "term")) return Cue::Term;
  return Cue::None;
}

Unit unit_of_count(std::string_view next_word) {
  if (next_word == "units") return Unit::Units;
  if (next_word == "days") return Unit::Days;
  if (next_word == "months") return Unit::Months;
  return Unit::None;
}

std::optional<ContractSlot> slot_for(Cue cue, Unit unit) {
  using S = ContractSlot;
  switch (cue) {
    case Cue::Pay:
      if (unit == Unit::Money) return S::PaymentAmount;
      if (unit == Unit::Days) return S::PaymentPeriod;
      break;
    case Cue::Deposit:
      if (unit == Unit::Money) return S::Deposit;
      break;
    case Cue::Penalty:
      if (unit == Unit::Money) return S::Penalty;
      break;
    case Cue::Delivery:
      if (unit == Unit::Units) return S::Quantity;
      if (unit == Unit::Date) return S::DeliveryDate;
      break;
    case Cue::End:
      if (unit == Unit::Date) return S::EndDate;
      break;
    case Cue::Notice:
      if (unit == Unit::Days) return S::NoticePeriod;
      break;
    case Cue::Warranty:
      if (unit == Unit::Months) return S::Warranty;
      break;
    case Cue::Term:
      if (unit == Unit::Months) return S::Term;
      break;
    case Cue::None: break;
  }
  return std::nullopt;
}

// ---- segmentation ------------------------------------------------------------

// The text as a stream of clause labels, sentences and the end marker.
struct Piece {
  enum Kind { Label, Sentence, End } kind;
  size_t begin = 0, end = 0;  // Sentence: [begin, end), terminator included
  int label = 0;              // Label: the clause number
};

// "12. " at a line start. Returns the offset after the '.', or npos; sets
// `truncated` when the text ends right after "12." (a label being written).
size_t label_end(const std::string& s, size_t i, int* number, bool* truncated) {
  size_t j = i;
  while (j < s.size() && is_digit(s[j]) && j - i < 6) ++j;
  if (j == i || j >= s.size() || s[j] != '.') return std::string::npos;
  if (j + 1 == s.size()) {
    *truncated = true;
    return std::string::npos;
  }
  if (s[j + 1] != ' ' && s[j + 1] != '\n') return std::string::npos;
  *number = std::stoi(s.substr(i, j - i));
  return j + 1;
}

// A sentence ends at '.' or '\n' (a line is a clause, so a model that breaks
// the line has finished the sentence); what trails after the last one is
// a fragment cut by the token limit and is dropped.
std::vector<Piece> segment(const std::string& s) {
  std::vector<Piece> out;
  const size_t none = std::string::npos;
  size_t start = none;
  bool line_start = true;
  for (size_t i = 0; i < s.size();) {
    if (line_start) {
      line_start = false;
      if (s.compare(i, std::string(kContractEndMarker).size(), kContractEndMarker) == 0) {
        out.push_back({Piece::End});
        return out;
      }
      int number = 0;
      bool truncated = false;
      const size_t after = label_end(s, i, &number, &truncated);
      if (truncated) return out;
      if (after != none) {
        out.push_back({Piece::Label, 0, 0, number});
        i = after;
        continue;
      }
    }
    const char c = s[i];
    if (c == '\n' || c == '.') {
      if (start != none) out.push_back({Piece::Sentence, start, c == '.' ? i + 1 : i});
      start = none;
      line_start = (c == '\n');
    } else if (start == none && !std::isspace(static_cast<unsigned char>(c))) {
      start = i;
    }
    ++i;
  }
  return out;
}

// ---- the reader --------------------------------------------------------------

struct Stated {
  std::string value;    // canonical
  std::string written;  // as first written, for the detail text
  int clause = 0;
};

// Walks a contract in order. Every sentence updates the state (parties,
// clauses, facts); a sentence that the continuation helped write is also
// judged, so the prompt's facts bind the continuation and the continuation's
// own first statements bind its later sentences.
class Reader {
 public:
  explicit Reader(size_t judged_from) : judged_from_(judged_from) {}

  void read(const std::string& text) {
    text_ = &text;
    for (const Piece& p : segment(text)) {
      if (p.kind == Piece::End) break;
      if (p.kind == Piece::Label) {
        on_label(p.label);
      } else if (!on_sentence(p.begin, p.end)) {
        break;
      }
    }
  }

  std::vector<Violation> violations;
  int judged = 0;  // statements judged (contracts_checker.h, ContractCheck)
  ContractSummary summary;

 private:
  void on_label(int number) {
    clause_ = number;
    clauses_.insert(number);
    summary.clauses.push_back(number);
  }

  // Returns false at a second header: a new contract begins.
  bool on_sentence(size_t begin, size_t end) {
    const std::vector<Token> toks = tokenize(*text_, begin, end);
    if (toks.empty()) return true;
    if (toks[0].type == Tok::Word && toks[0].text == kContractHeaderWord) {
      if (header_seen_) return false;
      read_header(toks);
      return true;
    }
    judge_conditional(toks, end);
    Cue cue = Cue::None;
    for (size_t i = 0; i < toks.size(); ++i) {
      const Token& t = toks[i];
      if (t.type == Tok::Word) {
        const Cue c = cue_of(t.text);
        if (c != Cue::None) cue = c;
        judge_clause_ref(toks, i);
        judge_party(toks, i);
        judge_role(t);
      } else {
        judge_value(toks, i, cue);
      }
    }
    return true;
  }

  void read_header(const std::vector<Token>& toks) {
    header_seen_ = true;
    for (size_t i = 0; i < toks.size(); ++i) {
      std::string name, role;
      if (name_at(toks, i, &name) && role_after(toks, i, &role)) {
        parties_[name] = role;
        summary.parties[name] = role;
      }
    }
  }

  // A statement is judged, and counted, under report()'s rule: only where the
  // continuation wrote part of it, so violations never outnumber statements.
  void judging(size_t end) {
    if (end > judged_from_) ++judged;
  }

  // A violation is the continuation's only if it wrote part of the token.
  void report(const char* kind, const std::string& detail, size_t begin, size_t end) {
    if (end <= judged_from_) return;
    violations.push_back({kind, detail, std::max(begin, judged_from_) - judged_from_});
  }

  // Every "if" needs a later "then" in the same sentence; seed 000 §2.2 makes
  // nesting depth an event kind, so the depth is also recorded.
  void judge_conditional(const std::vector<Token>& toks, size_t sentence_end) {
    if (std::any_of(toks.begin(), toks.end(), is_conditional_word)) judging(sentence_end);
    int open = 0, ifs = 0, otherwise = 0;
    const Token* first_if = nullptr;
    for (const Token& t : toks) {
      if (t.type != Tok::Word) continue;
      if (is_word(t.text, "if")) {
        ++open, ++ifs;
        if (!first_if) first_if = &t;
      } else if (is_word(t.text, "then")) {
        if (open == 0) {
          report("conditional", "'then' without an 'if'", t.begin, sentence_end);
          return;
        }
        --open;
      } else if (is_word(t.text, "otherwise") && ++otherwise > ifs) {
        report("conditional", "'otherwise' without an 'if'", t.begin, sentence_end);
        return;
      }
    }
    summary.max_nesting = std::max(summary.max_nesting, ifs);
    if (open > 0) {
      report("conditional", std::to_string(open) + " 'if' without a 'then'", first_if->begin, sentence_end);
    }
  }

  void judge_clause_ref(const std::vector<Token>& toks, size_t i) {
    if (!is_word(toks[i].text, "clause") || i + 1 >= toks.size() || toks[i + 1].type != Tok::Number) return;
    const Token& num = toks[i + 1];
    judging(num.end());
    const int cited = num.text.size() > 6 ? -1 : std::stoi(canonical_number(num.text));
    summary.references.push_back({clause_, cited});
    if (clauses_.count(cited)) return;
    report("clause_ref", "clause " + std::string(num.text) + " does not exist (clauses so far: " + clause_list() + ")",
           toks[i].begin, num.end());
  }

  std::string clause_list() const {
    std::string out;
    for (int c : clauses_) out += (out.empty() ? "" : ", ") + std::to_string(c);
    return out.empty() ? "none" : out;
  }

  // A name is judged at its suffix; an entity-reference switch (seed 000
  // §2.2) from role to name must land on the party that holds the role.
  void judge_party(const std::vector<Token>& toks, size_t i) {
    std::string name, role;
    if (!name_at(toks, i, &name)) return;
    judging(toks[i].end());
    const Token& first = toks[i - 1];
    auto it = parties_.find(name);
    if (it == parties_.end()) {
      report("party", name + " is not a party to this agreement", first.begin, toks[i].end());
    } else if (role_after(toks, i, &role) && role != it->second && declares_role(role)) {
      report("party", name + " is the " + it->second + ", not the " + role, first.begin, toks[i].end());
    }
  }

  void judge_role(const Token& t) {
    if (!is_upper(t.text[0]) || !contains(contract_roles(), t.text)) return;
    judging(t.end());
    if (declares_role(t.text)) return;
    report("party", "no party is the " + std::string(t.text), t.begin, t.end());
  }

  bool declares_role(std::string_view role) const {
    for (const auto& [name, r] : parties_) {
      if (r == role) return true;
    }
    return false;
  }

  // A value binds to the slot its nearest cue names; the first binding is the
  // statement, later ones must agree (seed 000 §2.2: consecutive numeric
  // tokens are where a small model drifts).
  void judge_value(const std::vector<Token>& toks, size_t i, Cue cue) {
    const Token& t = toks[i];
    Unit unit = Unit::None;
    std::string value;
    size_t end = t.end();
    if (t.type == Tok::Money) {
      unit = Unit::Money, value = canonical_number(t.text);
    } else if (t.type == Tok::Date) {
      unit = Unit::Date, value = t.text;
    } else if (t.type == Tok::Number && i + 1 < toks.size() && toks[i + 1].type == Tok::Word) {
      unit = unit_of_count(toks[i + 1].text), value = canonical_number(t.text), end = toks[i + 1].end();
    }
    const std::optional<ContractSlot> slot = slot_for(cue, unit);
    if (!slot) return;
    ++summary.fact_mentions;
    const std::string written = text_->substr(t.begin, end - t.begin);
    auto& stated = facts_[static_cast<int>(*slot)];
    if (!stated) {
      stated = Stated{value, written, clause_};
      summary.facts[contract_slot_name(*slot)] = {value, clause_};
      return;  // a first statement: nothing to contradict yet
    }
    judging(end);
    if (stated->value != value) {
      report(contract_slot_kind(*slot),
             std::string(contract_slot_name(*slot)) + " stated as " + stated->written + " in clause " +
                 std::to_string(stated->clause) + ", written as " + written,
             t.begin, end);
    }
  }

  // "Acme Corp": a capitalised word, one space, a corporate suffix at i.
  static bool name_at(const std::vector<Token>& toks, size_t i, std::string* name) {
    if (i == 0 || toks[i].type != Tok::Word || !contains(contract_company_suffixes(), toks[i].text)) return false;
    const Token& prev = toks[i - 1];
    if (prev.type != Tok::Word || !is_upper(prev.text[0]) || prev.end() + 1 != toks[i].begin) return false;
    *name = std::string(prev.text) + " " + std::string(toks[i].text);
    return true;
  }

  // "(the Role)" or ", as the Role" right after the name ending at i.
  static bool role_after(const std::vector<Token>& toks, size_t i, std::string* role) {
    auto word = [&](size_t k, const char* w) { return k < toks.size() && toks[k].text == w; };
    size_t r = 0;
    if (word(i + 1, "(") && word(i + 2, "the")) r = i + 3;
    if (word(i + 1, ",") && word(i + 2, "as") && word(i + 3, "the")) r = i + 4;
    if (r == 0 || r >= toks.size() || !contains(contract_roles(), toks[r].text)) return false;
    *role = std::string(toks[r].text);
    return true;
  }

  const std::string* text_ = nullptr;
  size_t judged_from_;
  bool header_seen_ = false;
  int clause_ = 0;
  std::set<int> clauses_;
  std::map<std::string, std::string> parties_;
  std::array<std::optional<Stated>, kContractSlotCount> facts_;
};

}  // namespace

ContractCheck check_contract_detailed(const std::string& prompt, const std::string& continuation) {
  Reader reader(prompt.size());
  reader.read(prompt + continuation);
  return {std::move(reader.violations), reader.judged};
}

std::vector<Violation> check_contract(const std::string& prompt, const std::string& continuation) {
  return std::move(check_contract_detailed(prompt, continuation).violations);
}

ContractSummary summarize_contract(const std::string& text) {
  Reader reader(text.size());  // judge nothing: only read
  reader.read(text);
  return std::move(reader.summary);
}

}  // namespace zl
