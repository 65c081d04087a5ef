// The serving benchmark's requests (issue 14): synthetic arrivals against the
// Gamma process vLLM's client draws (mean gap 1 / rate, coefficient of
// variation 1 / sqrt(burstiness)), their seeding and validation, and trace
// files: a round trip through CSV quoting, columns found by name, and an
// error for each way a trace can be wrong that names the file, line and column.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "sim/serving/workload.h"
#include "tests/cpp/message_of.h"
#include "tests/cpp/temp_dir.h"

namespace {

using zl::ArrivalOptions;
using zl::ServeRequest;

using zl::message_of;

struct GapStats {
  double mean = 0, cv = 0;
};

GapStats gap_stats(const std::vector<int64_t>& times_ns) {
  std::vector<double> gaps;
  for (size_t i = 1; i < times_ns.size(); ++i) gaps.push_back(static_cast<double>(times_ns[i] - times_ns[i - 1]) / 1e9);
  double sum = 0, squares = 0;
  for (double g : gaps) sum += g;
  const double mean = sum / static_cast<double>(gaps.size());
  for (double g : gaps) squares += (g - mean) * (g - mean);
  return {mean, std::sqrt(squares / static_cast<double>(gaps.size())) / mean};
}

ArrivalOptions options(double rate, double burstiness, int64_t requests, uint64_t seed) {
  ArrivalOptions o;
  o.rate = rate;
  o.burstiness = burstiness;
  o.requests = requests;
  o.seed = seed;
  return o;
}

TEST(ServingWorkload, PoissonGapsHaveTheRateAsMean) {
  auto t = zl::arrival_times_ns(options(5, 1, 20001, 1));
  ASSERT_EQ(t.size(), 20001u);
  EXPECT_EQ(t[0], 0);
  for (size_t i = 1; i < t.size(); ++i) ASSERT_LE(t[i - 1], t[i]);
  // 20000 exponential gaps: the mean's standard error is 0.7 %, so 3 % is over 4 of them.
  EXPECT_NEAR(gap_stats(t).mean, 0.2, 0.2 * 0.03);
}

TEST(ServingWorkload, BurstinessSetsTheSpreadNotTheMean) {
  GapStats poisson = gap_stats(zl::arrival_times_ns(options(10, 1, 20001, 2)));
  GapStats smooth = gap_stats(zl::arrival_times_ns(options(10, 4, 20001, 2)));
  GapStats bursty = gap_stats(zl::arrival_times_ns(options(10, 0.25, 20001, 2)));
  EXPECT_NEAR(poisson.cv, 1.0, 0.05);
  EXPECT_NEAR(smooth.cv, 0.5, 0.03);
  EXPECT_NEAR(bursty.cv, 2.0, 0.15);
  for (const GapStats& s : {poisson, smooth, bursty}) EXPECT_NEAR(s.mean, 0.1, 0.1 * 0.05);
}

TEST(ServingWorkload, TheSeedFixesTheTimes) {
  EXPECT_EQ(zl::arrival_times_ns(options(3, 1, 50, 7)), zl::arrival_times_ns(options(3, 1, 50, 7)));
  EXPECT_NE(zl::arrival_times_ns(options(3, 1, 50, 7)), zl::arrival_times_ns(options(3, 1, 50, 8)));
}

TEST(ServingWorkload, InfiniteRateSendsEverythingAtZero) {
  auto t = zl::arrival_times_ns(options(std::numeric_limits<double>::infinity(), 1, 100, 3));
  EXPECT_EQ(t, std::vector<int64_t>(100, 0));
  EXPECT_EQ(zl::arrival_times_ns(options(1, 1, 1, 0)), std::vector<int64_t>{0});
}

TEST(ServingWorkload, InvalidOptionsNameTheConfigKey) {
  auto msg = [](const ArrivalOptions& o) { return message_of([&] { zl::arrival_times_ns(o); }); };
  EXPECT_EQ(msg(options(0, 1, 5, 0)), "serve.rate must be > 0 (requests per second), got 0");
  EXPECT_NE(msg(options(-2, 1, 5, 0)).find("serve.rate"), std::string::npos);
  EXPECT_NE(msg(options(NAN, 1, 5, 0)).find("serve.rate"), std::string::npos);
  EXPECT_EQ(msg(options(1, 0, 5, 0)), "serve.burstiness must be > 0, got 0");
  EXPECT_NE(msg(options(1, -1, 5, 0)).find("serve.burstiness"), std::string::npos);
  EXPECT_NE(msg(options(1, INFINITY, 5, 0)).find("serve.burstiness"), std::string::npos);
  EXPECT_EQ(msg(options(1, 1, 0, 0)), "serve.requests must be >= 1, got 0");
  EXPECT_THROW(zl::arrival_times_ns(options(1, 1, -3, 0)), std::invalid_argument);
}

TEST(ServingWorkload, SyntheticWorkloadCyclesThePrompts) {
  const std::vector<std::vector<int32_t>> prompts = {{1, 2}, {3}, {4, 5, 6}};
  auto opt = options(4, 1, 7, 11);
  auto reqs = zl::synthetic_workload(prompts, 16, opt);
  auto times = zl::arrival_times_ns(opt);
  ASSERT_EQ(reqs.size(), 7u);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].id, static_cast<int64_t>(i));
    EXPECT_EQ(reqs[i].arrival_ns, times[i]);
    EXPECT_EQ(reqs[i].prompt, prompts[i % 3]);
    EXPECT_EQ(reqs[i].output_len, 16);
  }
  EXPECT_THROW(zl::synthetic_workload({}, 16, opt), std::invalid_argument);
  EXPECT_THROW(zl::synthetic_workload({{1}, {}}, 16, opt), std::invalid_argument);
  EXPECT_NE(message_of([&] { zl::synthetic_workload(prompts, 0, opt); }).find("serve.output_len"), std::string::npos);
}

// A toy tokenizer: one token per byte, so any text survives the round trip.
std::vector<int32_t> bytes_of(const std::string& s) {
  std::vector<int32_t> out;
  for (unsigned char c : s) out.push_back(c);
  return out;
}

std::string text_of(const std::vector<int32_t>& tokens) {
  std::string out;
  for (int32_t t : tokens) out += static_cast<char>(t);
  return out;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

TEST(ServingWorkload, TraceRoundTripKeepsQuotesCommasAndNewlines) {
  TempDir dir("serving_workload");
  const std::vector<std::string> texts = {"plain", "a, b, c", "she said \"hi\"", "two\nlines", "crlf\r\nin it", "\"\""};
  std::vector<ServeRequest> reqs;
  // Arrival times at ns resolution, the last an hour in.
  const std::vector<int64_t> arrivals = {0, 1, 999999999, 1000000000, 1234567891, 3600123456789};
  for (size_t i = 0; i < texts.size(); ++i) {
    ServeRequest r;
    r.id = static_cast<int64_t>(i);
    r.arrival_ns = arrivals[i];
    r.prompt = bytes_of(texts[i]);
    r.output_len = static_cast<int64_t>(i) + 1;
    reqs.push_back(r);
  }
  zl::write_trace(dir / "trace.csv", reqs, text_of);
  auto back = zl::read_trace(dir / "trace.csv", bytes_of);
  ASSERT_EQ(back.size(), reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(back[i].id, reqs[i].id);
    EXPECT_EQ(back[i].arrival_ns, reqs[i].arrival_ns);
    EXPECT_EQ(text_of(back[i].prompt), texts[i]);
    EXPECT_EQ(back[i].output_len, reqs[i].output_len);
  }
}

TEST(ServingWorkload, TraceColumnsAreFoundByNameAndTimesShiftedToZero) {
  TempDir dir("serving_workload");
  // Columns out of order, an extra one, CRLF endings, a quoted prompt over two
  // lines, and a first arrival at 1.5 s.
  write_text(dir / "t.csv",
             "output_tokens,user,prompt,arrival_s\r\n"
             "4,ann,\"first\r\nprompt\",1.5\r\n"
             "2,bob,second,1.5\r\n"
             " 8 ,cy,\"third, with comma\", 2.25 \r\n");
  auto r = zl::read_trace(dir / "t.csv", bytes_of);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(text_of(r[0].prompt), "first\r\nprompt");
  EXPECT_EQ(text_of(r[2].prompt), "third, with comma");
  EXPECT_EQ(r[0].arrival_ns, 0);
  EXPECT_EQ(r[1].arrival_ns, 0);
  EXPECT_EQ(r[2].arrival_ns, 750000000);
  EXPECT_EQ(r[0].output_len, 4);
  EXPECT_EQ(r[2].output_len, 8);
  EXPECT_EQ(r[2].id, 2);
}

// The message read_trace throws for a file holding `text`.
std::string trace_error(const TempDir& dir, const std::string& text) {
  write_text(dir / "trace.csv", text);
  return message_of([&] { zl::read_trace(dir / "trace.csv", bytes_of); });
}

void expect_has(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

TEST(ServingWorkload, TraceErrorsNameTheFileLineAndColumn) {
  TempDir dir("serving_workload");
  const std::string file = dir / "trace.csv";
  EXPECT_EQ(message_of([&] { zl::read_trace(dir / "absent.csv", bytes_of); }), dir / "absent.csv" + ": no such file");
  EXPECT_EQ(trace_error(dir, "arrival_s,prompt\n0,a\n"),
            file + ": missing column 'output_tokens' (the header has: arrival_s, prompt)");
  EXPECT_EQ(trace_error(dir, "arrival_s,prompt,output_tokens\n"), file + ": no requests");
  EXPECT_EQ(trace_error(dir, ""), file + ": empty (expected a header: arrival_s,prompt,output_tokens)");
  // Line numbers count physical lines: the quoted newline on line 2 makes the third record line 4.
  const std::string head = "arrival_s,prompt,output_tokens\n0,\"a\nb\",3\n";
  EXPECT_EQ(trace_error(dir, head + "1,c,x\n"), file + ":4: output_tokens must be an integer >= 1, got 'x'");
  expect_has(trace_error(dir, head + "1,c,0\n"), ":4: output_tokens");
  expect_has(trace_error(dir, head + "1,c,2.5\n"), ":4: output_tokens");
  expect_has(trace_error(dir, head + "soon,c,2\n"), ":4: arrival_s must be a number of seconds, got 'soon'");
  expect_has(trace_error(dir, head + "nan,c,2\n"), ":4: arrival_s");
  EXPECT_EQ(trace_error(dir, head + "1.5,c,2\n1.2,d,2\n"),
            file + ":5: arrival_s 1.2 is before the previous row's 1.5 (rows must be in arrival order)");
  EXPECT_EQ(trace_error(dir, head + "1,,2\n"), file + ":4: empty prompt");
  EXPECT_EQ(trace_error(dir, head + "1,c\n"), file + ":4: 2 fields, the header has 3");
  expect_has(trace_error(dir, head + "1,\"c\nd,2\n"), ":4: a quoted field is never closed");
  expect_has(trace_error(dir, head + "1,\"c\"d,2\n"), ":4: text after a closing quote");
  expect_has(trace_error(dir, "arrival_s,prompt,prompt,output_tokens\n"), "column 'prompt' appears twice");
  // A tokenizer that makes nothing of a prompt leaves a request with no prompt: the same error.
  write_text(file, head);
  auto nothing = [](const std::string&) { return std::vector<int32_t>{}; };
  EXPECT_EQ(message_of([&] { zl::read_trace(file, nothing); }), file + ":2: empty prompt");
}

}  // namespace
