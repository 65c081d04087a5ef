// decoder → metrics: what the timed decode passes of a run measure. The
// passes run in the run's own process right after its quality pass
// (decode.timing = run), or after every run of the study, interleaved with
// the other arms of the same seed (decode.timing = paired, sim/study/paired_timing.h);
// either way their timings become the same metrics and tables.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/decoder.h"
#include "sim/results.h"

namespace zl {

class PassTimings {
 public:
  // One timed pass, the `repeat`-th of the run.
  void add(int64_t repeat, const DecodeOutput& pass);

  // decode_tok_s (the median pass's kept tokens per second), TTFT, TPOT and
  // ITL percentiles over every request of every pass, and the per-request
  // and per-gap tables decode/requests and decode/itl.
  void write(RunRecord& r) const;

 private:
  std::vector<double> pass_tok_s_;
  std::vector<RequestTiming> timings_;
  std::vector<int64_t> req_repeat_, req_item_, req_tokens_, itl_repeat_, itl_item_;
  std::vector<double> req_ttft_, req_tpot_, req_e2e_, itl_ms_;
};

}  // namespace zl
