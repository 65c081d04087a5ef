#include "sim/serving/serving_tables.h"

#include <cstdio>

namespace zl {

void ShapeColumns::add(const StepShape& shape) {
  parts.push_back(shape.parts.size());
  tokens.push_back(shape.tokens());
  decodes.push_back(shape.decodes());
  prefill.push_back(shape.prefill_tokens());
  keys.push_back(shape.keys());  // kept so that a cost model can be refitted from the file alone
  after_idle.push_back(shape.after_idle);
  prefilled_last.push_back(shape.prefilled_before[0]);
  prefilled_earlier.push_back(shape.prefilled_before[1]);
  samples.push_back(shape.samples());
}

void ShapeColumns::into(Table& t) const {
  t.add("parts", parts);
  t.add("tokens", tokens);
  t.add("decodes", decodes);
  t.add("prefill_tokens", prefill);
  t.add("keys", keys);
  t.add("after_idle", after_idle);
  t.add("prefilled_last", prefilled_last);
  t.add("prefilled_earlier", prefilled_earlier);
  t.add("samples", samples);
}

void FigureColumns::add(const ServingMetrics& m) {
  for (const auto& [name, v] : m.named()) columns[name].push_back(v);
}

void FigureColumns::into(Table& t) const {
  for (const auto& [name, v] : columns) t.add(name, v);
}

void LoadRows::add(const std::string& s, double l, double rt, const ServingMetrics& m, int64_t rep) {
  side.push_back(s);
  load.push_back(l);
  rate.push_back(rt);
  repeat.push_back(rep);
  figures.add(m);
}

Table LoadRows::table() const {
  Table t;
  t.add("side", side);
  t.add("load", load);
  t.add("rate", rate);
  t.add("repeat", repeat);
  figures.into(t);
  return t;
}

void SensitivityRows::add(double l, double rt, double scale, const ServingMetrics& m, int64_t repeat) {
  load.push_back(l);
  rate.push_back(rt);
  step_scale.push_back(scale);
  matched.push_back(repeat);
  figures.add(m);
}

Table SensitivityRows::table() const {
  Table t;
  t.add("load", load);
  t.add("rate", rate);
  t.add("step_scale", step_scale);
  t.add("matched", matched);
  figures.into(t);
  return t;
}

double StepRows::add(double l, int64_t rep, std::vector<StepRecord> ran, const StepCostModel& cost) {
  double took = 0, predicted = 0;
  for (auto& st : ran) {
    predicted_ns.push_back(cost.step_ns(st.shape));
    took += static_cast<double>(st.end_ns - st.start_ns);
    predicted += static_cast<double>(predicted_ns.back());
    steps.push_back(std::move(st));
    load.push_back(l);
    repeat.push_back(rep);
  }
  return predicted > 0 ? took / predicted : 0;
}

Table StepRows::table() const {
  ShapeColumns shape;
  std::vector<int64_t> start, end, dropped, running, waiting, preempted, blocks;
  for (const auto& st : steps) {
    start.push_back(st.start_ns);
    end.push_back(st.end_ns);
    shape.add(st.shape);
    int64_t d = 0;
    for (int64_t x : st.dropped) d += x;
    dropped.push_back(d);
    running.push_back(st.running);
    waiting.push_back(st.waiting);
    preempted.push_back(st.preempted);
    blocks.push_back(st.free_blocks);
  }
  Table t;
  t.add("load", load);
  t.add("repeat", repeat);
  t.add("start_ns", start);
  t.add("end_ns", end);
  t.add("predicted_ns", predicted_ns);  // the figure of the cost model calibrated around its load
  shape.into(t);
  t.add("dropped", dropped);
  t.add("running", running);
  t.add("waiting", waiting);
  t.add("preempted", preempted);
  t.add("free_blocks", blocks);
  return t;
}

Table review_table(const ResampleModel& m) {
  std::vector<int64_t> band, first, last;
  std::vector<double> fresh, after_fire, behind_fire, at_fire;
  for (size_t b = 0; b < m.by_position.size(); ++b) {
    band.push_back(b);
    first.push_back(int64_t{1} << b);
    last.push_back(b + 1 == m.by_position.size() ? -1 : (int64_t{2} << b) - 1);
    fresh.push_back(m.by_position[b][kFresh]);
    after_fire.push_back(m.by_position[b][kAfterFire]);
    behind_fire.push_back(m.by_position[b][kBehindFire]);
    at_fire.push_back(m.by_position[b][kAtFire]);
  }
  Table t;
  t.add("band", band);
  t.add("first_position", first);
  t.add("last_position", last);
  t.add("rate", fresh);
  t.add("after_fire_rate", after_fire);
  t.add("behind_fire_rate", behind_fire);
  t.add("at_fire_rate", at_fire);
  return t;
}

void print_loads(const std::string& variant, const LoadRows& rows) {
  std::printf("serving %s: %-11s %6s %8s %8s %9s %9s %9s %9s %7s\n", variant.c_str(), "side", "load", "req/s", "tok/s",
              "ttft p50", "ttft p90", "tpot p50", "e2el p99", "preempt");
  auto at = [&](const char* name, size_t i) { return rows.figures.columns.at(name)[i]; };
  for (size_t i = 0; i < rows.side.size(); ++i) {
    const std::string side = rows.side[i] + (rows.repeat[i] > 0 ? " #" + std::to_string(rows.repeat[i]) : "");
    std::printf("serving %s: %-11s %6.2f %8.2f %8.1f %9.2f %9.2f %9.3f %9.2f %7.0f\n", variant.c_str(), side.c_str(),
                rows.load[i], at("request_throughput", i), at("output_throughput", i), at("median_ttft_ms", i),
                at("p90_ttft_ms", i), at("median_tpot_ms", i), at("p99_e2el_ms", i), at("preemptions", i));
  }
  std::fflush(stdout);
}

}  // namespace zl
