#include "sim/decode_timing.h"

#include <string>
#include <utility>

#include "sim/metrics.h"

namespace zl {

void PassTimings::add(int64_t repeat, const DecodeOutput& pass) {
  if (pass.seconds > 0) pass_tok_s_.push_back(pass.kept_tokens / pass.seconds);
  for (size_t i = 0; i < pass.timings.size(); ++i) {
    const auto& t = pass.timings[i];
    timings_.push_back(t);
    req_repeat_.push_back(repeat);
    req_item_.push_back(static_cast<int64_t>(i));
    req_tokens_.push_back(t.tokens);
    req_ttft_.push_back(t.ttft_ms);
    req_tpot_.push_back(t.tpot_ms);
    req_e2e_.push_back(t.e2e_ms);
    for (double g : t.itl_ms) {
      itl_repeat_.push_back(repeat);
      itl_item_.push_back(static_cast<int64_t>(i));
      itl_ms_.push_back(g);
    }
  }
}

void PassTimings::write(RunRecord& r) const {
  auto& m = r.metrics;
  // The median pass: in the claims study a process's first timed pass, or
  // one that met other load, ran up to 4x slower than its neighbours, and
  // the pooled rate carried that into a seed's figure (issue 12: the A/A
  // throughput row of one run, +0.27 [-0.97, +1.51] pooled, +0.01 [-0.07,
  // +0.09] by median pass).
  m["decode_tok_s"] = percentile(pass_tok_s_, 50);
  std::vector<double> ttft, tpot, itl;
  for (const auto& t : timings_) {
    ttft.push_back(t.ttft_ms);
    if (t.tokens > 1) tpot.push_back(t.tpot_ms);
    itl.insert(itl.end(), t.itl_ms.begin(), t.itl_ms.end());
  }
  for (auto [name, v] : {std::pair{"ttft_ms", &ttft}, std::pair{"tpot_ms", &tpot}, std::pair{"itl_ms", &itl}}) {
    m[std::string(name) + "_p50"] = percentile(*v, 50);
    m[std::string(name) + "_p90"] = percentile(*v, 90);
    m[std::string(name) + "_p99"] = percentile(*v, 99);
    m[std::string(name) + "_mean"] = mean(*v);
  }
  Table requests, gaps;
  requests.add("repeat", req_repeat_);
  requests.add("item", req_item_);
  requests.add("tokens", req_tokens_);
  requests.add("ttft_ms", req_ttft_);
  requests.add("tpot_ms", req_tpot_);
  requests.add("e2e_ms", req_e2e_);
  gaps.add("repeat", itl_repeat_);
  gaps.add("item", itl_item_);
  gaps.add("itl_ms", itl_ms_);
  r.tables["decode/requests"] = requests;
  r.tables["decode/itl"] = gaps;
}

}  // namespace zl
