#include "sim/serving/workload.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

namespace zl {

namespace {

// Numbers in messages as the user would have typed them: 0, 2.5, inf.
std::string show(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

void check_options(const ArrivalOptions& opt) {
  // `!(x > 0)` so that NaN is refused too.
  if (!(opt.rate > 0)) {
    throw std::invalid_argument("serve.rate must be > 0 (requests per second), got " + show(opt.rate));
  }
  if (!(opt.burstiness > 0)) throw std::invalid_argument("serve.burstiness must be > 0, got " + show(opt.burstiness));
  // Gamma with an infinite shape is undefined, not the evenly spaced limit.
  if (std::isinf(opt.burstiness)) throw std::invalid_argument("serve.burstiness must be finite, got inf");
  if (opt.requests < 1) throw std::invalid_argument("serve.requests must be >= 1, got " + std::to_string(opt.requests));
}

}  // namespace

std::vector<int64_t> arrival_times_ns(const ArrivalOptions& opt) {
  check_options(opt);
  std::vector<int64_t> times(static_cast<size_t>(opt.requests), 0);
  if (std::isinf(opt.rate)) return times;  // vLLM sends everything at once: no gaps drawn
  // Mean gap shape · scale = 1 / rate whatever the burstiness; the shape only
  // sets the spread (coefficient of variation 1 / sqrt(shape)).
  std::mt19937_64 rng(opt.seed);
  std::gamma_distribution<double> gap_s(opt.burstiness, 1.0 / (opt.rate * opt.burstiness));
  double t_s = 0;
  for (size_t i = 1; i < times.size(); ++i) {
    t_s += gap_s(rng);
    // Summed in seconds and rounded once per request, so rounding never accumulates.
    const double ns = std::round(t_s * 1e9);
    if (!(ns < 9.2e18)) {
      throw std::invalid_argument("serve.rate " + show(opt.rate) + " spreads " + std::to_string(opt.requests) +
                                  " requests beyond what int64 ns hold");
    }
    times[i] = static_cast<int64_t>(ns);
  }
  return times;
}

std::vector<ServeRequest> synthetic_workload(const std::vector<std::vector<int32_t>>& prompts, int64_t output_len,
                                             const ArrivalOptions& opt) {
  if (prompts.empty()) throw std::invalid_argument("serve: no prompts to send");
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) throw std::invalid_argument("serve: prompt " + std::to_string(i) + " is empty");
  }
  if (output_len < 1) throw std::invalid_argument("serve.output_len must be >= 1, got " + std::to_string(output_len));
  const std::vector<int64_t> times = arrival_times_ns(opt);
  std::vector<ServeRequest> requests(times.size());
  for (size_t i = 0; i < times.size(); ++i) {
    requests[i].id = static_cast<int64_t>(i);
    requests[i].arrival_ns = times[i];
    requests[i].prompt = prompts[i % prompts.size()];
    requests[i].output_len = output_len;
  }
  return requests;
}

// ---- Trace files -------------------------------------------------------------

namespace {

struct CsvRecord {
  std::vector<std::string> fields;
  int64_t line = 0;  // the physical line it starts on, 1-based
};

// RFC 4180: fields split by commas, records by \n or \r\n; a field in double
// quotes may hold commas, newlines and "" for a quote. Lines with nothing on
// them are skipped, so a trailing newline or a blank line adds no record.
std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& path) {
  std::vector<CsvRecord> records;
  CsvRecord record;
  std::string field;
  bool quoted = false;        // the current field began with a quote
  bool in_quotes = false;     // inside that quote now
  bool any = false;           // the current record has a character or a quote
  int64_t line = 1;
  record.line = 1;
  auto end_field = [&] {
    record.fields.push_back(field);
    field.clear();
    quoted = false;
  };
  auto end_record = [&] {
    end_field();
    if (any) records.push_back(record);
    record = CsvRecord{};
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    const bool crlf = c == '\r' && i + 1 < text.size() && text[i + 1] == '\n';
    if (c == '\n' || crlf) {
      if (crlf) ++i;
      end_record();
      record.line = ++line;
      continue;
    }
    if (quoted) {  // a closed quote may only be followed by a comma or the line's end
      if (c != ',') {
        throw std::runtime_error(path + ":" + std::to_string(line) + ": text after a closing quote (a quote inside " +
                                 "a quoted field is written \"\")");
      }
      end_field();
      continue;
    }
    any = true;
    if (c == ',') {
      end_field();
    } else if (c == '"' && field.empty()) {
      quoted = in_quotes = true;
    } else {
      field += c;
    }
  }
  if (in_quotes) {
    throw std::runtime_error(path + ":" + std::to_string(record.line) + ": a quoted field is never closed");
  }
  end_record();
  return records;
}

std::string read_file(const std::string& path) {
  if (!std::filesystem::exists(path)) throw std::runtime_error(path + ": no such file");
  if (std::filesystem::is_directory(path)) throw std::runtime_error(path + ": is a directory, not a trace file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A byte-order mark from spreadsheet exports would otherwise glue onto the first column's name.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  return text;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

struct Columns {
  size_t arrival = 0, prompt = 0, output = 0, count = 0;
};

Columns find_columns(const CsvRecord& header, const std::string& path) {
  std::vector<std::string> names;
  std::string listed;
  for (const auto& f : header.fields) {
    names.push_back(trim(f));
    listed += (listed.empty() ? "" : ", ") + names.back();
  }
  auto column = [&](const std::string& name) {
    size_t found = names.size();
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != name) continue;
      if (found != names.size()) throw std::runtime_error(path + ": column '" + name + "' appears twice in the header");
      found = i;
    }
    if (found == names.size()) {
      throw std::runtime_error(path + ": missing column '" + name + "' (the header has: " + listed + ")");
    }
    return found;
  };
  Columns c;
  c.arrival = column("arrival_s");
  c.prompt = column("prompt");
  c.output = column("output_tokens");
  c.count = names.size();
  return c;
}

std::string where(const std::string& path, const CsvRecord& r) { return path + ":" + std::to_string(r.line) + ": "; }

double parse_arrival(const std::string& text, const std::string& at) {
  const std::string t = trim(text);
  char* end = nullptr;
  const double s = t.empty() ? NAN : std::strtod(t.c_str(), &end);
  // Bounded so that s · 1e9 stays inside int64 ns (about 292 years).
  if (t.empty() || *end != '\0' || !std::isfinite(s) || std::fabs(s) > 9e9) {
    throw std::runtime_error(at + "arrival_s must be a number of seconds, got '" + text + "'");
  }
  return s;
}

int64_t parse_output_tokens(const std::string& text, const std::string& at) {
  const std::string t = trim(text);
  char* end = nullptr;
  errno = 0;
  const long long n = t.empty() ? 0 : std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0' || errno == ERANGE || n < 1) {
    throw std::runtime_error(at + "output_tokens must be an integer >= 1, got '" + text + "'");
  }
  return n;
}

}  // namespace

std::vector<ServeRequest> read_trace(const std::string& path,
                                     const std::function<std::vector<int32_t>(const std::string&)>& encode) {
  const std::vector<CsvRecord> records = parse_csv(read_file(path), path);
  if (records.empty()) throw std::runtime_error(path + ": empty (expected a header: arrival_s,prompt,output_tokens)");
  const Columns col = find_columns(records[0], path);
  std::vector<ServeRequest> requests;
  double first_s = 0, previous_s = 0;
  std::string previous_text;
  for (size_t i = 1; i < records.size(); ++i) {
    const CsvRecord& r = records[i];
    const std::string at = where(path, r);
    if (r.fields.size() != col.count) {
      throw std::runtime_error(at + std::to_string(r.fields.size()) + " fields, the header has " +
                               std::to_string(col.count));
    }
    const double s = parse_arrival(r.fields[col.arrival], at);
    if (!requests.empty() && s < previous_s) {
      throw std::runtime_error(at + "arrival_s " + trim(r.fields[col.arrival]) + " is before the previous row's " +
                               previous_text + " (rows must be in arrival order)");
    }
    if (requests.empty()) first_s = s;
    previous_s = s;
    previous_text = trim(r.fields[col.arrival]);
    ServeRequest q;
    q.id = static_cast<int64_t>(requests.size());
    // Each side rounded to ns before the shift, so times written as whole ns come back exactly.
    q.arrival_ns = std::llround(s * 1e9) - std::llround(first_s * 1e9);
    const std::string& prompt = r.fields[col.prompt];
    if (!prompt.empty()) q.prompt = encode(prompt);
    if (q.prompt.empty()) throw std::runtime_error(at + "empty prompt");
    q.output_len = parse_output_tokens(r.fields[col.output], at);
    requests.push_back(std::move(q));
  }
  if (requests.empty()) throw std::runtime_error(path + ": no requests");
  return requests;
}

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Seconds with nine decimals from whole ns, without a trip through double, so
// that read_trace's llround(s · 1e9) gives the same ns back at any magnitude.
std::string seconds(int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%llu.%09llu", negative ? "-" : "",
                static_cast<unsigned long long>(magnitude / 1000000000u),
                static_cast<unsigned long long>(magnitude % 1000000000u));
  return buf;
}

}  // namespace

void write_trace(const std::string& path, const std::vector<ServeRequest>& requests,
                 const std::function<std::string(const std::vector<int32_t>&)>& decode) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot write");
  out << "arrival_s,prompt,output_tokens\n";
  for (const auto& r : requests) {
    out << seconds(r.arrival_ns) << ',' << quoted(decode(r.prompt)) << ',' << r.output_len << '\n';
  }
  out.flush();
  if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace zl
