#include "sim/stages/checker_oracle.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "datasets/contracts_checker.h"

namespace zl {

std::vector<std::pair<std::string, size_t>> oracle_violations(const std::string& prompt,
                                                              const std::string& continuation) {
  std::vector<std::pair<std::string, size_t>> out;
  for (const auto& v : check_contract(prompt, continuation)) out.emplace_back(v.kind, v.offset);
  // The sentence being written, closed at the last whitespace: what precedes
  // a space is complete (a value, a name, a clause number).
  size_t cut = continuation.size();
  while (cut > 0 && !std::isspace(static_cast<unsigned char>(continuation[cut - 1]))) --cut;
  if (cut > 0) {
    for (const auto& v : check_contract(prompt, continuation.substr(0, cut) + "\n"))
      if (v.kind != "conditional") out.emplace_back(v.kind, v.offset);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

SequenceCheck checker_oracle(std::shared_ptr<const Tokenizer> tokenizer, int64_t window, bool span) {
  // Each item's prompt text, decoded once (a decode call's items keep their prompts).
  auto prompts = std::make_shared<std::map<int64_t, std::string>>();
  return [tokenizer, window, span, prompts](int64_t item, const std::vector<int32_t>& seq,
                                            int64_t prompt_len) -> SequenceVerdict {
    auto it = prompts->find(item);
    if (it == prompts->end())
      it = prompts->emplace(item, tokenizer->decode(std::vector<int32_t>(seq.begin(), seq.begin() + prompt_len))).first;
    const std::string& prompt = it->second;
    const std::vector<int32_t> cont(seq.begin() + prompt_len, seq.end());
    const int64_t n = cont.size();
    if (n == 0) return {};
    // start[k - first]: the byte offset of continuation token k, for the
    // tokens of the window (the last `window` of the sequence) and the end.
    const int64_t first = std::max<int64_t>(0, n - window);
    std::vector<size_t> start;
    for (int64_t k = first; k <= n; ++k)
      start.push_back(tokenizer->decode(std::vector<int32_t>(cont.begin(), cont.begin() + k)).size());
    const std::string text = tokenizer->decode(cont);
    const std::string before = text.substr(0, start[n - 1 - first]);  // without the newest token

    const auto now = oracle_violations(prompt, text), was = oracle_violations(prompt, before);
    size_t earliest = std::string::npos;
    for (const auto& v : now) {
      if (std::binary_search(was.begin(), was.end(), v)) continue;  // not the newest token's doing
      if (v.second < start.front()) continue;                       // starts before the window
      earliest = std::min(earliest, v.second);
    }
    if (earliest == std::string::npos) return {};
    if (!span) return {true, 0};
    // The token holding the violation's first byte: the last one starting at or before it.
    int64_t k = first;
    while (k + 1 < n && start[k + 1 - first] <= earliest) ++k;
    return {true, n - k};
  };
}

}  // namespace zl
