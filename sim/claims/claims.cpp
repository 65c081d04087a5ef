// Claims (SPEC §4): registry parsing, run selection, per-seed measurement,
// intervals, verdicts (plain and Holm) and the seeds an inconclusive row
// needs. The rules are stated once, in the header of ablations/claims.registry;
// this file implements them.
#include "sim/claims/claims.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/claims/claims_calibration.h"
#include "sim/claims/least_squares.h"
#include "sim/claims/operating_points.h"
#include "sim/claims/stats.h"
#include "sim/config.h"
#include "sim/h5.h"

namespace zl {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
constexpr int kMinSeeds = 3;  // fewer: no verdict (registry header)

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// A number as the registry or a config writes it; "inf"/"-inf" allowed. False if not one.
bool to_number(const std::string& text, double* out) {
  const std::string s = trim(text);
  if (s.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

// ---- metric expressions: names, numbers, + - * / ( ) -----------------------

struct Expr {
  enum Op { Num, Name, Add, Sub, Mul, Div, Neg } op = Num;
  double num = 0;
  std::string name;
  std::unique_ptr<Expr> a, b;

  double eval(const std::map<std::string, double>& m, std::string* missing) const {
    switch (op) {
      case Num: return num;
      case Name: {
        auto it = m.find(name);
        if (it == m.end() || !std::isfinite(it->second)) {
          if (missing && missing->empty()) *missing = name;
          return kNaN;
        }
        return it->second;
      }
      case Neg: return -a->eval(m, missing);
      case Add: return a->eval(m, missing) + b->eval(m, missing);
      case Sub: return a->eval(m, missing) - b->eval(m, missing);
      case Mul: return a->eval(m, missing) * b->eval(m, missing);
      case Div: {
        double d = b->eval(m, missing);
        return d == 0 ? kNaN : a->eval(m, missing) / d;
      }
    }
    return kNaN;
  }

  void names(std::set<std::string>* out) const {
    if (op == Name) out->insert(name);
    if (a) a->names(out);
    if (b) b->names(out);
  }
};

// Recursive descent: sum := term (('+'|'-') term)*, term := unary (('*'|'/') unary)*,
// unary := '-' unary | atom, atom := number | name | '(' sum ')'.
class ExprParser {
 public:
  explicit ExprParser(std::string s) : s_(std::move(s)) {}
  std::unique_ptr<Expr> parse() {
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
  static std::unique_ptr<Expr> node(Expr::Op op, std::unique_ptr<Expr> a, std::unique_ptr<Expr> b = {}) {
    auto e = std::make_unique<Expr>();
    e->op = op;
    e->a = std::move(a);
    e->b = std::move(b);
    return e;
  }
  std::unique_ptr<Expr> sum() {
    auto e = term();
    for (skip(); i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-'); skip()) {
      char c = s_[i_++];
      e = node(c == '+' ? Expr::Add : Expr::Sub, std::move(e), term());
    }
    return e;
  }
  std::unique_ptr<Expr> term() {
    auto e = unary();
    for (skip(); i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '/'); skip()) {
      char c = s_[i_++];
      e = node(c == '*' ? Expr::Mul : Expr::Div, std::move(e), unary());
    }
    return e;
  }
  std::unique_ptr<Expr> unary() {
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
      return node(Expr::Neg, unary());
    }
    return atom();
  }
  std::unique_ptr<Expr> atom() {
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
    auto e = std::make_unique<Expr>();
    if (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.') {
      size_t used = 0;
      e->num = std::stod(s_.substr(i_), &used);
      i_ += used;
      return e;
    }
    size_t j = i_;
    while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_')) ++j;
    if (j == i_) fail("unexpected '" + s_.substr(i_) + "'");
    e->op = Expr::Name;
    e->name = s_.substr(i_, j - i_);
    i_ = j;
    return e;
  }
};

// ---- selectors ---------------------------------------------------------------

struct Condition {
  std::string key;
  std::vector<std::string> values;  // any of them
};

std::vector<Condition> parse_selector(const std::string& text) {
  std::vector<Condition> out;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    size_t eq = tok.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == tok.size())
      throw std::invalid_argument("selector term '" + tok + "' is not key=value");
    Condition c{tok.substr(0, eq), {}};
    std::string rest = tok.substr(eq + 1);
    for (size_t p = 0; p <= rest.size();) {
      size_t bar = rest.find('|', p);
      if (bar == std::string::npos) bar = rest.size();
      c.values.push_back(rest.substr(p, bar - p));
      p = bar + 1;
    }
    out.push_back(std::move(c));
  }
  return out;
}

bool as_bool(const std::string& text, bool* out) {
  try {
    *out = parse_bool(text);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// Numbers compare as numbers (0.8 matches 0.80) and booleans by meaning (a
// selector's "on" matches the stored "true").
bool same_value(const std::string& have, const std::string& want) {
  if (have == want) return true;
  double a, b;
  if (to_number(have, &a) && to_number(want, &b)) return a == b;
  bool p, q;
  return as_bool(have, &p) && as_bool(want, &q) && p == q;
}

bool matches(const ClaimRun& run, const std::vector<Condition>& sel) {
  for (const auto& c : sel) {
    auto it = run.config.find(c.key);
    if (it == run.config.end()) return false;
    bool any = false;
    for (const auto& v : c.values) any = any || same_value(it->second, v);
    if (!any) return false;
  }
  return true;
}

// Why nothing matched, in words: "no runs with variant=sfvl" plus what is near.
std::string why_missing(const std::string& selector, const ClaimsInput& in) {
  auto sel = parse_selector(selector);
  std::string msg = "no complete runs with " + selector;
  for (const auto& c : sel) {
    bool key_known = false;
    for (const auto& r : in.runs) key_known = key_known || r.config.count(c.key);
    if (!in.runs.empty() && !key_known) return msg + " (no run has a config key " + c.key + ")";
  }
  int failed = 0;
  for (const auto& r : in.runs)
    if (r.status != "complete" && matches(r, sel)) ++failed;
  if (failed) msg += " (" + std::to_string(failed) + " such run(s) failed)";
  return msg;
}

// Complete runs matching a selector, grouped by seed.
std::map<int64_t, std::vector<const ClaimRun*>> select(const std::string& selector, const ClaimsInput& in) {
  auto sel = parse_selector(selector);
  std::map<int64_t, std::vector<const ClaimRun*>> by_seed;
  for (const auto& r : in.runs)
    if (r.status == "complete" && matches(r, sel)) by_seed[r.seed].push_back(&r);
  return by_seed;
}

std::string fmt(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A numeric cell as a selector compares it: integers without a decimal point.
std::string fmt_exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// ---- per-seed measurement ----------------------------------------------------

struct Measured {
  std::map<int64_t, double> per_seed;
  std::vector<const ClaimRun*> runs;  // every run the selectors matched
  std::string problem;  // a reason no value could be formed ("missing: ..." or "ambiguous: ...")
  std::string note;
};

// Exactly one run per seed, or an ambiguity naming the first offending seed.
bool one_per_seed(const std::map<int64_t, std::vector<const ClaimRun*>>& groups, const std::string& selector,
                  std::string* problem) {
  for (const auto& [seed, runs] : groups)
    if (runs.size() > 1) {
      *problem = "ambiguous: " + std::to_string(runs.size()) + " runs with seed=" + std::to_string(seed) + " match " +
                 selector + " (" + runs[0]->run_id + ", " + runs[1]->run_id +
                 "); name the key they differ in";
      return false;
    }
  return true;
}

double column_value(const Table::Column& col, size_t i) {
  if (auto* d = std::get_if<std::vector<double>>(&col)) return (*d)[i];
  if (auto* n = std::get_if<std::vector<int64_t>>(&col)) return static_cast<double>((*n)[i]);
  return kNaN;
}

Measured measure(const ClaimSpec& s, const ClaimsInput& in) {
  Measured out;
  const auto treat = select(s.treatment, in);
  if (treat.empty()) {
    out.problem = "missing: " + why_missing(s.treatment, in);
    return out;
  }
  // The control's runs, selected once: the comparison pairs them, and the row's operating point reads them.
  const auto ctrl = s.control.empty() ? std::map<int64_t, std::vector<const ClaimRun*>>() : select(s.control, in);
  for (const auto* side : {&treat, &ctrl})
    for (const auto& [seed, runs] : *side) out.runs.insert(out.runs.end(), runs.begin(), runs.end());
  std::unique_ptr<Expr> metric;
  if (!s.metric.empty()) metric = ExprParser(s.metric).parse();
  std::string missing_metric;

  if (s.comparison == "value" || s.comparison == "difference" || s.comparison == "relative") {
    if (!one_per_seed(treat, s.treatment, &out.problem)) return out;
    if (s.comparison != "value") {
      if (ctrl.empty()) {
        out.problem = "missing: " + why_missing(s.control, in);
        return out;
      }
      if (!one_per_seed(ctrl, s.control, &out.problem)) return out;
    }
    int unpaired = 0;
    for (const auto& [seed, runs] : treat) {
      double t = metric->eval(runs[0]->metrics, &missing_metric);
      if (s.comparison == "value") {
        if (std::isfinite(t)) out.per_seed[seed] = t;
        continue;
      }
      auto it = ctrl.find(seed);
      if (it == ctrl.end()) {
        ++unpaired;
        continue;
      }
      double c = metric->eval(it->second[0]->metrics, &missing_metric);
      double v = s.comparison == "difference" ? t - c : (c != 0 ? (t - c) / c : kNaN);
      if (std::isfinite(v)) out.per_seed[seed] = v;
    }
    if (unpaired) out.note = std::to_string(unpaired) + " treatment seed(s) without a control run";
  } else if (s.comparison == "argmin" || s.comparison == "breakpoint") {
    for (const auto& [seed, runs] : treat) {
      std::map<double, const ClaimRun*> by_value;
      for (const ClaimRun* r : runs) {
        auto it = r->config.find(s.over);
        double x;
        if (it == r->config.end() || !to_number(it->second, &x)) {
          out.problem = "missing: run " + r->run_id + " has no numeric config key " + s.over;
          return out;
        }
        if (!by_value.emplace(x, r).second) {
          out.problem = "ambiguous: two runs with seed=" + std::to_string(seed) + " and " + s.over + "=" + fmt(x) +
                        " match " + s.treatment + "; name the key they differ in";
          return out;
        }
      }
      if (s.comparison == "breakpoint") {
        // Where the metric's slope against the key changes: a hinge fit (least_squares.h).
        std::vector<double> xs, ys;
        for (const auto& [x, r] : by_value) {
          xs.push_back(x);
          ys.push_back(metric->eval(r->metrics, &missing_metric));
        }
        const HingeFit f = fit_hinge(xs, ys);
        if (std::isfinite(f.knot)) out.per_seed[seed] = f.knot;
        continue;
      }
      if (by_value.size() < 2) continue;  // nothing to choose between
      double best_x = kNaN, best = kInf;
      for (const auto& [x, r] : by_value) {
        double v = metric->eval(r->metrics, &missing_metric);
        if (std::isfinite(v) && v < best) best = v, best_x = x;
      }
      if (std::isfinite(best_x)) out.per_seed[seed] = best_x;
    }
    if (out.per_seed.empty() && missing_metric.empty())
      out.problem = "missing: fewer than " + std::string(s.comparison == "argmin" ? "2" : "4") + " values of " +
                    s.over + " per seed among runs with " + s.treatment;
  } else if (s.comparison == "trend") {
    if (!one_per_seed(treat, s.treatment, &out.problem)) return out;
    for (const auto& [seed, runs] : treat) {
      const Table* t = in.table ? in.table(runs[0]->run_id, s.table) : nullptr;
      if (t == nullptr) {
        out.problem = "missing: run " + runs[0]->run_id + " (" + s.treatment + ") has no table " + s.table;
        return out;
      }
      const Table::Column* xc = t->find(s.x);
      const Table::Column* yc = t->find(s.y);
      if (!xc || !yc) {
        out.problem = "missing: table " + s.table + " of run " + runs[0]->run_id + " has no column " +
                      (xc ? s.y : s.x);
        return out;
      }
      // `rows`: only the table rows whose columns match (a selector over columns).
      std::vector<std::pair<const Table::Column*, const Condition*>> filters;
      const std::vector<Condition> keep = parse_selector(s.rows);
      for (const Condition& c : keep) {
        const Table::Column* col = t->find(c.key);
        if (!col) {
          out.problem = "missing: table " + s.table + " of run " + runs[0]->run_id + " has no column " + c.key;
          return out;
        }
        filters.emplace_back(col, &c);
      }
      auto kept = [&](size_t i) {
        for (const auto& [col, c] : filters) {
          const auto* str = std::get_if<std::vector<std::string>>(col);
          const std::string have = str ? (*str)[i] : fmt_exact(column_value(*col, i));
          bool any = false;
          for (const auto& v : c->values) any = any || same_value(have, v);
          if (!any) return false;
        }
        return true;
      };
      std::vector<double> xs, ys;
      for (size_t i = 0; i < t->rows(); ++i) {
        if (!kept(i)) continue;
        xs.push_back(column_value(*xc, i));
        double y = column_value(*yc, i);
        ys.push_back(y);
      }
      if (xs.size() < 2) continue;
      LineFit f = fit_line(xs, ys);
      if (!std::isfinite(f.slope)) continue;
      double lo_x = *std::min_element(xs.begin(), xs.end()), hi_x = *std::max_element(xs.begin(), xs.end());
      double y0 = std::clamp(f.intercept + f.slope * lo_x, 0.0, 1.0);
      double y1 = std::clamp(f.intercept + f.slope * hi_x, 0.0, 1.0);
      if (y0 > 0) out.per_seed[seed] = (y1 - y0) / y0;
    }
    if (out.per_seed.empty()) out.problem = "missing: no run's " + s.table + " spans two values of " + s.x;
  }
  if (out.per_seed.empty() && out.problem.empty())
    out.problem = "missing: " + (missing_metric.empty() ? std::string("no finite value of ") + s.metric
                                                        : "metric " + missing_metric + " not measured") +
                  " in runs with " + s.treatment;
  return out;
}

const std::set<std::string> kComparisons = {"value", "difference", "relative", "argmin", "breakpoint", "trend"};

void finish_spec(ClaimSpec& s, const std::map<std::string, std::string>& kv, const std::string& where) {
  auto need = [&](const char* key) {
    auto it = kv.find(key);
    if (it == kv.end() || it->second.empty())
      throw std::runtime_error(where + ": claim " + s.id + " has no " + key);
    return it->second;
  };
  auto get = [&](const char* key) {
    auto it = kv.find(key);
    return it == kv.end() ? std::string() : it->second;
  };
  s.source = need("source");
  s.claim = need("claim");
  s.comparison = need("comparison");
  if (!kComparisons.count(s.comparison))
    throw std::runtime_error(where + ": claim " + s.id + ": comparison '" + s.comparison +
                             "' is not one of value, difference, relative, argmin, breakpoint, trend");
  s.treatment = need("treatment");
  s.control = get("control");
  s.untestable = get("untestable");
  s.by_construction = get("by_construction");
  if (s.comparison == "difference" || s.comparison == "relative") s.control = need("control");
  if (s.comparison == "argmin" || s.comparison == "breakpoint") s.over = need("over");
  if (s.comparison == "trend") {
    s.table = need("table");
    s.x = need("x");
    s.y = need("y");
    s.rows = get("rows");
  } else {
    s.metric = need("metric");
    try {
      ExprParser(s.metric).parse();
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": claim " + s.id + ": metric '" + s.metric + "': " + e.what());
    }
  }
  for (const char* key : {"treatment", "control", "rows"}) {
    try {
      parse_selector(get(key));
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": claim " + s.id + ": " + key + ": " + e.what());
    }
  }
  // The claimed region: `region = lo .. hi`, or claimed ± tolerance (or × / ÷ factor).
  const std::string region = get("region"), claimed = get("claimed"), tol = get("tolerance");
  if (!region.empty()) {
    size_t dots = region.find("..");
    if (dots == std::string::npos || !to_number(region.substr(0, dots), &s.region_lo) ||
        !to_number(region.substr(dots + 2), &s.region_hi) || !(s.region_lo < s.region_hi))
      throw std::runtime_error(where + ": claim " + s.id + ": region '" + region + "' is not 'lo .. hi' with lo < hi");
    s.claimed_text = claimed.empty() ? region : claimed + " (" + region + ")";
  } else {
    double c, t;
    if (!to_number(claimed, &c))
      throw std::runtime_error(where + ": claim " + s.id + ": claimed '" + claimed + "' is not a number (or give region)");
    const std::string tt = trim(tol);
    if (!tt.empty() && tt[0] == 'x') {
      if (!to_number(tt.substr(1), &t) || t <= 1 || c <= 0)
        throw std::runtime_error(where + ": claim " + s.id + ": tolerance '" + tol +
                                 "' needs a factor > 1 and a positive claimed value");
      s.region_lo = c / t;
      s.region_hi = c * t;
      s.claimed_text = claimed + " (x/" + trim(tt.substr(1)) + ")";
    } else {
      if (!to_number(tt, &t) || t < 0)
        throw std::runtime_error(where + ": claim " + s.id + ": tolerance '" + tol + "' is not a number >= 0");
      s.region_lo = c - t;
      s.region_hi = c + t;
      s.claimed_text = claimed + " +- " + tt;
    }
  }
}

// "known.h2o", "known_metric.h2o", "projected.h2o" and "served.h2o" -> "h2o"; "" for any other key.
std::string known_key_name(const std::string& key) {
  for (const char* prefix : {"known.", "known_metric.", "projected.", "served."}) {
    const std::string p = prefix;
    if (key.rfind(p, 0) != 0) continue;
    const std::string name = key.substr(p.size());
    const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '_' || c == '-';
    });
    return ok ? name : std::string();
  }
  return "";
}

// A claim's projected (or served) row: its runs and comparison on a
// projected metric (or on one of the real server here).
ClaimSpec projected_spec(const ClaimSpec& claim, const std::string& key, const std::string& metric,
                         const std::string& where) {
  if (claim.comparison == "trend" || claim.comparison == "argmin" || claim.comparison == "breakpoint")
    throw std::runtime_error(where + ": claim " + claim.id + ": " + key + " on a " + claim.comparison +
                             " claim (a projected row reads one metric per run)");
  ClaimSpec k = claim;
  k.known_method = known_key_name(key);
  k.of_claim = claim.id;
  k.id = claim.id + "@" + k.known_method;
  k.projected = true;
  k.served = key.rfind("served.", 0) == 0;
  k.metric = metric;
  k.untestable.clear();  // what cannot be measured here may still be projected
  try {
    ExprParser(k.metric).parse();
  } catch (const std::exception& e) {
    throw std::runtime_error(where + ": claim " + claim.id + ": " + key + " '" + metric + "': " + e.what());
  }
  return k;
}

// The rows of a claim's known methods: the claim with the method's runs as
// the treatment (and its own metric where the method names the same
// quantity differently), in the order of their names.
std::vector<ClaimSpec> known_specs(const ClaimSpec& claim, const std::map<std::string, std::string>& kv,
                                   const std::string& where) {
  std::vector<ClaimSpec> out;
  for (const auto& [key, value] : kv) {
    if (key.rfind("known_metric.", 0) == 0 && !kv.count("known." + known_key_name(key)))
      throw std::runtime_error(where + ": claim " + claim.id + ": " + key + " without known." + known_key_name(key));
    if (key.rfind("projected.", 0) == 0 || key.rfind("served.", 0) == 0) {
      out.push_back(projected_spec(claim, key, value, where));
      continue;
    }
    if (key.rfind("known.", 0) != 0) continue;
    ClaimSpec k = claim;
    k.known_method = known_key_name(key);
    k.of_claim = claim.id;
    k.id = claim.id + "@" + k.known_method;
    if (value.empty()) throw std::runtime_error(where + ": claim " + claim.id + ": " + key + " has no run selector");
    k.treatment = value;
    try {
      parse_selector(value);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": claim " + claim.id + ": " + key + ": " + e.what());
    }
    auto metric = kv.find("known_metric." + k.known_method);
    if (metric != kv.end()) {
      if (claim.comparison == "trend")
        throw std::runtime_error(where + ": claim " + claim.id + ": known_metric." + k.known_method +
                                 " on a trend claim (it reads a table, not a metric)");
      k.metric = metric->second;
      try {
        ExprParser(k.metric).parse();
      } catch (const std::exception& e) {
        throw std::runtime_error(where + ": claim " + claim.id + ": known_metric." + k.known_method + " '" +
                                 k.metric + "': " + e.what());
      }
    }
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> parse_config_ini(const std::string& ini) {
  std::map<std::string, std::string> out;
  std::istringstream in(ini);
  std::string line, section;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim(line.substr(1, line.size() - 2));
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(line.substr(0, eq));
    out[section.empty() ? key : section + "." + key] = trim(line.substr(eq + 1));
  }
  return out;
}

std::map<std::string, std::string> setting_labels(const std::vector<ClaimRun>& runs) {
  std::map<std::string, std::vector<const ClaimRun*>> by_variant;
  for (const auto& r : runs) {
    auto it = r.config.find("variant");
    by_variant[it == r.config.end() ? "?" : it->second].push_back(&r);
  }
  std::map<std::string, std::string> labels;
  for (const auto& [variant, members] : by_variant) {
    std::set<std::string> keys, varying, solved;
    for (const ClaimRun* r : members) {
      for (const auto& kv : r->config) keys.insert(kv.first);
      // A knob solved for an operating point (sim/operating_point.h) differs by
      // seed as an outcome, not a setting: the target names the setting. The
      // target is the variant's own or, for a knob that shapes training, that
      // of the family it trains as (oet decodes sfcl's solved width).
      for (const std::string& owner : {variant, trained_family(variant)}) {
        auto target = r->config.find("calibrate." + owner + ".target");
        auto knob = r->config.find("calibrate." + owner + ".knob");
        if (target != r->config.end() && knob != r->config.end() && std::atof(target->second.c_str()) != 0)
          solved.insert(knob->second);
      }
    }
    for (const std::string& k : keys) {
      if (k == "seed" || k == "variant" || k.rfind("output.", 0) == 0 || solved.count(k)) continue;
      std::set<std::string> values;
      for (const ClaimRun* r : members) {
        auto it = r->config.find(k);
        values.insert(it == r->config.end() ? "" : it->second);
      }
      if (values.size() > 1) varying.insert(k);
    }
    for (const ClaimRun* r : members) {
      std::string label = variant;
      for (const std::string& k : varying) {
        auto it = r->config.find(k);
        label += " " + k + "=" + (it == r->config.end() ? "" : it->second);
      }
      labels[r->run_id] = label;
    }
  }
  return labels;
}

std::vector<ClaimSpec> parse_registry(const std::string& text, const std::string& file) {
  static const std::set<std::string> kKeys = {"source", "claim",   "metric",    "comparison", "treatment",
                                              "control", "over",   "table",     "x",          "y",
                                              "claimed", "tolerance", "region", "untestable",
                                              "by_construction", "rows"};
  std::vector<ClaimSpec> specs;
  std::vector<std::map<std::string, std::string>> values;
  std::set<std::string> ids;
  std::istringstream in(text);
  std::string raw;
  int n = 0;
  while (std::getline(in, raw)) {
    ++n;
    const std::string line = trim(raw);
    const std::string where = file + ":" + std::to_string(n);
    if (line.empty() || line[0] == '#') continue;
    if (line.front() == '[') {
      if (line.back() != ']' || line.rfind("[claim ", 0) != 0)
        throw std::runtime_error(where + ": expected a section [claim ID], got '" + line + "'");
      ClaimSpec s;
      s.id = trim(line.substr(7, line.size() - 8));
      if (s.id.empty() || s.id.find_first_of(" \t") != std::string::npos)
        throw std::runtime_error(where + ": bad claim id '" + s.id + "'");
      if (!ids.insert(s.id).second) throw std::runtime_error(where + ": claim " + s.id + " is defined twice");
      s.file = file;
      s.line = n;
      specs.push_back(s);
      values.emplace_back();
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) throw std::runtime_error(where + ": expected key = value, got '" + line + "'");
    const std::string key = trim(line.substr(0, eq));
    if (specs.empty()) throw std::runtime_error(where + ": key " + key + " before any [claim ID] section");
    if (!kKeys.count(key) && known_key_name(key).empty())
      throw std::runtime_error(where + ": claim " + specs.back().id + ": unknown key " + key);
    if (!values.back().emplace(key, trim(line.substr(eq + 1))).second)
      throw std::runtime_error(where + ": claim " + specs.back().id + ": key " + key + " given twice");
  }
  if (specs.empty()) throw std::runtime_error(file + ": no [claim ID] sections");
  std::vector<ClaimSpec> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string where = file + ":" + std::to_string(specs[i].line);
    finish_spec(specs[i], values[i], where);
    out.push_back(specs[i]);
    for (ClaimSpec& k : known_specs(specs[i], values[i], where)) out.push_back(std::move(k));
  }
  return out;
}

std::set<std::string> metric_names(const std::string& metric) {
  std::set<std::string> out;
  ExprParser(metric).parse()->names(&out);
  return out;
}

std::vector<ClaimSpec> load_registry(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("claims registry '" + path + "' cannot be read (give one with --registry PATH)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_registry(ss.str(), path);
}

namespace {

// A cell of an /index row. A damaged or foreign index may lack the column or
// hold it with another type: an error naming the file, not std::out_of_range.
template <class Cells>
const typename Cells::mapped_type& index_cell(const Cells& row, const std::string& column, const std::string& file) {
  auto it = row.find(column);
  if (it == row.end())
    throw std::runtime_error("'" + file + "': /index has no column '" + column + "' of the expected type");
  return it->second;
}

// read_index gives numbers as double, so an int64 seed near either end of its
// range arrives as ±2^63, just outside it, and a damaged index may hold any
// float there: casting those is undefined, so they saturate.
int64_t index_seed(const IndexRow& row, const std::string& file) {
  const double seed = index_cell(row.numbers, "seed", file);
  if (std::isnan(seed)) throw std::runtime_error("'" + file + "': /index has a seed that is not a number");
  if (seed >= 0x1p63) return std::numeric_limits<int64_t>::max();
  if (seed < -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(seed);
}

}  // namespace

ClaimsInput load_claims_input(const std::string& results_file) {
  ClaimsInput in;
  for (const IndexRow& row : read_index(results_file)) {  // checks schema_version
    ClaimRun r;
    r.run_id = index_cell(row.strings, "run_id", results_file);
    r.status = index_cell(row.strings, "status", results_file);
    r.seed = index_seed(row, results_file);
    for (const auto& [k, v] : row.numbers)
      if (k != "seed") r.metrics[k] = v;
    in.runs.push_back(std::move(r));
  }
  h5::File file = h5::File::open(results_file, false);
  for (ClaimRun& r : in.runs) {
    const std::string group = "runs/" + r.run_id;
    if (file.kind(group) != h5::Kind::group)
      throw std::runtime_error("'" + results_file + "' has no group /" + group);
    r.config = parse_config_ini(file.group(group).attr_string("config"));
  }
  // Tables are read when a claim asks, and kept for the next claim.
  auto cache = std::make_shared<std::map<std::string, std::unique_ptr<Table>>>();
  in.table = [cache, results_file](const std::string& run_id, const std::string& name) -> const Table* {
    const std::string path = "runs/" + run_id + "/" + name;
    auto it = cache->find(path);
    if (it == cache->end()) {
      h5::File f = h5::File::open(results_file, false);
      std::unique_ptr<Table> t;
      if (f.kind(path) == h5::Kind::dataset) t = std::make_unique<Table>(f.dataset(path).read_table());
      it = cache->emplace(path, std::move(t)).first;
    }
    return it->second.get();
  };
  return in;
}

Judgement judge_estimate(const MeanEstimate& e, CiMethod m, double region_lo, double region_hi, double level) {
  Judgement j;
  if (!e.has(m)) {
    j.verdict = "inconclusive";
    return j;
  }
  j.p_support = std::max(e.p_above(m, region_lo), e.p_below(m, region_hi));
  j.p_refute = std::min(e.p_below(m, region_lo), e.p_above(m, region_hi));
  const double alpha = (1 - level) / 2;
  j.verdict = j.p_support < alpha ? "supported" : j.p_refute < alpha ? "refuted" : "inconclusive";
  return j;
}

namespace {

bool judged_from_data(const ClaimResult& r) {
  return r.spec->untestable.empty() && r.spec->by_construction.empty() && !is_known_row(r) && r.seeds >= kMinSeeds &&
         (r.verdict == "supported" || r.verdict == "refuted" || r.verdict == "inconclusive");
}

// The region boundary nearest the mean (a finite one): the interval must
// exclude it for any verdict.
double nearest_boundary(const ClaimSpec& s, double mean) {
  if (std::isinf(s.region_lo)) return s.region_hi;
  if (std::isinf(s.region_hi)) return s.region_lo;
  return std::abs(mean - s.region_lo) < std::abs(mean - s.region_hi) ? s.region_lo : s.region_hi;
}

}  // namespace

std::vector<ClaimResult> evaluate_claims(const std::vector<ClaimSpec>& specs, const ClaimsInput& input,
                                         const ClaimsOptions& opt) {
  std::vector<ClaimResult> out;
  std::vector<Measured> measured;
  for (const ClaimSpec& s : specs) {
    ClaimResult r;
    r.spec = &s;
    r.value = r.lo = r.hi = kNaN;
    measured.push_back(measure(s, input));
    if (measured.back().problem.empty()) r.per_seed = measured.back().per_seed;
    out.push_back(std::move(r));
  }

  // The method: forced, or the one whose coverage at each row's n is nearest
  // the level on synthetic studies shaped like this file's values.
  std::set<int> ns;
  for (const auto& r : out)
    if (r.per_seed.size() >= 2) ns.insert(static_cast<int>(r.per_seed.size()));
  Calibration cal;
  if (opt.method == "auto")
    cal = calibrate(out, std::vector<int>(ns.begin(), ns.end()), opt.level, opt.calibration_studies, false);

  for (size_t i = 0; i < out.size(); ++i) {
    ClaimResult& r = out[i];
    const ClaimSpec& s = *r.spec;
    const Measured& m = measured[i];
    auto add_note = [&](const std::string& t) { r.note += (r.note.empty() ? "" : "; ") + t; };
    if (!m.problem.empty()) {
      r.verdict = m.problem.rfind("missing", 0) == 0 ? "missing" : "inconclusive";
      r.note = m.problem;
    } else {
      std::vector<double> v;
      for (const auto& [seed, x] : m.per_seed) v.push_back(x);
      MeanEstimate e(v);
      r.seeds = e.n();
      r.method = opt.method == "auto" ? cal.best(e.n()) : parse_method(opt.method);
      r.t = e.interval(CiMethod::t, opt.level);
      r.percentile = e.interval(CiMethod::percentile, opt.level);
      r.bca = e.interval(CiMethod::bca, opt.level);
      const Interval ci = e.interval(r.method, opt.level);
      r.value = e.mean();
      r.sd = e.sd();
      r.lo = ci.lo;
      r.hi = ci.hi;
      r.note = m.note;
      const Judgement j = judge_estimate(e, r.method, s.region_lo, s.region_hi, opt.level);
      r.p_support = j.p_support;
      r.p_refute = j.p_refute;
      if (e.n() < kMinSeeds) {
        r.verdict = "inconclusive";
        add_note(std::to_string(e.n()) + " seed(s); a verdict needs >= " + std::to_string(kMinSeeds));
      } else {
        r.verdict = j.verdict;
        if (r.verdict == "inconclusive")
          add_note("interval straddles the claimed region [" + fmt(s.region_lo) + ", " + fmt(s.region_hi) + "]");
      }
      if (r.verdict == "inconclusive" && e.n() >= 2)
        r.seeds_needed = std::max<int64_t>(e.n() + 1, seeds_needed(r.value - nearest_boundary(s, r.value), e.sd(),
                                                                   opt.level, opt.power));
    }
    if (!s.untestable.empty()) {
      r.note = "untestable: " + s.untestable + (r.verdict == "missing" ? "" : "; would be " + r.verdict) +
               (r.note.empty() ? "" : "; " + r.note);
      r.verdict = "untestable";
      r.seeds_needed = 0;
    }
    if (is_known_row(r) || !s.by_construction.empty()) r.seeds_needed = 0;
    r.operating_point = describe_operating_points(m.runs);
  }
  std::vector<ClaimResult> kept;
  for (size_t i = 0; i < out.size(); ++i)
    if (!is_known_row(out[i]) || measured[i].problem.rfind("missing", 0) != 0)
      kept.push_back(std::move(out[i]));
  apply_holm(kept, opt.level);
  return kept;
}

std::vector<std::string> known_without_runs(const std::vector<ClaimSpec>& specs,
                                            const std::vector<ClaimResult>& results) {
  std::set<const ClaimSpec*> present;
  for (const auto& r : results) present.insert(r.spec);
  std::vector<std::string> out;
  for (const auto& s : specs)
    if (!s.known_method.empty() && !s.projected && !present.count(&s)) out.push_back(s.id + " (" + s.treatment + ")");
  return out;
}

void apply_holm(std::vector<ClaimResult>& results, double level) {
  std::vector<double> p(results.size(), kNaN);
  for (size_t i = 0; i < results.size(); ++i)
    if (judged_from_data(results[i])) p[i] = std::min(results[i].p_support, results[i].p_refute);
  const std::vector<double> adjusted = holm_adjust(p);
  const double alpha = (1 - level) / 2;
  for (size_t i = 0; i < results.size(); ++i) {
    ClaimResult& r = results[i];
    if (std::isnan(p[i])) {
      r.verdict_holm = is_known_row(r)                      ? ""
                       : !r.spec->by_construction.empty() ? "by construction"
                                                          : r.verdict;
      continue;
    }
    const bool decided = adjusted[i] < alpha;
    r.verdict_holm = !decided ? "inconclusive" : r.p_support <= r.p_refute ? "supported" : "refuted";
  }
}

Table claim_seeds_table(const std::vector<ClaimResult>& results) {
  std::vector<std::string> id;
  std::vector<int64_t> seed;
  std::vector<double> value;
  for (const auto& r : results)
    for (const auto& [s, v] : r.per_seed) {
      id.push_back(r.spec->id);
      seed.push_back(s);
      value.push_back(v);
    }
  Table t;
  t.add("id", id);
  t.add("seed", seed);
  t.add("value", value);
  return t;
}

std::string format_plan(const std::vector<ClaimResult>& results, const std::string& study, double power) {
  // Beyond this many seeds more seeds is not the answer: a larger effect (a bigger model, a longer run) is.
  constexpr int64_t kPlanCap = 64;
  std::ostringstream out;
  char line[256];
  std::vector<const ClaimResult*> rows;
  for (const auto& r : results)
    if (r.seeds_needed > 0) rows.push_back(&r);
  if (rows.empty()) return "no inconclusive claim with 2 or more seeds: nothing to plan\n";
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ClaimResult* a, const ClaimResult* b) { return a->seeds_needed < b->seeds_needed; });
  std::snprintf(line, sizeof line, "%-28s %6s %7s  %s\n", "inconclusive claim", "seeds", "needed",
                "boundary to exclude (observed mean, sd over seeds)");
  out << line;
  int64_t most = 0;
  for (const ClaimResult* r : rows) {
    std::snprintf(line, sizeof line, "%-28s %6d %7lld  %s (%s, %s)\n", r->spec->id.c_str(), r->seeds,
                  static_cast<long long>(r->seeds_needed), fmt(nearest_boundary(*r->spec, r->value)).c_str(),
                  fmt(r->value).c_str(), fmt(r->sd).c_str());
    out << line;
    if (r->seeds_needed <= kPlanCap) most = std::max(most, r->seeds_needed);
  }
  std::snprintf(line, sizeof line,
                "seeds needed: a power estimate (%.0f%% chance that a t interval excludes the boundary if the\n"
                "observed mean and spread were the truth), not a promise.\n",
                100 * power);
  out << line;
  // Issue 29 item 7: a per-fact row has many units per seed, but the t
  // interval above is over seeds, so only the spread it plans with shrinks.
  out << "the unit is the seed on every row: a per-fact row (ID/per-fact) pools a run's judged statements,\n"
         "which lowers the sampling noise in each seed's value (not the spread training adds between seeds);\n"
         "its interval still counts seeds.\n";
  if (most == 0) {
    out << "every row needs more than " << kPlanCap
        << " seeds: decide them with a larger effect (a bigger model, longer training), not more seeds\n";
    return out.str();
  }
  std::string seeds = "1";
  for (int64_t s = 2; s <= most; ++s) seeds += "," + std::to_string(s);
  out << "\nto run " << most << " seeds (complete runs are kept; only the new seeds run):\n  zerolayer ablate " << study
      << " --seed " << seeds << "\n";
  out << "on a cluster, one slice per task, then merge:\n  zerolayer ablate " << study << " --seed " << seeds
      << " --shard i/N   # i = 0..N-1\n  zerolayer merge OUTPUT_DIR\n";
  for (const ClaimResult* r : rows)
    if (r->seeds_needed > kPlanCap)
      out << r->spec->id << " would need " << r->seeds_needed << " seeds: beyond " << kPlanCap
          << ", decide it with a larger effect (a bigger model, longer training), not more seeds\n";
  return out.str();
}

Table claims_table(const std::vector<ClaimResult>& results) {
  std::vector<std::string> id, source, claim, metric, comparison, treatment, control, claimed, verdict, note, method,
      verdict_holm, known_method, projection, of_claim, by_construction, operating_point;
  std::vector<double> lo_r, hi_r, value, lo, hi, t_lo, t_hi, boot_lo, boot_hi, bca_lo, bca_hi, p_support, p_refute;
  std::vector<int64_t> seeds, needed;
  for (const auto& r : results) {
    const ClaimSpec& s = *r.spec;
    id.push_back(s.id);
    source.push_back(s.source);
    claim.push_back(s.claim);
    metric.push_back(s.comparison == "trend"
                         ? s.y + " ~ " + s.x + " in " + s.table + (s.rows.empty() ? "" : " where " + s.rows)
                         : s.metric);
    comparison.push_back(s.comparison + (s.over.empty() ? "" : " over " + s.over));
    treatment.push_back(s.treatment);
    control.push_back(s.control);
    claimed.push_back(s.claimed_text);
    lo_r.push_back(s.region_lo);
    hi_r.push_back(s.region_hi);
    value.push_back(r.value);
    lo.push_back(r.lo);
    hi.push_back(r.hi);
    seeds.push_back(r.seeds);
    verdict.push_back(r.verdict);
    note.push_back(r.note);
    method.push_back(r.seeds > 0 ? method_name(r.method) : "");
    t_lo.push_back(r.seeds > 0 ? r.t.lo : kNaN);
    t_hi.push_back(r.seeds > 0 ? r.t.hi : kNaN);
    boot_lo.push_back(r.seeds > 0 ? r.percentile.lo : kNaN);
    boot_hi.push_back(r.seeds > 0 ? r.percentile.hi : kNaN);
    bca_lo.push_back(r.seeds > 0 ? r.bca.lo : kNaN);
    bca_hi.push_back(r.seeds > 0 ? r.bca.hi : kNaN);
    p_support.push_back(r.p_support);
    p_refute.push_back(r.p_refute);
    verdict_holm.push_back(r.verdict_holm);
    needed.push_back(r.seeds_needed);
    known_method.push_back(s.projected ? "" : s.known_method);
    projection.push_back(s.projected ? s.known_method : "");
    of_claim.push_back(s.of_claim);
    by_construction.push_back(s.by_construction);
    operating_point.push_back(r.operating_point);
  }
  Table t;
  t.add("id", id);
  t.add("source", source);
  t.add("claim", claim);
  t.add("metric", metric);
  t.add("comparison", comparison);
  t.add("treatment", treatment);
  t.add("control", control);
  t.add("claimed", claimed);
  t.add("region_lo", lo_r);
  t.add("region_hi", hi_r);
  t.add("value", value);
  t.add("ci_lo", lo);
  t.add("ci_hi", hi);
  t.add("seeds", seeds);
  t.add("verdict", verdict);
  t.add("note", note);
  t.add("method", method);
  t.add("t_lo", t_lo);
  t.add("t_hi", t_hi);
  t.add("boot_lo", boot_lo);
  t.add("boot_hi", boot_hi);
  t.add("bca_lo", bca_lo);
  t.add("bca_hi", bca_hi);
  t.add("p_support", p_support);
  t.add("p_refute", p_refute);
  t.add("verdict_holm", verdict_holm);
  t.add("seeds_needed", needed);
  t.add("known_method", known_method);
  t.add("projection", projection);  // a projected row's name ("" for measured rows)
  t.add("of_claim", of_claim);
  t.add("by_construction", by_construction);  // why the value is fixed by the design ("": a finding)
  t.add("operating_point", operating_point);  // the calibrated targets of its runs (sim/operating_point.h)
  return t;
}

namespace {

// A known method's row, under its claim: where the method lies against the
// claimed region, said as a place rather than a verdict.
std::string format_known(const ClaimResult& r) {
  const ClaimSpec& s = *r.spec;
  std::string m = std::isnan(r.value) ? "-"
                  : std::isnan(r.lo)  ? fmt(r.value)
                                      : fmt(r.value) + " [" + fmt(r.lo) + ", " + fmt(r.hi) + "]";
  std::string n = r.seeds > 0 ? std::to_string(r.seeds) + ", " + method_name(r.method) : "-";
  const std::string where = r.verdict == "supported"      ? "inside the region"
                            : r.verdict == "refuted"      ? "outside the region"
                            : r.verdict == "inconclusive" ? "straddles the region"
                                                          : r.verdict;
  char line[512];
  std::snprintf(line, sizeof line, "  %-26s %-30s %-22s %-12s %s\n", ("@" + s.known_method).c_str(), m.c_str(),
                s.served ? "(served here)" : s.projected ? "(projected)" : "(known method)", n.c_str(), where.c_str());
  std::string out = line;
  const std::string how = s.comparison == "trend" ? s.y + " ~ " + s.x + " (" + s.table + ")" : s.metric;
  out += "    " + how + ", " + s.comparison + ": " + s.treatment + (s.control.empty() ? "" : " vs " + s.control) + "\n";
  if (!r.note.empty()) out += "    " + r.note + "\n";
  return out;
}

}  // namespace

std::string format_value(double v) { return fmt(v); }

std::string format_claims(const std::vector<ClaimResult>& results, bool holm) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-28s %-30s %-22s %-12s %s%s\n", "claim", "measured [95% CI]", "claimed",
                "n, method", "verdict", holm ? "        Holm" : "");
  out << line;
  // Rows true by construction (SPEC §9.5) come last, apart, with their known
  // methods' rows: manipulation checks, not findings.
  std::vector<const ClaimResult*> order, apart;
  for (const auto& r : results) (r.spec->by_construction.empty() ? order : apart).push_back(&r);
  if (!apart.empty()) order.push_back(nullptr);  // the heading of the rows apart
  order.insert(order.end(), apart.begin(), apart.end());
  for (const ClaimResult* row : order) {
    if (!row) {
      out << "\nby construction (a value fixed by the design or enforced by training: a manipulation check, "
             "outside the Holm family)\n";
      continue;
    }
    const ClaimResult& r = *row;
    const ClaimSpec& s = *r.spec;
    if (is_known_row(r)) {
      out << format_known(r);
      continue;
    }
    std::string m = std::isnan(r.value) ? "-"
                    : std::isnan(r.lo)  ? fmt(r.value)
                                        : fmt(r.value) + " [" + fmt(r.lo) + ", " + fmt(r.hi) + "]";
    std::string n = r.seeds > 0 ? std::to_string(r.seeds) + ", " + method_name(r.method) : "-";
    std::string v = r.verdict;
    if (holm) v.resize(std::max<size_t>(v.size(), 13), ' ');
    std::snprintf(line, sizeof line, "%-28s %-30s %-22s %-12s %s%s\n", s.id.c_str(), m.c_str(),
                  s.claimed_text.c_str(), n.c_str(), v.c_str(), holm ? r.verdict_holm.c_str() : "");
    out << line;
    std::string how = s.comparison == "trend"
                          ? s.y + " ~ " + s.x + " (" + s.table + (s.rows.empty() ? "" : " where " + s.rows) + ")"
                          : s.metric;
    how += ", " + s.comparison + (s.over.empty() ? "" : " over " + s.over) + ": " + s.treatment +
           (s.control.empty() ? "" : " vs " + s.control);
    out << "    " << s.source << ": " << s.claim << "\n    " << how << "\n";
    if (r.seeds >= 2 && r.method != CiMethod::percentile && !std::isnan(r.percentile.lo))
      out << "    percentile bootstrap [" << fmt(r.percentile.lo) << ", " << fmt(r.percentile.hi) << "]\n";
    if (r.seeds_needed > 0)
      out << "    seeds needed (power estimate, 80%): " << r.seeds_needed << "\n";
    if (!s.by_construction.empty()) out << "    by construction: " << s.by_construction << "\n";
    out << "    operating point: " << (r.operating_point.empty() ? "as configured" : r.operating_point) << "\n";
    if (!r.note.empty()) out << "    " << r.note << "\n";
  }
  return out.str();
}

}  // namespace zl
