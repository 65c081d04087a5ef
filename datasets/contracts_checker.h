// The exact checker of the contracts corpus (docs/design.md#data-and-the-checker), and the small language
// that the generator (datasets/contracts.h) writes and this file reads.
//
// A contract is one header line, numbered one-sentence clauses and an end
// marker:
//
//   AGREEMENT between Acme Corp (the Seller) and Borealis Ltd (the Buyer).
//   1. The Seller shall deliver 40 units to the Buyer by 2024-03-12.
//   2. If delivery is late then the Buyer may withhold payment.
//   3. Delivery under clause 1 is due on 2024-03-12.
//   END OF AGREEMENT
//
// Reading rules, shared by both sides so that "exact" has a meaning:
// - Sentences end at '.' or at a line break. A line that starts with digits
//   and ". " is a clause label, not a sentence.
// - A party is a capitalised word followed by a corporate suffix
//   ("Acme Corp"). A role is one of contract_roles(), capitalised ("Seller").
//   The header binds names to roles with "Name (the Role)"; clauses may
//   rebind with "Name (the Role)" or "Name, as the Role,".
// - A value is "$12,400" (money), "2024-03-12" (date), or a number followed by
//   "units", "days" or "months". It is bound to the fact slot named by the
//   nearest cue word before it in the same sentence ("pay", "deposit",
//   "penalty", "deliver", "terminates", "notice", "warranty", "term"); a value
//   with no cue, or with a cue that does not take its unit, is not a fact.
// - A conditional is balanced when every "if" is closed by a later "then" in
//   the same sentence and "otherwise" appears no more often than "if".
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace zl {

// What a stated value is bound to. One contract states each slot at most once
// and may restate it any number of times afterwards.
enum class ContractSlot {
  PaymentAmount,  // "shall pay $12,400"                      money
  PaymentPeriod,  // "shall pay ... within 30 days"            days
  Deposit,        // "a deposit of $2,000"                     money
  Penalty,        // "a penalty of $500"                       money
  Quantity,       // "shall deliver 40 units"                  units
  DeliveryDate,   // "shall deliver ... by 2024-03-12"         date
  EndDate,        // "this agreement terminates on 2025-01-31" date
  NoticePeriod,   // "a notice period of 14 days"              days
  Warranty,       // "a warranty of 12 months"                 months
  Term,           // "a term of 24 months"                     months
};
constexpr int kContractSlotCount = 10;

const char* contract_slot_name(ContractSlot slot);  // "payment amount"
// The violation kind a contradiction of this slot reports: "amount" (money
// and quantities), "date" or "term" (periods in days or months).
const char* contract_slot_kind(ContractSlot slot);

const std::vector<std::string>& contract_company_names();     // "Acme Corp", ...
const std::vector<std::string>& contract_company_suffixes();  // "Corp", "Ltd", ...
const std::vector<std::string>& contract_roles();             // "Seller", "Buyer", ...

constexpr const char* kContractHeaderWord = "AGREEMENT";
constexpr const char* kContractEndMarker = "END OF AGREEMENT";

struct Violation {
  std::string kind;    // "party", "amount", "date", "term", "clause_ref", "conditional"
  std::string detail;  // human-readable: what was stated vs what was written
  size_t offset;       // byte offset in the continuation where it starts
};

// Judges a generated continuation against the facts stated in the prompt
// (and earlier in the continuation itself). Only complete sentences are
// judged: a trailing fragment cut by the token limit is ignored. Prompt and
// continuation are read as one text, so a prompt cut mid-sentence is fine;
// a violation is reported only where the continuation wrote part of it.
// Reading stops at the end marker or at a second header: what follows is a
// new contract whose facts the prompt does not fix.
// Text that does not parse as clauses is not reported (there is no
// "malformed" kind): the checker judges the facts it can read, and fluency is
// measured elsewhere (perplexity), so garbage yields no violations and never
// throws.
std::vector<Violation> check_contract(const std::string& prompt, const std::string& continuation);

// The same judgement with its denominator: how many statements of the
// continuation the checker judged, so that violations per statement is a rate
// (issue 29 item 7: a run's prompts then give many units of quality each, not
// one per continuation). A judged statement is a place where the checker
// compared what the continuation wrote against the contract and could have
// reported a violation, under the same rule (the continuation wrote part of
// it): a value restating a slot already stated (a first statement binds
// later ones but has nothing to contradict), a party name, a role, a clause
// reference, and a sentence with "if", "then" or "otherwise". Each reports at
// most one violation, so violations.size() <= judged.
struct ContractCheck {
  std::vector<Violation> violations;  // as check_contract returns them
  int judged = 0;                     // judged statements of the continuation
};
ContractCheck check_contract_detailed(const std::string& prompt, const std::string& continuation);

// What a contract text states, as the checker reads it (for tests, prompt
// cutting and analysis).
struct ContractFact {
  std::string value;  // canonical: "12400" for "$12,400", "40" for "40 units", "2024-03-12"
  int clause = 0;     // the clause that stated it first (0: before any clause)
};
struct ContractSummary {
  std::map<std::string, std::string> parties;   // declared name -> role
  std::vector<int> clauses;                     // clause labels in order of appearance
  std::map<std::string, ContractFact> facts;    // slot name -> first statement
  int fact_mentions = 0;                        // values bound to a slot: statements and restatements
  std::vector<std::pair<int, int>> references;  // (citing clause, cited clause)
  int max_nesting = 0;                          // most "if"s in one sentence
};
ContractSummary summarize_contract(const std::string& text);

}  // namespace zl
