// The contracts corpus (docs/design.md#data-and-the-checker): synthetic contracts from a seeded,
// deterministic generator, with an exact checker (datasets/contracts_checker.h,
// which also describes the grammar) that judges a model's continuation
// against the facts stated before it.
//
// The documents are short (about 400-1500 characters) because the models are
// tiny (a 128-token context); what they contain follows the event kinds of
// seed 000 §2.2: parties named now by role and now by name (entity-reference
// switches), nested conditionals, and amounts, dates and clause numbers close
// together (consecutive numeric tokens).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/contracts_checker.h"

namespace zl {

struct ContractsOptions {
  int64_t documents = 2000;    // contracts generated
  int max_nesting = 3;         // deepest conditional nesting written ("if ... then if ... then ..."); 0 = none
  int facts = 4;               // facts (amounts, dates, quantities, terms) stated per contract; at most 10
  int reference_distance = 3;  // at most this many clauses between a fact and a clause that refers back to it
};

// One string per document; a pure function of (options, seed). ASCII only.
// Each document ends with the end marker and a newline.
std::vector<std::string> generate_contracts(const ContractsOptions& opt, uint64_t seed);

// Document `index` of generate_contracts(opt, seed), without the others.
std::string generate_contract(const ContractsOptions& opt, uint64_t seed, int64_t index);

struct ContractPrompt {
  std::string prompt;
  std::string reference;  // the true continuation: the rest of the document
};

// Cuts documents at clause boundaries into prompts (facts already stated) whose
// length is at most max_prompt_chars, each paired with the document's true
// continuation. A prompt holds the header, at least one clause and, when its
// document states facts, at least one fact; at least one clause is left to
// continue. Documents are visited in a seeded order, one prompt each, and
// revisited (with another random cut, which may repeat) when n exceeds them;
// fewer than n come back only when no document has a cut short enough.
// Deterministic in seed.
std::vector<ContractPrompt> make_contract_prompts(const std::vector<std::string>& docs, size_t n,
                                                  size_t max_prompt_chars, uint64_t seed);

}  // namespace zl
