#include "sim/claims/competence_floor.h"

#include <cmath>
#include <stdexcept>

#include "sim/claims/claim_expression.h"
#include "sim/claims/claim_tables.h"

namespace zl {

CompetenceFloor parse_floor(const std::string& text) {
  CompetenceFloor f;
  f.text = trim_blanks(text);
  std::string rest = f.text;
  for (const char* side : {"control", "treatment"}) {
    const std::string suffix = std::string(" on ") + side;
    if (rest.size() > suffix.size() && rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) == 0) {
      f.on = side;
      rest = trim_blanks(rest.substr(0, rest.size() - suffix.size()));
      break;
    }
  }
  // An expression holds no < or >: the first one is the comparison.
  const size_t at = rest.find_first_of("<>");
  if (at == std::string::npos)
    throw std::invalid_argument("'" + f.text + "' is not 'METRIC <= NUMBER' (or <, >=, >), optionally 'on control' or 'on treatment'");
  f.op = rest.substr(at, at + 1 < rest.size() && rest[at + 1] == '=' ? 2 : 1);
  f.metric = trim_blanks(rest.substr(0, at));
  const std::string number = trim_blanks(rest.substr(at + f.op.size()));
  if (f.metric.empty()) throw std::invalid_argument("'" + f.text + "' names no metric before " + f.op);
  if (!parse_number(number, &f.bound) || !std::isfinite(f.bound))
    throw std::invalid_argument("'" + f.text + "': '" + number + "' is not a finite number");
  const MetricExpression check(f.metric);  // throws naming what does not parse
  return f;
}

std::vector<CompetenceFloor> parse_floors(const std::string& text) {
  std::vector<CompetenceFloor> out;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(';', begin);
    const std::string one = trim_blanks(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (one.empty()) throw std::invalid_argument("'" + trim_blanks(text) + "' has an empty floor between ';'s");
    out.push_back(parse_floor(one));
    if (end == std::string::npos) return out;
    begin = end + 1;
  }
}

FloorReading read_floor(const CompetenceFloor& floor, const RunsBySeed& runs, const std::string& side) {
  FloorReading out;
  out.side = side;
  const MetricExpression metric(floor.metric);
  for (const auto& [seed, group] : runs) {
    double sum = 0;
    int n = 0;
    for (const ClaimRun* run : group) {
      std::string missing;
      const double v = metric.eval(run->metrics, &missing);
      if (std::isfinite(v)) {
        sum += v;
        ++n;
      }
    }
    if (n > 0) out.per_seed[seed] = sum / n;
  }
  if (out.per_seed.empty()) return out;
  double sum = 0;
  for (const auto& [seed, v] : out.per_seed) sum += v;
  out.measured = true;
  out.value = sum / static_cast<double>(out.per_seed.size());
  const double v = out.value, b = floor.bound;
  out.met = floor.op == "<=" ? v <= b : floor.op == "<" ? v < b : floor.op == ">=" ? v >= b : v > b;
  return out;
}

std::string floor_note(const CompetenceFloor& floor, const FloorReading& r) {
  if (!r.measured) return "the competence floor " + floor.text + " has no value in the " + r.side + "'s runs";
  std::string seeds;
  for (const auto& [seed, v] : r.per_seed)
    seeds += (seeds.empty() ? "" : ", ") + std::to_string(seed) + ": " + format_value(v);
  return std::string(r.met ? "competent: " : "untestable at this competence: ") + "the " + r.side + "'s " +
         floor.metric + " is " + format_value(r.value) + " (seeds " + seeds + "), " +
         (r.met ? "within" : "outside") + " the floor " + floor.metric + " " + floor.op + " " +
         format_value(floor.bound);
}

}  // namespace zl
