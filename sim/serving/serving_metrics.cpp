#include "sim/serving/serving_metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/metrics.h"

namespace zl {

namespace {

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

double ttft_ms(const RequestRecord& r) { return ms(r.token_ns.front() - r.arrival_ns); }
double e2el_ms(const RequestRecord& r) { return ms(r.token_ns.back() - r.arrival_ns); }

// vLLM's TPOT leaves out the first token, whose wait is the prefill's.
double tpot_ms(const RequestRecord& r) {
  const size_t n = r.token_ns.size();
  return n > 1 ? (e2el_ms(r) - ttft_ms(r)) / static_cast<double>(n - 1) : 0.0;
}

// A rate over the benchmark's duration; 0, not inf or NaN, when nothing was timed.
double per_second(double count, double duration_s) { return duration_s > 0 ? count / duration_s : 0.0; }

}  // namespace

bool Slo::met_by(const RequestRecord& r) const {
  if (r.token_ns.empty()) return false;
  if (ttft_ms > 0 && !(zl::ttft_ms(r) <= ttft_ms)) return false;
  if (tpot_ms > 0 && !(zl::tpot_ms(r) <= tpot_ms)) return false;
  if (e2el_ms > 0 && !(zl::e2el_ms(r) <= e2el_ms)) return false;
  return true;
}

Summary summarise(const std::vector<double>& values) {
  Summary s;
  if (values.empty()) {
    s.mean = s.median = s.std = s.p90 = s.p99 = NAN;
    return s;
  }
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(squares / static_cast<double>(values.size()));  // numpy.std's default ddof = 0, as vLLM reports
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  s.median = percentile_of_sorted(sorted, 50);
  s.p90 = percentile_of_sorted(sorted, 90);
  s.p99 = percentile_of_sorted(sorted, 99);
  return s;
}

int64_t meeting_slo(const std::vector<RequestRecord>& requests, const Slo& slo) {
  int64_t good = 0;
  for (const auto& r : requests) good += slo.met_by(r);
  return good;
}

double slo_attainment(const std::vector<RequestRecord>& requests, const Slo& slo) {
  int64_t completed = 0;
  for (const auto& r : requests) completed += !r.token_ns.empty();
  return completed > 0 ? static_cast<double>(meeting_slo(requests, slo)) / static_cast<double>(completed) : NAN;
}

ServingMetrics serving_metrics(const std::vector<RequestRecord>& requests, const Slo& slo) {
  ServingMetrics m;
  std::vector<double> ttfts, tpots, itls, e2els;
  int64_t last_token_ns = 0;
  for (const auto& r : requests) {
    m.preemptions += r.preemptions;
    if (r.token_ns.empty()) continue;  // never answered: counts in no figure but preemptions
    ++m.completed;
    m.total_input += r.prompt_len;
    m.total_output += static_cast<int64_t>(r.token_ns.size());
    last_token_ns = std::max(last_token_ns, r.token_ns.back());
    ttfts.push_back(ttft_ms(r));
    e2els.push_back(e2el_ms(r));
    if (r.token_ns.size() > 1) tpots.push_back(tpot_ms(r));
    for (size_t i = 1; i < r.token_ns.size(); ++i) itls.push_back(ms(r.token_ns[i] - r.token_ns[i - 1]));
  }
  // The benchmark starts at the first arrival, 0, and ends with the last token sent.
  m.duration_s = static_cast<double>(last_token_ns) / 1e9;
  m.request_throughput = per_second(static_cast<double>(m.completed), m.duration_s);
  m.output_throughput = per_second(static_cast<double>(m.total_output), m.duration_s);
  const int64_t good = meeting_slo(requests, slo);
  m.goodput = per_second(static_cast<double>(good), m.duration_s);
  m.slo_attainment = m.completed > 0 ? static_cast<double>(good) / static_cast<double>(m.completed) : NAN;
  m.ttft_ms = summarise(ttfts);
  m.tpot_ms = summarise(tpots);
  m.itl_ms = summarise(itls);
  m.e2el_ms = summarise(e2els);
  return m;
}

std::map<std::string, double> ServingMetrics::named() const {
  std::map<std::string, double> out = {
      {"request_throughput", request_throughput},
      {"output_throughput", output_throughput},
      {"total_token_throughput", per_second(static_cast<double>(total_input + total_output), duration_s)},
      {"goodput", goodput},
      {"slo_attainment", slo_attainment},
      {"completed", static_cast<double>(completed)},
      {"total_input_tokens", static_cast<double>(total_input)},
      {"total_output_tokens", static_cast<double>(total_output)},
      {"duration_s", duration_s},
      {"preemptions", static_cast<double>(preemptions)},
  };
  const std::pair<const char*, const Summary*> figures[] = {
      {"ttft", &ttft_ms}, {"tpot", &tpot_ms}, {"itl", &itl_ms}, {"e2el", &e2el_ms}};
  for (const auto& [name, s] : figures) {
    const std::string suffix = std::string("_") + name + "_ms";
    out["mean" + suffix] = s->mean;
    out["median" + suffix] = s->median;
    out["std" + suffix] = s->std;
    out["p90" + suffix] = s->p90;
    out["p99" + suffix] = s->p99;
  }
  return out;
}

}  // namespace zl
