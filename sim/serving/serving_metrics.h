// A serving benchmark's figures under vLLM's names and definitions
// (vllm/benchmarks/serve.py, calculate_metrics): TTFT from arrival to the
// first token, TPOT = (E2EL − TTFT) / (output tokens − 1) per request, ITL
// every gap between tokens pooled over requests, E2EL from arrival to the
// last token; request and output-token throughput over the benchmark's
// duration (from the first arrival, at 0, to the last token); goodput, the
// requests meeting every SLO given per second (DistServe's definition).
// Percentiles as numpy.percentile computes them (linear interpolation,
// sim/metrics.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zl {

// What happened to one request, as the client sees it.
struct RequestRecord {
  int64_t id = 0;
  int64_t arrival_ns = 0;
  int64_t prompt_len = 0;
  std::vector<int64_t> token_ns;  // when each output token it kept was sent, since the start
  int64_t preemptions = 0;        // times its KV blocks were taken and it was recomputed
};

// Service-level objectives in ms; 0 sets none on that figure.
struct Slo {
  double ttft_ms = 0, tpot_ms = 0, e2el_ms = 0;
  bool met_by(const RequestRecord& r) const;
};

struct Summary {
  double mean = 0, median = 0, std = 0, p90 = 0, p99 = 0;  // NaN when there are no values
};

Summary summarise(const std::vector<double>& values);

struct ServingMetrics {
  int64_t completed = 0;       // requests with every token sent
  int64_t total_input = 0, total_output = 0;
  int64_t preemptions = 0;
  double duration_s = 0;
  double request_throughput = 0, output_throughput = 0;  // per second
  Summary ttft_ms, tpot_ms, itl_ms, e2el_ms;
  double goodput = 0;          // requests meeting every SLO, per second
  double slo_attainment = 0;   // their share of the completed requests
  // Every figure under its vLLM name: request_throughput, output_throughput,
  // total_token_throughput, {mean,median,std,p90,p99}_{ttft,tpot,itl,e2el}_ms,
  // goodput, plus completed, duration_s, preemptions, slo_attainment.
  std::map<std::string, double> named() const;
};

ServingMetrics serving_metrics(const std::vector<RequestRecord>& requests, const Slo& slo);
// Requests meeting `slo` (answered ones only), and their share of the
// answered: serving_metrics' goodput count and slo_attainment, without the
// latency percentiles (a search over rates needs only these).
int64_t meeting_slo(const std::vector<RequestRecord>& requests, const Slo& slo);
double slo_attainment(const std::vector<RequestRecord>& requests, const Slo& slo);

}  // namespace zl
