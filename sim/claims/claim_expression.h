// A claim's metric expression (registry key `metric`): names of /index metric
// columns, numbers, + - * / and parentheses, e.g. "1 - violation_rate",
// evaluated on one run's metrics. The grammar is in the header of
// ablations/claims.registry.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>

namespace zl {

class MetricExpression {
 public:
  // Throws std::invalid_argument saying what does not parse (an unexpected
  // character, a missing ')', nesting deeper than 64 levels).
  explicit MetricExpression(const std::string& text);
  ~MetricExpression();
  MetricExpression(MetricExpression&&) noexcept;
  MetricExpression& operator=(MetricExpression&&) noexcept;

  // The value on one run's metrics; NaN where a name is absent or not finite
  // (the first such name goes into *missing when it is empty) or where a
  // divisor is 0.
  double eval(const std::map<std::string, double>& metrics, std::string* missing) const;
  // The metric names it reads.
  std::set<std::string> names() const;

 private:
  struct Node;    // a number, a name, or an operator over one or two nodes
  class Parser;   // recursive descent (claim_expression.cpp)
  std::unique_ptr<Node> root_;
};

// The /index metric names a claim's metric expression reads.
std::set<std::string> metric_names(const std::string& metric);

}  // namespace zl
