// The contracts corpus: the generator honours its options and is
// deterministic, its own documents check clean at every cut, and the checker
// finds each kind of violation (and nothing in a correct restatement).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "datasets/contracts.h"

namespace zl {
namespace {

ContractsOptions with_documents(int64_t n) {
  ContractsOptions opt;
  opt.documents = n;
  return opt;
}

// Offsets where a line starts: every clause boundary (make_contract_prompts
// uses a subset) and the end marker.
std::vector<size_t> clause_cuts(const std::string& doc) {
  std::vector<size_t> cuts;
  for (size_t p = 1; p < doc.size(); ++p) {
    if (doc[p - 1] == '\n') cuts.push_back(p);
  }
  return cuts;
}

std::string violations_text(const std::vector<Violation>& vs) {
  std::string out;
  for (const Violation& v : vs) out += v.kind + " @" + std::to_string(v.offset) + ": " + v.detail + "\n";
  return out;
}

// ---- generator ---------------------------------------------------------------

TEST(Contracts, SameSeedGivesSameDocuments) {
  EXPECT_EQ(generate_contracts(with_documents(200), 7), generate_contracts(with_documents(200), 7));
}

TEST(Contracts, DifferentSeedGivesDifferentDocuments) {
  const auto a = generate_contracts(with_documents(200), 7);
  const auto b = generate_contracts(with_documents(200), 8);
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += (a[i] == b[i]);
  EXPECT_EQ(same, 0u);
}

// The corpus must be the same on every machine and compiler (results are
// compared across them); a change to the templates must update this on purpose.
TEST(Contracts, FirstDocumentIsPinned) {
  EXPECT_EQ(
      generate_contract(ContractsOptions{}, 0, 0),
      "AGREEMENT between Kestrel GmbH (the Contractor) and Dunmore LLC (the Client).\n"
      "1. The Contractor shall complete delivery by 2026-01-12.\n"
      "2. The Client shall comply with clause 1.\n"
      "3. Kestrel GmbH gives a warranty of 3 months on the goods.\n"
      "4. The warranty of 3 months under clause 3 covers all defects.\n"
      "5. Either party may end this agreement with a notice period of 45 days.\n"
      "6. If the Client pays late then if the Client is in breach of clause 3 then if the goods are damaged then "
      "the Client may withhold payment, otherwise the Client shall accept the goods, otherwise clause 4 shall not "
      "apply.\n"
      "7. Dunmore LLC shall pay a deposit of $25,400 on signing.\n"
      "END OF AGREEMENT\n");
}

TEST(Contracts, DocumentDependsOnlyOnSeedAndIndex) {
  const auto many = generate_contracts(with_documents(50), 3);
  const auto few = generate_contracts(with_documents(10), 3);
  for (size_t i = 0; i < few.size(); ++i) {
    EXPECT_EQ(few[i], many[i]);
    EXPECT_EQ(generate_contract(with_documents(50), 3, static_cast<int64_t>(i)), many[i]);
  }
}

TEST(Contracts, HonoursDocumentCount) {
  for (int64_t n : {0, 1, 37, 2000}) EXPECT_EQ(generate_contracts(with_documents(n), 1).size(), static_cast<size_t>(n));
}

TEST(Contracts, DocumentsAreCompactAscii) {
  for (const std::string& doc : generate_contracts(with_documents(2000), 11)) {
    EXPECT_GE(doc.size(), 300u);
    EXPECT_LE(doc.size(), 1600u);
    for (char c : doc) ASSERT_TRUE(c == '\n' || (c >= 32 && c < 127)) << doc;
  }
}

TEST(Contracts, DocumentsFollowTheGrammar) {
  const auto& names = contract_company_names();
  const auto& roles = contract_roles();
  for (const std::string& doc : generate_contracts(with_documents(500), 5)) {
    ASSERT_EQ(doc.rfind(std::string(kContractHeaderWord) + " between ", 0), 0u) << doc;
    ASSERT_EQ(doc.substr(doc.size() - 17), std::string(kContractEndMarker) + "\n") << doc;
    const ContractSummary s = summarize_contract(doc);
    EXPECT_GE(s.parties.size(), 2u);
    EXPECT_LE(s.parties.size(), 3u);
    for (const auto& [name, role] : s.parties) {
      EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
      EXPECT_NE(std::find(roles.begin(), roles.end(), role), roles.end()) << role;
    }
    for (size_t i = 0; i < s.clauses.size(); ++i) EXPECT_EQ(s.clauses[i], static_cast<int>(i) + 1) << doc;
    EXPECT_GE(s.clauses.size(), 4u);
  }
}

// Seed 000 §2.2's entity-reference switch needs parties named in clauses too,
// not only in the header.
TEST(Contracts, PartiesAreNamedByRoleAndByName) {
  int by_name = 0, by_role = 0;
  for (const std::string& doc : generate_contracts(with_documents(200), 2)) {
    const std::string body = doc.substr(doc.find('\n'));
    for (const auto& [name, role] : summarize_contract(doc).parties) {
      by_name += body.find(name) != std::string::npos;
      by_role += body.find("the " + role) != std::string::npos;
    }
  }
  EXPECT_GT(by_name, 50);
  EXPECT_GT(by_role, 50);
}

TEST(Contracts, HonoursNestingDepth) {
  for (int depth : {0, 1, 3, 5}) {
    ContractsOptions opt = with_documents(500);
    opt.max_nesting = depth;
    int deepest = 0;
    for (const std::string& doc : generate_contracts(opt, 9)) {
      deepest = std::max(deepest, summarize_contract(doc).max_nesting);
    }
    EXPECT_EQ(deepest, depth);
  }
}

TEST(Contracts, HonoursFactCount) {
  for (int facts : {0, 1, 4, 7, 10, 15}) {
    ContractsOptions opt = with_documents(300);
    opt.facts = facts;
    for (const std::string& doc : generate_contracts(opt, 4)) {
      ASSERT_EQ(summarize_contract(doc).facts.size(), static_cast<size_t>(std::min(facts, kContractSlotCount))) << doc;
    }
  }
}

TEST(Contracts, HonoursReferenceDistance) {
  for (int distance : {0, 1, 3, 5}) {
    ContractsOptions opt = with_documents(500);
    opt.reference_distance = distance;
    int farthest = 0;
    for (const std::string& doc : generate_contracts(opt, 6)) {
      for (const auto& [citing, cited] : summarize_contract(doc).references) {
        ASSERT_GE(citing - cited, 1) << doc;
        ASSERT_LE(citing - cited - 1, distance) << doc;
        farthest = std::max(farthest, citing - cited - 1);
      }
    }
    EXPECT_EQ(farthest, distance);
  }
}

// Every value the generator writes sits after the cue that binds it, so a
// model that changes any of them can be caught.
TEST(Contracts, EveryWrittenValueIsBoundToAFact) {
  const std::regex value(R"(\$[0-9][0-9,]*|[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]+ (units|days|months))");
  ContractsOptions opt = with_documents(300);
  opt.facts = 10;
  for (const std::string& doc : generate_contracts(opt, 8)) {
    const auto values = std::distance(std::sregex_iterator(doc.begin(), doc.end(), value), std::sregex_iterator());
    ASSERT_EQ(summarize_contract(doc).fact_mentions, static_cast<int>(values)) << doc;
  }
}

// The generator and the checker agree: no cut of a true document is flagged.
TEST(Contracts, GeneratedDocumentsCheckCleanAtClauseCuts) {
  std::vector<ContractsOptions> variants(4, with_documents(300));
  variants[1].max_nesting = 6;
  variants[2].facts = 10;
  variants[3].reference_distance = 0, variants[3].facts = 1;
  for (uint64_t seed : {0, 1, 2}) {
    for (const ContractsOptions& opt : variants) {
      for (const std::string& doc : generate_contracts(opt, seed)) {
        for (size_t cut : clause_cuts(doc)) {
          const auto v = check_contract(doc.substr(0, cut), doc.substr(cut));
          ASSERT_TRUE(v.empty()) << violations_text(v) << "cut " << cut << " of\n" << doc;
        }
      }
    }
  }
}

// Also mid-sentence, mid-number and mid-name cuts.
TEST(Contracts, GeneratedDocumentsCheckCleanAtEveryByte) {
  for (const std::string& doc : generate_contracts(with_documents(30), 12)) {
    for (size_t cut = 0; cut <= doc.size(); ++cut) {
      const auto v = check_contract(doc.substr(0, cut), doc.substr(cut));
      ASSERT_TRUE(v.empty()) << violations_text(v) << "cut " << cut << " of\n" << doc;
    }
  }
}

// ---- checker -----------------------------------------------------------------

const std::string kPrompt =
    "AGREEMENT between Acme Corp (the Seller) and Borealis Ltd (the Buyer).\n"
    "1. The Seller shall deliver 40 units to the Buyer by 2024-03-12.\n"
    "2. The Buyer shall pay $12,400 to the Seller within 30 days.\n";

// Checks one continuation of kPrompt that should break exactly one rule, of
// `kind`, starting at the first occurrence of `at`.
void expect_one(const std::string& continuation, const std::string& kind, const std::string& at) {
  const auto v = check_contract(kPrompt, continuation);
  ASSERT_EQ(v.size(), 1u) << violations_text(v);
  EXPECT_EQ(v[0].kind, kind) << v[0].detail;
  EXPECT_EQ(v[0].offset, continuation.find(at)) << v[0].detail;
}

TEST(Contracts, CorrectRestatementIsClean) {
  const std::string cont =
      "3. Payment of $12,400 under clause 2 is due within 30 days.\n"
      "4. Delivery under clause 1 is due on 2024-03-12.\n"
      "5. Each delivery of 40 units under clause 1 shall be inspected by Borealis Ltd.\n"
      "6. Acme Corp, as the Seller, shall keep the goods insured.\n"
      "7. If delivery by 2024-03-12 fails then if the goods are damaged then the Buyer may withhold payment, "
      "otherwise Acme Corp shall pay $12400.\n"
      "END OF AGREEMENT\n";
  EXPECT_EQ(violations_text(check_contract(kPrompt, cont)), "");
}

TEST(Contracts, DetectsChangedAmount) {
  expect_one("3. Payment of $13,400 under clause 2 is due on receipt of the goods.\n", "amount", "$13,400");
  const auto v = check_contract(kPrompt, "3. Payment of $13,400 under clause 2 is due.\n");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].detail.find("$12,400"), std::string::npos) << v[0].detail;
  EXPECT_NE(v[0].detail.find("$13,400"), std::string::npos) << v[0].detail;
}

TEST(Contracts, DetectsChangedQuantityAsAmount) {
  expect_one("3. Each delivery of 45 units under clause 1 shall be inspected by the Buyer.\n", "amount", "45 units");
}

TEST(Contracts, DetectsChangedDate) {
  expect_one("3. Delivery under clause 1 is due on 2024-03-21.\n", "date", "2024-03-21");
}

TEST(Contracts, DetectsChangedTerm) {
  expect_one("3. Payment under clause 2 is due within 45 days.\n", "term", "45 days");
}

TEST(Contracts, DetectsUnknownParty) {
  expect_one("3. Zenith Corp shall inspect the goods on arrival.\n", "party", "Zenith Corp");
}

TEST(Contracts, DetectsRoleGivenToWrongParty) {
  expect_one("3. Acme Corp, as the Buyer, shall inspect the goods on arrival.\n", "party", "Acme Corp");
}

TEST(Contracts, DetectsUndeclaredRole) { expect_one("3. The Agent shall settle the dispute.\n", "party", "Agent"); }

TEST(Contracts, DetectsReferenceToMissingClause) {
  expect_one("3. The Buyer shall comply with clause 99.\n", "clause_ref", "clause 99");
}

TEST(Contracts, AllowsReferenceToClausesWrittenSoFar) {
  EXPECT_TRUE(check_contract(kPrompt,
                             "3. Clause 3 survives termination of this agreement.\n"
                             "4. The Seller shall comply with clause 3.\n")
                  .empty());
  expect_one("3. Clause 3 survives termination of this agreement.\n4. The Seller shall comply with clause 5.\n",
             "clause_ref", "clause 5");
}

TEST(Contracts, DetectsUnbalancedConditional) {
  expect_one("3. If delivery is late the Buyer may withhold payment.\n", "conditional", "If");
  expect_one("3. If delivery is late then if the goods are damaged the Buyer may withhold payment.\n", "conditional",
             "If");
  expect_one("3. The Buyer then may withhold payment.\n", "conditional", "then");
  expect_one(
      "3. If delivery is late then the Buyer may withhold payment, otherwise the Seller shall replace the "
      "goods, otherwise the Buyer may terminate this agreement.\n",
      "conditional", "otherwise the Buyer");
}

TEST(Contracts, BalancedNestedConditionalIsClean) {
  EXPECT_TRUE(check_contract(kPrompt,
                             "3. If delivery is late then if the goods are damaged then if the Buyer gives "
                             "notice then the Buyer may terminate this agreement, otherwise the Seller shall "
                             "replace the goods.\n")
                  .empty());
}

TEST(Contracts, IgnoresTruncatedFinalSentence) {
  for (const std::string cont :
       {"3. If delivery is late then if the goods", "3. Payment of $13,4",
        "3. Payment of $12,400 under clause 2 is due.\n4. Zenith Co", "3. The Buyer shall comply with clause 9",
        "3. Delivery under clause 1 is due on 2024-03-2", "3.", "3"}) {
    EXPECT_EQ(violations_text(check_contract(kPrompt, cont)), "") << cont;
  }
}

TEST(Contracts, ContinuationStatementsBindItsLaterSentences) {
  expect_one(
      "3. Late delivery incurs a penalty of $500.\n4. The penalty of $600 under clause 3 is owed to the Buyer.\n",
      "amount", "$600");
}

TEST(Contracts, PromptCutMidSentenceIsJudgedWhole) {
  const std::string prompt = kPrompt + "3. Payment of $12,";
  EXPECT_TRUE(check_contract(prompt, "400 under clause 2 is due.\n").empty());
  const auto v = check_contract(prompt, "900 under clause 2 is due.\n");
  ASSERT_EQ(v.size(), 1u) << violations_text(v);
  EXPECT_EQ(v[0].kind, "amount");
  EXPECT_EQ(v[0].offset, 0u);
}

// The prompt's own text is not the model's fault.
TEST(Contracts, PromptTextIsNotJudged) {
  const std::string prompt = kPrompt + "3. The Buyer shall comply with clause 99.\n";
  EXPECT_TRUE(check_contract(prompt, "4. Delivery under clause 1 is due on 2024-03-12.\n").empty());
}

TEST(Contracts, StopsAtEndOfContract) {
  const std::string next =
      "AGREEMENT between Lumen PLC (the Client) and Kestrel GmbH (the Contractor).\n"
      "1. The Client shall pay $99,000 to the Contractor.\n";
  EXPECT_TRUE(check_contract(kPrompt, "END OF AGREEMENT\n" + next).empty());
  EXPECT_TRUE(check_contract(kPrompt, next).empty());
}

// 200 characters drawn from `alphabet` by a linear congruential generator.
std::string junk_text(const std::string& alphabet, uint64_t* state) {
  std::string junk;
  for (int k = 0; k < 200; ++k) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    junk += alphabet[(*state >> 33) % alphabet.size()];
  }
  return junk;
}

// Garbage is not reported (no "malformed" kind) and never throws.
TEST(Contracts, GarbageIsIgnoredWithoutCrashing) {
  EXPECT_TRUE(check_contract(kPrompt, "3. zq xx 99 )( $ , as the .\n\n..\n17. 2024-99-99 units.\n").empty());
  uint64_t state = 1;
  const std::string alphabet = "ab Z.,()$-\n0123456789 if then otherwise clause Corp Seller units days \xff";
  for (int i = 0; i < 2000; ++i) {
    const std::string junk = junk_text(alphabet, &state);
    EXPECT_NO_THROW(check_contract(kPrompt, junk));
    EXPECT_NO_THROW(check_contract(junk, junk));
  }
}

// ---- judged statements: the per-fact rate's denominator (issue 29 item 7) ---

// Clause 3 states three things the checker judges (a restated amount, broken;
// a clause reference; a declared party), clause 4 two (an undeclared role, a
// missing clause), both broken: 3 violations in 5 judged statements.
TEST(Contracts, CheckerCountsJudgedStatementsBesideViolations) {
  const std::string cont =
      "3. Payment of $13,400 under clause 2 is due to Acme Corp.\n"
      "4. The Agent shall comply with clause 9.\n";
  const ContractCheck c = check_contract_detailed(kPrompt, cont);
  EXPECT_EQ(c.judged, 5);
  ASSERT_EQ(c.violations.size(), 3u) << violations_text(c.violations);
  EXPECT_DOUBLE_EQ(static_cast<double>(c.violations.size()) / c.judged, 0.6);
  EXPECT_EQ(violations_text(c.violations), violations_text(check_contract(kPrompt, cont)));
}

// A first statement binds later ones but has nothing to contradict: only the
// restatement is judged ($600 against $500), beside clause 3 and the Buyer.
TEST(Contracts, CheckerJudgesRestatementsNotFirstStatements) {
  const std::string first = "3. Late delivery incurs a penalty of $500.\n";
  EXPECT_EQ(check_contract_detailed(kPrompt, first).judged, 0);
  const ContractCheck c =
      check_contract_detailed(kPrompt, first + "4. The penalty of $600 under clause 3 is owed to the Buyer.\n");
  EXPECT_EQ(c.judged, 3);
  EXPECT_EQ(c.violations.size(), 1u) << violations_text(c.violations);
}

// A conditional is one statement however nested; its roles are two more.
TEST(Contracts, CheckerJudgesAConditionalSentenceOnce) {
  const ContractCheck nested = check_contract_detailed(
      kPrompt,
      "3. If delivery is late then if the goods are damaged then the Buyer may withhold payment, otherwise the "
      "Seller shall replace the goods.\n");
  EXPECT_EQ(nested.judged, 3);
  EXPECT_TRUE(nested.violations.empty()) << violations_text(nested.violations);
  const ContractCheck open = check_contract_detailed(kPrompt, "3. If delivery is late the Buyer may withhold payment.\n");
  EXPECT_EQ(open.judged, 2);
  EXPECT_EQ(open.violations.size(), 1u) << violations_text(open.violations);
}

// Only what the continuation wrote counts, as for violations: not the
// prompt's sentences, but a value the continuation finished; not a fragment
// cut by the token limit.
TEST(Contracts, CheckerCountsOnlyTheContinuationsStatements) {
  const std::string restated = "4. Delivery under clause 1 is due on 2024-03-12.\n";
  EXPECT_EQ(check_contract_detailed(kPrompt + "3. The Buyer shall comply with clause 99.\n", restated).judged, 2);
  const ContractCheck finished = check_contract_detailed(kPrompt + "3. Payment of $12,", "400 under clause 2 is due.\n");
  EXPECT_EQ(finished.judged, 2);
  EXPECT_TRUE(finished.violations.empty()) << violations_text(finished.violations);
  EXPECT_EQ(check_contract_detailed(kPrompt, "3. Payment of $13,4").judged, 0);
  EXPECT_EQ(check_contract_detailed(kPrompt, "END OF AGREEMENT\n3. The Agent shall comply with clause 9.\n").judged,
            0);
}

// Garbage states nothing; any text judges at least as many statements as it
// breaks, so a per-fact rate lies in [0, 1].
TEST(Contracts, CheckerJudgesNothingInGarbageAndNeverMoreViolationsThanStatements) {
  EXPECT_EQ(check_contract_detailed(kPrompt, "3. zq xx 99 )( $ , as the .\n\n..\n17. 2024-99-99 units.\n").judged, 0);
  uint64_t state = 7;
  const std::string alphabet = "ab Z.,()$-\n0123456789 if then otherwise clause Corp Acme Seller Agent units days";
  int judged = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string junk = junk_text(alphabet, &state);
    const ContractCheck c = check_contract_detailed(kPrompt, junk);
    ASSERT_LE(static_cast<int>(c.violations.size()), c.judged) << junk;
    judged += c.judged;
  }
  EXPECT_GT(judged, 0);  // the junk does hit judged words, so the bound was tested
}

// ---- prompts -----------------------------------------------------------------

TEST(Contracts, PromptsRespectLengthAndClauseBoundaries) {
  const auto docs = generate_contracts(with_documents(200), 21);
  const std::set<std::string> all(docs.begin(), docs.end());
  const auto prompts = make_contract_prompts(docs, 150, 300, 5);
  ASSERT_EQ(prompts.size(), 150u);
  for (const ContractPrompt& p : prompts) {
    EXPECT_LE(p.prompt.size(), 300u);
    EXPECT_EQ(all.count(p.prompt + p.reference), 1u);
    EXPECT_EQ(p.prompt.back(), '\n');
    EXPECT_TRUE(p.reference[0] >= '0' && p.reference[0] <= '9') << p.reference;
    const ContractSummary s = summarize_contract(p.prompt);
    EXPECT_FALSE(s.facts.empty()) << p.prompt;
    EXPECT_FALSE(s.clauses.empty()) << p.prompt;
    EXPECT_TRUE(check_contract(p.prompt, p.reference).empty());
  }
}

TEST(Contracts, PromptsAreDeterministic) {
  const auto docs = generate_contracts(with_documents(200), 21);
  const auto a = make_contract_prompts(docs, 50, 400, 5);
  const auto b = make_contract_prompts(docs, 50, 400, 5);
  const auto c = make_contract_prompts(docs, 50, 400, 6);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].prompt + a[i].reference, b[i].prompt + b[i].reference);
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += (a[i].prompt == c[i].prompt);
  EXPECT_LT(same, 10u);
}

TEST(Contracts, PromptsRevisitDocumentsOrGiveUp) {
  const auto docs = generate_contracts(with_documents(5), 1);
  EXPECT_EQ(make_contract_prompts(docs, 20, 1000, 3).size(), 20u);
  EXPECT_TRUE(make_contract_prompts(docs, 20, 60, 3).empty());  // no header fits
}

// ---- scale -------------------------------------------------------------------

// Sizes of a real study; speed is reported by benchmarks, not asserted here.
TEST(Contracts, GeneratesTwoThousandDocuments) {
  const auto docs = generate_contracts(with_documents(2000), 3);
  EXPECT_EQ(docs.size(), 2000u);
}

TEST(Contracts, ChecksOneThousandTrueContinuationsClean) {
  const auto prompts = make_contract_prompts(generate_contracts(with_documents(1000), 3), 1000, 400, 1);
  ASSERT_EQ(prompts.size(), 1000u);
  size_t flagged = 0;
  for (const ContractPrompt& p : prompts) flagged += check_contract(p.prompt, p.reference).size();
  EXPECT_EQ(flagged, 0u);
}

// The point of counting per fact: the true continuations of a run's prompts
// hold more judged statements than there are continuations (more units).
TEST(Contracts, TrueContinuationsHoldMoreJudgedStatementsThanContinuations) {
  const auto prompts = make_contract_prompts(generate_contracts(with_documents(200), 3), 200, 400, 1);
  ASSERT_EQ(prompts.size(), 200u);
  int judged = 0;
  for (const ContractPrompt& p : prompts) {
    const ContractCheck c = check_contract_detailed(p.prompt, p.reference);
    EXPECT_TRUE(c.violations.empty()) << violations_text(c.violations);
    judged += c.judged;
  }
  EXPECT_GT(judged, 2 * 200);
}

}  // namespace
}  // namespace zl
