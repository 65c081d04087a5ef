// Metric expressions: a recursive-descent parser into a small tree, and its
// evaluation on one run's metrics.
#include "sim/claims/claim_expression.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace zl {

struct MetricExpression::Node {
  enum Op { Num, Name, Add, Sub, Mul, Div, Neg } op = Num;
  double num = 0;
  std::string name;
  std::unique_ptr<Node> a, b;

  double eval(const std::map<std::string, double>& m, std::string* missing) const {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    switch (op) {
      case Num: return num;
      case Name: {
        auto it = m.find(name);
        if (it == m.end() || !std::isfinite(it->second)) {
          if (missing && missing->empty()) *missing = name;
          return nan;
        }
        return it->second;
      }
      case Neg: return -a->eval(m, missing);
      case Add: return a->eval(m, missing) + b->eval(m, missing);
      case Sub: return a->eval(m, missing) - b->eval(m, missing);
      case Mul: return a->eval(m, missing) * b->eval(m, missing);
      case Div: {
        double d = b->eval(m, missing);
        return d == 0 ? nan : a->eval(m, missing) / d;
      }
    }
    return nan;
  }

  void names(std::set<std::string>* out) const {
    if (op == Name) out->insert(name);
    if (a) a->names(out);
    if (b) b->names(out);
  }
};

// sum := term (('+'|'-') term)*, term := unary (('*'|'/') unary)*,
// unary := '-' unary | atom, atom := number | name | '(' sum ')'.
class MetricExpression::Parser {
 public:
  explicit Parser(std::string s) : s_(std::move(s)) {}
  std::unique_ptr<Node> parse() {
    auto e = sum();
    skip();
    if (i_ != s_.size()) fail("unexpected '" + s_.substr(i_) + "'");
    return e;
  }

 private:
  static constexpr int kMaxDepth = 64;
  std::string s_;
  size_t i_ = 0;
  int depth_ = 0;
  [[noreturn]] void fail(const std::string& why) { throw std::invalid_argument(why); }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  static std::unique_ptr<Node> node(Node::Op op, std::unique_ptr<Node> a, std::unique_ptr<Node> b = {}) {
    auto e = std::make_unique<Node>();
    e->op = op;
    e->a = std::move(a);
    e->b = std::move(b);
    return e;
  }
  std::unique_ptr<Node> sum() {
    auto e = term();
    for (skip(); i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-'); skip()) {
      char c = s_[i_++];
      e = node(c == '+' ? Node::Add : Node::Sub, std::move(e), term());
    }
    return e;
  }
  std::unique_ptr<Node> term() {
    auto e = unary();
    for (skip(); i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '/'); skip()) {
      char c = s_[i_++];
      e = node(c == '*' ? Node::Mul : Node::Div, std::move(e), unary());
    }
    return e;
  }
  std::unique_ptr<Node> unary() {
    // Every nesting (a sign, a parenthesis) passes here: bounded, so that a
    // hostile registry fails with a message, not a stack overflow (found by
    // fuzzing: 8000 minus signs), and evaluation's recursion stays shallow.
    struct Depth {
      int& d;
      explicit Depth(int& depth) : d(++depth) {}
      ~Depth() { --d; }
    } depth(depth_);
    if (depth_ > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    skip();
    if (i_ < s_.size() && s_[i_] == '-') {
      ++i_;
      return node(Node::Neg, unary());
    }
    return atom();
  }
  std::unique_ptr<Node> atom() {
    skip();
    if (i_ >= s_.size()) fail("expression ends early");
    if (s_[i_] == '(') {
      ++i_;
      auto e = sum();
      skip();
      if (i_ >= s_.size() || s_[i_] != ')') fail("missing ')'");
      ++i_;
      return e;
    }
    auto e = std::make_unique<Node>();
    if (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.') {
      size_t used = 0;
      e->num = std::stod(s_.substr(i_), &used);
      i_ += used;
      return e;
    }
    size_t j = i_;
    while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_')) ++j;
    if (j == i_) fail("unexpected '" + s_.substr(i_) + "'");
    e->op = Node::Name;
    e->name = s_.substr(i_, j - i_);
    i_ = j;
    return e;
  }
};

MetricExpression::MetricExpression(const std::string& text) : root_(Parser(text).parse()) {}
MetricExpression::~MetricExpression() = default;
MetricExpression::MetricExpression(MetricExpression&&) noexcept = default;
MetricExpression& MetricExpression::operator=(MetricExpression&&) noexcept = default;

double MetricExpression::eval(const std::map<std::string, double>& metrics, std::string* missing) const {
  return root_->eval(metrics, missing);
}

std::set<std::string> MetricExpression::names() const {
  std::set<std::string> out;
  root_->names(&out);
  return out;
}

std::set<std::string> metric_names(const std::string& metric) { return MetricExpression(metric).names(); }

}  // namespace zl
