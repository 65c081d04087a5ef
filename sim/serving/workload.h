// The requests a serving benchmark sends (issue 14): when each arrives, its
// prompt, and how many tokens it asks for. Synthetic arrivals follow vLLM's
// benchmark client (vllm/benchmarks/serve.py): gaps drawn from
// Gamma(shape = burstiness, scale = 1 / (rate · burstiness)), burstiness 1
// a Poisson process, rate ∞ everything at t = 0. Or a trace file replays
// recorded arrivals. Output lengths are fixed per request and eos is ignored,
// as the benchmark's `ignore_eos` does, so that the real server and the
// simulator serve the same work.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace zl {

struct ServeRequest {
  int64_t id = 0;          // index in arrival order
  int64_t arrival_ns = 0;  // since the benchmark's start (the first request arrives at 0)
  std::vector<int32_t> prompt;
  int64_t output_len = 0;  // tokens to generate
};

struct ArrivalOptions {
  double rate = 1;        // requests per second (> 0; infinity: all at once)
  double burstiness = 1;  // the Gamma shape (> 0); 1 = Poisson
  int64_t requests = 1;   // how many
  uint64_t seed = 0;
};

// Arrival times (ns, non-decreasing, the first 0) of opt.requests requests.
// Throws std::invalid_argument naming the option when rate or burstiness is
// not > 0 or requests < 1.
std::vector<int64_t> arrival_times_ns(const ArrivalOptions& opt);

// opt.requests requests arriving at arrival_times_ns(opt), prompt i taken
// from `prompts` in turn (i mod size), each asking for `output_len` tokens.
std::vector<ServeRequest> synthetic_workload(const std::vector<std::vector<int32_t>>& prompts, int64_t output_len,
                                             const ArrivalOptions& opt);

// A trace file: CSV with a header row naming at least the columns
// `arrival_s` (seconds since the start, non-decreasing), `prompt` (text,
// quoted as CSV quotes: "" for a quote) and `output_tokens` (>= 1), in any
// order; other columns are ignored. Each prompt is tokenised by `encode`.
// Errors (std::runtime_error) name the file and, where it is one line's
// fault, the line: a missing file, a missing column, a bad number, an empty
// prompt, arrivals out of order, no rows. Arrival times are shifted so the
// first is 0.
std::vector<ServeRequest> read_trace(const std::string& path,
                                     const std::function<std::vector<int32_t>(const std::string&)>& encode);

// Writes requests as a trace read_trace reads back (prompts as text by `decode`).
void write_trace(const std::string& path, const std::vector<ServeRequest>& requests,
                 const std::function<std::string(const std::vector<int32_t>&)>& decode);

}  // namespace zl
