#include "sim/prompts.h"

#include <algorithm>
#include <stdexcept>

#include "datasets/contracts.h"

namespace zl {

// Prompts are drawn with one fixed seed, whatever the run's seed.
constexpr uint64_t kPromptSeed = 4242;

Prompts make_prompts(const RunConfig& cfg, const Dataset& ds, int64_t count, int64_t budget) {
  if (count <= 0) count = cfg.decode.prompts;
  if (budget <= 0) budget = cfg.model.context - cfg.decode.max_new_tokens;
  const double chars_per_token = static_cast<double>(ds.val.text_bytes) / std::max<int64_t>(1, ds.val.tokens.numel());
  Prompts p;
  if (ds.corpus == "contracts") {
    std::vector<std::string> docs;
    for (const auto& d : ds.docs.val) docs.push_back(d.text);
    size_t max_chars = static_cast<size_t>(budget * chars_per_token * 0.9);
    for (const auto& cp : make_contract_prompts(docs, count * 2, max_chars, kPromptSeed)) {
      auto ids = ds.tokenizer->encode(cp.prompt);
      if (static_cast<int64_t>(ids.size()) > budget) continue;  // would be truncated: facts lost
      p.text.push_back(cp.prompt);
      p.tokens.push_back(ids);
      // A prompt is its document's opening, cut at a clause boundary.
      int64_t doc = -1;
      for (size_t d = 0; d < ds.docs.val.size() && doc < 0; ++d)
        if (ds.docs.val[d].text.compare(0, cp.prompt.size(), cp.prompt) == 0) doc = static_cast<int64_t>(d);
      p.source_doc.push_back(doc);
      if (static_cast<int64_t>(p.text.size()) == count) break;
    }
    p.judged = !p.text.empty();
  }
  if (!p.judged) {
    for (size_t i = 0; i < ds.docs.val.size() && static_cast<int64_t>(p.text.size()) < count; ++i) {
      auto ids = ds.tokenizer->encode(ds.docs.val[i].text);
      if (ids.size() < 8) continue;
      ids.resize(std::min<size_t>(ids.size(), budget));
      p.tokens.push_back(ids);
      p.text.push_back(ds.tokenizer->decode(ids));
      p.source_doc.push_back(static_cast<int64_t>(i));
    }
  }
  if (p.tokens.empty()) throw std::runtime_error("no decode prompts fit in model.context - decode.max_new_tokens");
  return p;
}

Prompts calibration_prompts(const RunConfig& cfg, const Dataset& ds, int64_t count, const std::vector<int64_t>& lengths) {
  const Prompts test = make_prompts(cfg, ds);
  std::vector<bool> used(ds.docs.val.size(), false);
  for (int64_t d : test.source_doc)
    if (d >= 0) used[d] = true;
  Prompts p;
  int64_t free_docs = 0;
  for (size_t i = 0; i < ds.docs.val.size() && static_cast<int64_t>(p.tokens.size()) < count; ++i) {
    if (used[i]) continue;
    ++free_docs;
    auto ids = ds.tokenizer->encode(ds.docs.val[i].text);
    const int64_t len = lengths[p.tokens.size() % lengths.size()];
    if (static_cast<int64_t>(ids.size()) < len + 1) continue;  // too short to be cut
    ids.resize(len);
    p.tokens.push_back(ids);
    p.text.push_back(ds.tokenizer->decode(ids));
    p.source_doc.push_back(static_cast<int64_t>(i));
  }
  if (static_cast<int64_t>(p.tokens.size()) < count)
    throw std::runtime_error("calibrate.prompts = " + std::to_string(count) + ": only " +
                             std::to_string(p.tokens.size()) + " of the " + std::to_string(ds.docs.val.size()) +
                             " validation documents are long enough and unused by the " +
                             std::to_string(test.tokens.size()) + " test prompts (" + std::to_string(free_docs) +
                             " unused); lower it or raise data.documents");
  return p;
}

}  // namespace zl
