// The contracts generator. Each document is drawn from its own random stream
// (seed, index), so a document does not depend on how many came before it.
// Every value is written right after the cue word that binds it to its slot
// (datasets/contracts_checker.h), which is what lets the checker be exact;
// the GeneratedDocumentsCheckClean* tests hold the two sides together.
#include "datasets/contracts.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <numeric>
#include <utility>

namespace zl {
namespace {

// splitmix64. Unlike std::uniform_int_distribution it draws the same numbers
// with every standard library, so the corpus is the same on every machine.
class Rng {
 public:
  explicit Rng(uint64_t state) : state_(state) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
  bool percent(int p) { return below(100) < static_cast<size_t>(p); }

  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }

  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  uint64_t state_;
};

using Slot = ContractSlot;

// ---- parties -------------------------------------------------------------------

struct Party {
  std::string name, role;
};

enum { kProvider = 0, kPayer = 1, kThird = 2 };  // index in Draft::parties

// Role pairs keep the sense of each template: the provider delivers, the
// payer pays. The optional third party mediates.
const std::vector<std::pair<std::string, std::string>> kRolePairs = {
    {"Seller", "Buyer"}, {"Supplier", "Customer"}, {"Contractor", "Client"}};
const std::vector<std::string> kThirdRoles = {"Agent", "Guarantor", "Carrier"};

// ---- the document being written ----------------------------------------------------

struct Draft {
  Draft(const ContractsOptions& o, uint64_t state) : opt(o), rng(state) {}

  const ContractsOptions& opt;
  Rng rng;
  std::vector<Party> parties;
  std::array<std::string, kContractSlotCount> value;  // as written ("$12,400"); empty: not in this contract
  std::array<int, kContractSlotCount> stated_in{};    // clause that stated the slot; 0: not yet
  std::array<int, kContractSlotCount> restated{};     // restatements so far
  std::array<int, kContractSlotCount> restated_in{};  // the clause that last restated the slot
  std::vector<std::string> clauses;

  int current() const { return static_cast<int>(clauses.size()) + 1; }  // the clause being written
  const std::string& val(Slot s) const { return value[static_cast<int>(s)]; }
  bool has_third() const { return parties.size() > kThird; }

  // A clause may refer back at most reference_distance clauses.
  bool recent(int clause) const { return clause > 0 && current() - clause - 1 <= opt.reference_distance; }
  bool recent(Slot s) const { return recent(stated_in[static_cast<int>(s)]); }
};

void choose_parties(Draft& d) {
  std::vector<std::string> names = contract_company_names();
  d.rng.shuffle(names);
  const auto& roles = d.rng.pick(kRolePairs);
  d.parties = {{names[0], roles.first}, {names[1], roles.second}};
  if (d.rng.percent(40)) d.parties.push_back({names[2], d.rng.pick(kThirdRoles)});
}

// Names a party now by role, now by name: the entity-reference switch of
// seed 000 §2.2. It draws from the stream, so an expression may call it (or
// `subject`) only once: the operands of `+` have no evaluation order, and two
// draws in one expression could give other documents with another compiler.
// Braced lists are evaluated in order and are safe.
std::string mention(Draft& d, int who, bool sentence_start = false) {
  const Party& p = d.parties[who];
  if (d.rng.percent(70)) return (sentence_start ? "The " : "the ") + p.role;
  return p.name;
}

// As the subject of a clause, a name may also restate its role, which the
// checker holds to the header.
std::string subject(Draft& d, int who) {
  const Party& p = d.parties[who];
  if (d.rng.percent(15)) return p.name + ", as the " + p.role + ",";
  return mention(d, who, true);
}

int any_party(Draft& d) { return static_cast<int>(d.rng.below(d.parties.size())); }

// ---- values --------------------------------------------------------------------

std::string money(Rng& r) {
  std::string digits = std::to_string((10 + r.below(990)) * 100);  // $1,000 .. $99,900
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return "$" + digits;
}

std::string date(Rng& r) {
  // Drawn one statement at a time: function arguments have no evaluation order.
  const int year = 2024 + static_cast<int>(r.below(3));
  const int month = 1 + static_cast<int>(r.below(12));
  const int day = 1 + static_cast<int>(r.below(28));
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", year, month, day);
  return buf;
}

std::string days(Rng& r) { return std::to_string(r.pick(std::vector<int>{7, 10, 14, 21, 30, 45, 60, 90})) + " days"; }
std::string months(Rng& r) { return std::to_string(r.pick(std::vector<int>{3, 6, 12, 18, 24, 36})) + " months"; }

std::string draw_value(Slot s, Rng& r) {
  switch (s) {
    case Slot::PaymentAmount:
    case Slot::Deposit:
    case Slot::Penalty: return money(r);
    case Slot::Quantity: return std::to_string(10 + r.below(491)) + " units";
    case Slot::DeliveryDate:
    case Slot::EndDate: return date(r);
    case Slot::PaymentPeriod:
    case Slot::NoticePeriod: return days(r);
    case Slot::Warranty:
    case Slot::Term: return months(r);
  }
  return "";
}

// Picks the contract's facts and groups them into statement clauses. Quantity
// with delivery date, and payment with its period, share a clause half the
// time, putting numeric tokens back to back (seed 000 §2.2).
std::vector<std::vector<Slot>> statement_groups(Draft& d) {
  std::vector<Slot> slots;
  for (int i = 0; i < kContractSlotCount; ++i) slots.push_back(static_cast<Slot>(i));
  d.rng.shuffle(slots);
  slots.resize(static_cast<size_t>(std::clamp(d.opt.facts, 0, kContractSlotCount)));
  for (Slot s : slots) d.value[static_cast<int>(s)] = draw_value(s, d.rng);

  auto chosen = [&](Slot s) { return !d.val(s).empty(); };
  const std::vector<std::pair<Slot, Slot>> pairs = {{Slot::Quantity, Slot::DeliveryDate},
                                                    {Slot::PaymentAmount, Slot::PaymentPeriod}};
  std::vector<std::vector<Slot>> groups;
  std::vector<Slot> grouped;
  for (const auto& [lead, partner] : pairs) {
    if (chosen(lead) && chosen(partner) && d.rng.percent(50)) {
      groups.push_back({lead, partner});
      grouped.insert(grouped.end(), {lead, partner});
    }
  }
  for (Slot s : slots) {
    if (std::find(grouped.begin(), grouped.end(), s) == grouped.end()) groups.push_back({s});
  }
  d.rng.shuffle(groups);
  return groups;
}

// ---- clauses -------------------------------------------------------------------

std::string statement_clause(Draft& d, const std::vector<Slot>& group) {
  for (Slot s : group) d.stated_in[static_cast<int>(s)] = d.current();
  const bool pair = group.size() > 1;
  const bool alt = d.rng.percent(50);
  switch (group[0]) {
    case Slot::Quantity: {
      const std::string by = pair ? " by " + d.val(Slot::DeliveryDate) : "";
      const std::string verb = alt ? " shall deliver " : " agrees to deliver ";
      const std::string provider = subject(d, kProvider);  // one draw per statement: see `mention`
      const std::string payer = mention(d, kPayer);
      return provider + verb + d.val(Slot::Quantity) + " to " + payer + by + ".";
    }
    case Slot::PaymentAmount: {
      const std::string within = pair ? " within " + d.val(Slot::PaymentPeriod) : "";
      const std::string amount = d.val(Slot::PaymentAmount);
      const std::string payer = subject(d, kPayer);
      if (alt) {
        const std::string provider = mention(d, kProvider);
        return payer + " shall pay " + amount + " to " + provider + within + ".";
      }
      return payer + " agrees to pay " + amount + " for the goods" + within + ".";
    }
    case Slot::DeliveryDate:
      if (alt) return subject(d, kProvider) + " shall complete delivery by " + d.val(Slot::DeliveryDate) + ".";
      return "The delivery date is " + d.val(Slot::DeliveryDate) + ".";
    case Slot::PaymentPeriod:
      return subject(d, kPayer) + " shall make payment within " + d.val(Slot::PaymentPeriod) + " of delivery.";
    case Slot::Deposit:
      if (alt) return subject(d, kPayer) + " shall pay a deposit of " + d.val(Slot::Deposit) + " on signing.";
      return "A deposit of " + d.val(Slot::Deposit) + " is due on signing.";
    case Slot::Penalty:
      if (alt) return "Late delivery incurs a penalty of " + d.val(Slot::Penalty) + ".";
      return subject(d, kProvider) + " shall pay a penalty of " + d.val(Slot::Penalty) + " for each late delivery.";
    case Slot::EndDate:
      return std::string("This agreement ") + (alt ? "terminates" : "expires") + " on " + d.val(Slot::EndDate) + ".";
    case Slot::NoticePeriod:
      if (alt) return "Either party may end this agreement with a notice period of " + d.val(Slot::NoticePeriod) + ".";
      return "Each party shall give notice of " + d.val(Slot::NoticePeriod) + " before any claim.";
    case Slot::Warranty:
      return subject(d, kProvider) + " gives a warranty of " + d.val(Slot::Warranty) + " on the goods.";
    case Slot::Term:
      return std::string("This agreement ") + (alt ? "has" : "runs for") + " a term of " + d.val(Slot::Term) + ".";
  }
  return "";
}

// Restates a fact and names the clause that stated it.
std::string restatement_clause(Draft& d, Slot s) {
  ++d.restated[static_cast<int>(s)];
  d.restated_in[static_cast<int>(s)] = d.current();
  const std::string v = d.val(s);
  const std::string under = " under clause " + std::to_string(d.stated_in[static_cast<int>(s)]);
  switch (s) {
    case Slot::Quantity: return "Each delivery of " + v + under + " shall be inspected by " + mention(d, kPayer) + ".";
    case Slot::DeliveryDate: return "Delivery" + under + " is due on " + v + ".";
    case Slot::PaymentAmount: return "Payment of " + v + under + " is due on receipt of the goods.";
    case Slot::PaymentPeriod: return "Payment" + under + " is due within " + v + ".";
    case Slot::Deposit: return "The deposit of " + v + under + " is refundable.";
    case Slot::Penalty: return "The penalty of " + v + under + " is owed to " + mention(d, kPayer) + ".";
    case Slot::EndDate:
      return "Subject to clause " + std::to_string(d.stated_in[static_cast<int>(s)]) +
             ", this agreement terminates on " + v + ".";
    case Slot::NoticePeriod: return "The notice period of " + v + under + " applies to both parties.";
    case Slot::Warranty: return "The warranty of " + v + under + " covers all defects.";
    case Slot::Term: return "The term of " + v + under + " may be renewed once.";
  }
  return "";
}

std::string reference_clause(Draft& d, int k) {
  const std::string clause = "clause " + std::to_string(k);
  switch (d.rng.below(4)) {
    case 0: return mention(d, any_party(d), true) + " shall comply with " + clause + ".";
    case 1: return "Clause " + std::to_string(k) + " survives termination of this agreement.";
    case 2: return "Subject to " + clause + ", " + mention(d, kProvider) + " shall keep the goods insured.";
    default:
      return "Any dispute under " + clause + " goes to " + (d.has_third() ? mention(d, kThird) : "arbitration") + ".";
  }
}

std::string plain_clause(Draft& d) {
  switch (d.rng.below(d.has_third() ? 5 : 4)) {
    case 0: return subject(d, kProvider) + " shall keep the goods insured.";
    case 1: return subject(d, kPayer) + " shall inspect the goods on arrival.";
    case 2: return "Each party shall keep this agreement confidential.";
    case 3: return "This agreement is governed by the laws of Delaware.";
    default: return subject(d, kThird) + " shall witness each delivery.";
  }
}

// A clause within reference distance of the one being written, or 0.
int recent_clause(Draft& d) {
  const int lo = std::max(1, d.current() - 1 - d.opt.reference_distance);
  const int hi = d.current() - 1;
  return hi < lo ? 0 : lo + static_cast<int>(d.rng.below(static_cast<size_t>(hi - lo + 1)));
}

// Facts within reference distance, the least restated first in line and none
// restated by the clause just before: a document that says "Payment of
// $93,200 under clause 2" twice in a row teaches less.
std::vector<Slot> restatable_slots(const Draft& d) {
  std::vector<Slot> out;
  int fewest = 0;
  for (int i = 0; i < kContractSlotCount; ++i) {
    if (!d.recent(static_cast<Slot>(i)) || d.restated_in[i] == d.current() - 1) continue;
    if (out.empty() || d.restated[i] < fewest) out.clear(), fewest = d.restated[i];
    if (d.restated[i] == fewest) out.push_back(static_cast<Slot>(i));
  }
  return out;
}

std::vector<std::string> conditions(Draft& d) {
  std::vector<std::string> c = {mention(d, kPayer) + " pays late",
                                "the goods are damaged",
                                "delivery is late",
                                mention(d, any_party(d)) + " gives notice",
                                "the goods fail inspection",
                                mention(d, any_party(d)) + " becomes insolvent"};
  if (d.has_third()) c.push_back(mention(d, kThird) + " approves the goods");
  if (const int k = recent_clause(d)) {
    c.push_back(mention(d, any_party(d)) + " is in breach of clause " + std::to_string(k));
  }
  if (d.recent(Slot::Quantity)) c.push_back("the delivery of " + d.val(Slot::Quantity) + " is late");
  if (d.recent(Slot::PaymentAmount)) c.push_back("payment of " + d.val(Slot::PaymentAmount) + " is late");
  if (d.recent(Slot::DeliveryDate)) c.push_back("delivery by " + d.val(Slot::DeliveryDate) + " fails");
  return c;
}

std::vector<std::string> actions(Draft& d) {
  std::vector<std::string> a = {
      mention(d, any_party(d)) + " may terminate this agreement", mention(d, kPayer) + " may withhold payment",
      mention(d, kProvider) + " shall replace the goods", mention(d, kPayer) + " shall accept the goods"};
  if (d.has_third()) a.push_back(mention(d, kThird) + " shall settle the dispute");
  if (const int k = recent_clause(d)) a.push_back("clause " + std::to_string(k) + " shall not apply");
  if (d.recent(Slot::Penalty)) a.push_back(mention(d, kProvider) + " shall pay a penalty of " + d.val(Slot::Penalty));
  if (d.recent(Slot::Deposit)) {
    a.push_back(mention(d, kProvider) + " shall refund the deposit of " + d.val(Slot::Deposit));
  }
  return a;
}

// "If A then if B then X, otherwise Y.": each "if" closed by its "then" in
// the same sentence, so balance is checkable; nesting depth is an event kind
// of seed 000 §2.2 (it fires above 3), hence depths up to max_nesting.
std::string conditional_clause(Draft& d, int depth) {
  std::vector<std::string> conds = conditions(d), acts = actions(d);
  d.rng.shuffle(conds);
  d.rng.shuffle(acts);
  std::string s;
  for (int level = 0; level < depth; ++level) {
    s += (level == 0 ? "If " : "if ") + conds[static_cast<size_t>(level) % conds.size()] + " then ";
  }
  s += acts[0];
  const size_t otherwise = std::min<size_t>(static_cast<size_t>(depth), d.rng.below(3));
  for (size_t i = 1; i <= otherwise; ++i) s += ", otherwise " + acts[i % acts.size()];
  return s + ".";
}

// A clause that states nothing new: a conditional, a restatement, a bare
// cross-reference, or boilerplate when nothing is within reach.
std::string other_clause(Draft& d) {
  const std::vector<Slot> slots = restatable_slots(d);
  const int k = recent_clause(d);
  const size_t roll = d.rng.below(100);
  if (d.opt.max_nesting > 0 && roll < 40) {
    return conditional_clause(d, 1 + static_cast<int>(d.rng.below(static_cast<size_t>(d.opt.max_nesting))));
  }
  if (!slots.empty() && roll < 75) return restatement_clause(d, d.rng.pick(slots));
  if (k > 0 && roll < 90) return reference_clause(d, k);
  return plain_clause(d);
}

std::string header(const Draft& d) {
  std::string s = std::string(kContractHeaderWord) + " between ";
  for (size_t i = 0; i < d.parties.size(); ++i) {
    if (i > 0) s += (i + 1 == d.parties.size()) ? " and " : ", ";
    s += d.parties[i].name + " (the " + d.parties[i].role + ")";
  }
  return s + ".\n";
}

std::string assemble(const Draft& d) {
  std::string doc = header(d);
  for (size_t i = 0; i < d.clauses.size(); ++i) doc += std::to_string(i + 1) + ". " + d.clauses[i] + "\n";
  return doc + kContractEndMarker + "\n";
}

// ---- prompts -------------------------------------------------------------------

// Offsets where a clause line starts, with at least one clause (and a fact,
// when the document has any) before it and the prefix short enough.
std::vector<size_t> cut_points(const std::string& doc, size_t max_chars) {
  const bool has_facts = !summarize_contract(doc).facts.empty();
  std::vector<size_t> cuts;
  bool first_clause = true;
  for (size_t p = 1; p < doc.size() && p <= max_chars; ++p) {
    if (doc[p - 1] != '\n' || doc[p] < '0' || doc[p] > '9') continue;
    if (first_clause) {
      first_clause = false;
      continue;
    }
    if (has_facts && summarize_contract(doc.substr(0, p)).facts.empty()) continue;
    cuts.push_back(p);
  }
  return cuts;
}

}  // namespace

std::string generate_contract(const ContractsOptions& opt, uint64_t seed, int64_t index) {
  Draft d(opt, seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(index + 1)));
  choose_parties(d);
  std::vector<std::vector<Slot>> groups = statement_groups(d);
  // The first clause states a fact, so that short prompts already hold one;
  // the others are interleaved with 3-6 clauses that refer back.
  std::vector<int> plan(3 + d.rng.below(4), -1);  // -1: another clause; g >= 0: statement group g
  for (size_t g = 1; g < groups.size(); ++g) plan.push_back(static_cast<int>(g));
  d.rng.shuffle(plan);
  if (!groups.empty()) plan.insert(plan.begin(), 0);
  for (int g : plan) d.clauses.push_back(g >= 0 ? statement_clause(d, groups[g]) : other_clause(d));
  return assemble(d);
}

std::vector<std::string> generate_contracts(const ContractsOptions& opt, uint64_t seed) {
  std::vector<std::string> docs;
  docs.reserve(static_cast<size_t>(std::max<int64_t>(opt.documents, 0)));
  for (int64_t i = 0; i < opt.documents; ++i) docs.push_back(generate_contract(opt, seed, i));
  return docs;
}

std::vector<ContractPrompt> make_contract_prompts(const std::vector<std::string>& docs, size_t n,
                                                  size_t max_prompt_chars, uint64_t seed) {
  Rng rng(seed ^ 0x5851F42D4C957F2Dull);
  std::vector<size_t> order(docs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  rng.shuffle(order);
  std::vector<std::vector<size_t>> cuts(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) cuts[i] = cut_points(docs[i], max_prompt_chars);

  std::vector<ContractPrompt> out;
  bool any = true;
  while (out.size() < n && any) {
    any = false;
    for (size_t i : order) {
      if (out.size() == n) break;
      if (cuts[i].empty()) continue;
      any = true;
      const size_t cut = rng.pick(cuts[i]);
      out.push_back({docs[i].substr(0, cut), docs[i].substr(cut)});
    }
  }
  return out;
}

}  // namespace zl
