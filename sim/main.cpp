// The zerolayer command line: train | ablate | submit | merge | claims | report | generate | info.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <vector>

#include <unistd.h>

#include "datasets/tokenizer.h"
#include "models/factory.h"
#include "sim/checkpoint.h"
#include "sim/claims/claims.h"
#include "sim/claims/claims_calibration.h"
#include "sim/claims/claims_file.h"
#include "sim/claims/replication.h"
#include "sim/claims/scaling.h"
#include "sim/claims/sensitivity.h"
#include "sim/claims/summary.h"
#include "sim/config.h"
#include "sim/decode_bench.h"
#include "sim/decoder.h"
#include "sim/generate.h"
#include "sim/h5.h"
#include "sim/memory_estimate.h"
#include "sim/provenance.h"
#include "sim/results.h"
#include "sim/runtime.h"
#include "sim/study/slurm_submit.h"
#include "sim/study/study.h"
#include "sim/util/stop.h"
#include "sim/variants.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace zl;

namespace {

const char* kUsage =
    "zerolayer: train and ablate small transformers with and without a semantic verification layer.\n\n"
    "usage: zerolayer COMMAND [options]\n\n"
    "commands:\n"
    "  train CONFIG      one run of CONFIG (its grid is not expanded); results under output.dir\n"
    "  ablate CONFIG     every run of CONFIG's grid; resumes, skipping complete runs\n"
    "  serve-bench CONFIG  one run of CONFIG served by continuous batching at each --serve.loads (or\n"
    "                    --serve.rates, --serve.trace): measured here and simulated, then projected\n"
    "  simulate CONFIG   the same, the simulator alone (calibrated on the real step; no real serving)\n"
    "  submit CONFIG     run CONFIG's grid as a SLURM job array: --shards N slices, then a merge job\n"
    "  merge DIR         join DIR/runs/*.h5 into DIR/results.h5\n"
    "  claims RESULTS    the claims table: each claim of the seed articles, measured and judged (per\n"
    "                    model size, with each claim's trend across sizes, for a scale ladder)\n"
    "  report RESULTS    a results file as one page to share: HTML with every figure embedded (or --format md)\n"
    "  generate CKPT     sample from a checkpoint directory: --prompt TEXT\n"
    "  info              build, library versions, BLAS, threads, devices\n"
    "  variants          every variant: its family, its keys, what it follows (--format text|md|json)\n"
    "  bench-decode CONFIG  decode tokens/s of baseline and sfvl on a random model of CONFIG's shape, and of\n"
    "                       each --variants model (baseline,sfcl,oet,fused,speculative) on both steps\n\n"
    "Run 'zerolayer COMMAND --help' for a command's options. Every config key is\n"
    "also an option with its dotted name, e.g. --train.steps 200.\n";

std::string join_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// Every config key as a --dotted.name option.
po::options_description key_options() {
  po::options_description keys("config keys (override the file)");
  for (const auto& k : config_keys())
    keys.add_options()(k.name.c_str(), po::value<std::string>()->value_name(k.type), k.help.c_str());
  return keys;
}

Overrides overrides_from(const po::variables_map& vm) {
  Overrides o;
  for (const auto& k : config_keys())
    if (vm.count(k.name)) o.emplace_back(k.name, vm[k.name].as<std::string>());
  return o;
}

po::variables_map parse(int argc, char** argv, const po::options_description& visible,
                        const po::positional_options_description& pos) {
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(visible).positional(pos).run(), vm);
  po::notify(vm);
  return vm;
}

int cmd_study(const std::string& cmd, int argc, char** argv, const std::string& command_line) {
  po::options_description opts("zerolayer " + cmd + " CONFIG [options]");
  opts.add_options()("help,h", "this help")("config", po::value<std::string>(), "study file (INI)");
  if (cmd == "ablate")
    opts.add_options()("shard", po::value<std::string>(), "i/n: run only slice i of n (then `zerolayer merge`)")(
        "dry-run", "list the runs and which are complete");
  opts.add(key_options());
  po::positional_options_description pos;
  pos.add("config", 1);
  auto vm = parse(argc, argv, opts, pos);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (!vm.count("config")) throw std::runtime_error(cmd + ": missing CONFIG (a study file such as ablations/quick.ini)");
  Overrides overrides = overrides_from(vm);
  // serve-bench and simulate are a run with serving on: measured and
  // simulated, or simulated alone (which no option can undo).
  if (cmd == "serve-bench" || cmd == "simulate") overrides.insert(overrides.begin(), {"serve.enabled", "true"});
  if (cmd == "simulate") overrides.emplace_back("serve.measure", "false");
  Study study = load_study(vm["config"].as<std::string>(), overrides);
  StudyOptions so;
  so.command_line = command_line;
  so.summarize = print_summary;
  if (cmd != "ablate") study.axes.clear();  // one run: the base config
  if (vm.count("dry-run")) so.dry_run = true;
  if (vm.count("shard")) {
    const std::string s = vm["shard"].as<std::string>();
    if (std::sscanf(s.c_str(), "%d/%d", &so.shard_index, &so.shard_count) != 2 || so.shard_count < 1 ||
        so.shard_index < 0 || so.shard_index >= so.shard_count)
      throw std::runtime_error("--shard: expected i/n with 0 <= i < n, got '" + s + "'");
  }
  install_stop_handlers();  // SIGTERM / SIGINT: stop at the next safe point (sim/util/stop.h)
  return run_study(study, so);
}

// The variant table (sim/variants.def), as docs/variants.md and the plots' colours show it.
int cmd_variants(int argc, char** argv) {
  po::options_description opts("zerolayer variants");
  opts.add_options()("help,h", "this help")("format", po::value<std::string>()->default_value("text"),
                                            "text | md | json");
  auto vm = parse(argc, argv, opts, {});
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  std::cout << format_variants(vm["format"].as<std::string>());
  return 0;
}

int cmd_submit(int argc, char** argv) {
  po::options_description opts("zerolayer submit CONFIG --shards N [options]");
  opts.add_options()("help,h", "this help")("config", po::value<std::string>(), "study file (INI)")(
      "shards", po::value<int>(), "N (required): array tasks; task i runs `ablate CONFIG --shard i/N`")(
      "partition", po::value<std::string>(), "SLURM partition (default: the cluster's)")(
      "time", po::value<std::string>(), "time limit of each job, e.g. 2:00:00 (default: the partition's)")(
      "cpus-per-task", po::value<int>(), "CPUs of each task (default: train.threads, or 1 when that is 0)")(
      "mem", po::value<std::string>(), "memory of each job, e.g. 8G (default: the cluster's)")(
      "dry-run", "print the two job scripts and the sbatch commands; write and submit nothing");
  opts.add(key_options());
  po::positional_options_description pos;
  pos.add("config", 1);
  auto vm = parse(argc, argv, opts, pos);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (!vm.count("config")) throw ConfigError("submit: missing CONFIG (a study file such as ablations/quick.ini)");
  if (!vm.count("shards")) throw ConfigError("--shards N is required: the number of array tasks");
  const std::string config = vm["config"].as<std::string>();
  if (!fs::is_regular_file(config)) throw ConfigError("study file '" + config + "' does not exist");
  Overrides overrides = overrides_from(vm);
  Study study = load_study(config, overrides);
  std::set<std::string> ids;  // as ablate counts them: two grid points may resolve to one run
  for (const auto& c : study.expand()) ids.insert(run_id(c));

  SubmitOptions so;
  so.executable = fs::read_symlink("/proc/self/exe").string();
  so.study = fs::absolute(config).lexically_normal().string();
  so.output_dir = fs::absolute(study.base.output.dir).lexically_normal().string();
  so.workdir = fs::current_path().string();
  so.name = study.name;
  so.runs = static_cast<int>(ids.size());
  so.shards = vm["shards"].as<int>();
  so.cpus_per_task = vm.count("cpus-per-task") ? vm["cpus-per-task"].as<int>()
                                               : static_cast<int>(std::max<int64_t>(1, study.base.train.threads));
  // train.threads = 0 means every core; in a task that is the task's CPUs,
  // not the node's (LibTorch would count the node's and oversubscribe it).
  if (study.base.train.threads == 0) {
    overrides.erase(std::remove_if(overrides.begin(), overrides.end(),
                                   [](const auto& o) { return o.first == "train.threads"; }),
                    overrides.end());
    overrides.emplace_back("train.threads", std::to_string(so.cpus_per_task));
  }
  so.overrides = overrides;
  if (vm.count("partition")) so.partition = vm["partition"].as<std::string>();
  if (vm.count("time")) so.time = vm["time"].as<std::string>();
  if (vm.count("mem")) so.mem = vm["mem"].as<std::string>();
  const SlurmScripts scripts = slurm_scripts(so);
  if (vm.count("dry-run")) {
    std::cout << describe_submission(scripts);
    return 0;
  }
  const SubmittedJobs jobs = submit_to_slurm(scripts);
  std::printf("submitted array job %s (%d tasks, ablate --shard i/%d) and merge job %s (after every task succeeds)\n",
              jobs.array_id.c_str(), so.shards, so.shards, jobs.merge_id.c_str());
  std::printf("scripts and logs: %s (task-%s_<i>.log, merge-%s.log)\n", scripts.dir.c_str(), jobs.array_id.c_str(),
              jobs.merge_id.c_str());
  std::printf("results: %s/results.h5 once merge job %s has run; if a task fails, submit again to finish\n",
              so.output_dir.c_str(), jobs.merge_id.c_str());
  return 0;
}

int cmd_merge(int argc, char** argv, const std::string& command_line) {
  po::options_description opts("zerolayer merge DIR [options]");
  opts.add_options()("help,h", "this help")("dir", po::value<std::string>(), "a study's output.dir (holding runs/)")(
      "output,o", po::value<std::string>(), "results file (default DIR/results.h5)");
  po::positional_options_description pos;
  pos.add("dir", 1);
  auto vm = parse(argc, argv, opts, pos);
  if (vm.count("help") || !vm.count("dir")) {
    std::cout << opts << "\n";
    return vm.count("help") ? 0 : 2;
  }
  const std::string dir = vm["dir"].as<std::string>();
  const std::string out = vm.count("output") ? vm["output"].as<std::string>() : (fs::path(dir) / "results.h5").string();
  size_t n = merge_shards(dir, out, collect_provenance(command_line, hardware_threads()));
  print_summary(out);
  std::printf("merged %zu runs into %s\n", n, out.c_str());
  int untimed = 0;
  for (const auto& row : read_index(out)) {
    auto it = row.numbers.find("decode_tok_s");
    untimed += row.strings.at("status") == "complete" && (it == row.numbers.end() || !std::isfinite(it->second));
  }
  if (untimed > 0)
    std::fprintf(stderr, "note: %d complete run(s) have no timing yet (decode.timing = paired times a seed's arms "
                 "together): run the study's `zerolayer ablate` without --shard to time them and merge again\n",
                 untimed);
  return 0;
}

void write_logits(Generator& gen, const std::vector<int32_t>& prompt, const std::string& path) {
  int64_t dims[2];
  auto logits = gen.logits(prompt, &dims[0], &dims[1]);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(dims), sizeof dims);
  out.write(reinterpret_cast<const char*>(logits.data()), logits.size() * sizeof(float));
  if (!out) throw std::runtime_error(path + ": cannot write logits");
}

int cmd_generate(int argc, char** argv) {
  po::options_description opts("zerolayer generate CHECKPOINT --prompt TEXT [options]");
  opts.add_options()("help,h", "this help")("checkpoint", po::value<std::string>(), "checkpoint directory")(
      "prompt", po::value<std::string>()->default_value(""), "text to continue")(
      "max-new-tokens", po::value<int64_t>()->default_value(64), "tokens to generate")(
      "temperature", po::value<double>()->default_value(0.8), "sampling temperature (0 = greedy)")(
      "top-k", po::value<int64_t>()->default_value(0), "top-k (0 = off)")(
      "top-p", po::value<double>()->default_value(1.0), "top-p (1 = off)")(
      "seed", po::value<int64_t>()->default_value(1), "sampling seed")(
      "logits-out", po::value<std::string>(), "also write the prompt's full-forward logits here (float32 [T,V] after "
                                              "two int64 dims; for parity checks against the Python twin)");
  po::positional_options_description pos;
  pos.add("checkpoint", 1);
  auto vm = parse(argc, argv, opts, pos);
  if (vm.count("help") || !vm.count("checkpoint")) {
    std::cout << opts << "\n";
    return vm.count("help") ? 0 : 2;
  }
  GenerateOptions opt;
  opt.max_new_tokens = vm["max-new-tokens"].as<int64_t>();
  opt.temperature = vm["temperature"].as<double>();
  opt.top_k = vm["top-k"].as<int64_t>();
  opt.top_p = vm["top-p"].as<double>();
  opt.seed = static_cast<uint64_t>(vm["seed"].as<int64_t>());
  // The ranges of the decode.* keys these flags stand for (sim/config.cpp).
  if (opt.max_new_tokens < 1) throw ConfigError("--max-new-tokens: must be at least 1");
  if (!(opt.temperature >= 0 && opt.temperature <= 100)) throw ConfigError("--temperature: must be in [0, 100]");
  if (opt.top_k < 0) throw ConfigError("--top-k: must be at least 0 (0 = off)");
  if (!(opt.top_p > 0 && opt.top_p <= 1)) throw ConfigError("--top-p: must be in (0, 1] (1 = off)");
  const std::string text = vm["prompt"].as<std::string>();
  if (size_t bad = first_invalid_utf8(text); bad != std::string::npos)
    throw ConfigError("--prompt: not valid UTF-8 (byte " + std::to_string(bad) + " of " + std::to_string(text.size()) +
                      ")");
  Generator gen(vm["checkpoint"].as<std::string>());
  auto prompt = gen.tokenizer().encode(text);
  if (static_cast<int64_t>(prompt.size()) >= gen.context())
    throw ConfigError("--prompt: " + std::to_string(prompt.size()) + " tokens, but the model's context is " +
                      std::to_string(gen.context()) + " (leave room for at least one new token)");
  if (prompt.empty()) prompt.push_back(gen.tokenizer().eos_id());  // start of a document
  if (vm.count("logits-out")) write_logits(gen, prompt, vm["logits-out"].as<std::string>());
  std::cout << vm["prompt"].as<std::string>() << gen.tokenizer().decode(gen.generate(prompt, opt)) << "\n";
  return 0;
}

// The study a results file came from, for --plan: the file named after
// `ablate` in its recorded command line ("STUDY" when it was not an ablate).
std::string study_of(const std::string& results) {
  h5::File file = h5::File::open(results, false);
  std::istringstream in(file.has_attr("command_line") ? file.attr_string("command_line") : "");
  for (std::string word; in >> word;)
    if (word == "ablate" && in >> word) return word;
  return "STUDY";
}

int cmd_claims(int argc, char** argv) {
  po::options_description opts("zerolayer claims RESULTS.h5 [options]");
  opts.add_options()("help,h", "this help")("results", po::value<std::string>(), "a merged results file")(
      "registry", po::value<std::string>()->default_value(std::string(ZL_SOURCE_DIR) + "/ablations/claims.registry"),
      "claims registry (its header documents the format and the verdict rule)")(
      "level", po::value<double>()->default_value(0.95), "two-sided confidence level of the intervals")(
      "method", po::value<std::string>()->default_value("auto"),
      "interval of the verdicts: auto (the method whose simulated coverage at each row's n is nearest the level), "
      "t, percentile or bca")(
      "family", po::value<std::string>()->default_value("holm"),
      "multiplicity correction shown beside each verdict: holm (across the table's rows) or none")(
      "calibrate", "print each method's simulated coverage and false-verdict rate at n = 3, 5, 8 and the file's n")(
      "plan", "print the seeds each inconclusive row needs (power estimate) and the overrides that run them")(
      "sensitivity",
      "print each claim that depends on an operating point at every setting of it in the file (a "
      "calibrate.VARIANT.target that varies among its runs: ablations/sensitivity.ini), and write /claims_sensitivity")(
      "replicate", po::value<std::string>(),
      "B.h5: judge a second results file of the same study by the same registry and print, row by row, both "
      "values and verdicts, whether the intervals overlap and the verdicts agree, and a summary (agree / near the "
      "boundary / differ): docs/studies.md#replication")(
      "no-write", "print only; do not write the /claims and /claims_seeds tables into RESULTS");
  po::positional_options_description pos;
  pos.add("results", 1);
  auto vm = parse(argc, argv, opts, pos);
  if (vm.count("help") || !vm.count("results")) {
    std::cout << opts << "\n";
    return vm.count("help") ? 0 : 2;
  }
  ClaimsOptions co;
  co.level = vm["level"].as<double>();
  if (!(co.level > 0 && co.level < 1)) throw ConfigError("--level: must be in (0, 1), got " + std::to_string(co.level));
  co.method = vm["method"].as<std::string>();
  if (co.method != "auto") parse_method(co.method);  // names the choices
  const std::string family = vm["family"].as<std::string>();
  if (family != "holm" && family != "none") throw ConfigError("--family: must be holm or none, got '" + family + "'");
  const std::string results = vm["results"].as<std::string>();
  if (!fs::exists(results)) throw std::runtime_error("results file '" + results + "' does not exist");
  const std::string registry = vm["registry"].as<std::string>();
  const std::string registry_text = read_registry(registry);
  auto specs = parse_registry(registry_text, registry);
  // Pre-registration (docs/claims.md#pre-registration): which registry
  // decided the table, and which of its readings changed after their data.
  const RegistryStamp stamp = registry_stamp(registry, registry_text, ZL_SOURCE_DIR);
  std::cout << "registry " << stamp.name << ", content hash " << stamp.hash << "\n";
  for (const auto& s : specs)
    if (s.known_method.empty())
      for (const auto& rev : s.revisions)
        std::cout << "  " << s.id << ": reading revised " << rev.date << " after its data was seen\n";
  // A file of several model sizes (ablations/scale.ini) is judged size by
  // size, then each claim's trend across the sizes (sim/claims/scaling.h).
  const auto sized = evaluate_claims_by_size(specs, load_claims_input(results), co);
  const bool ladder = sized.size() > 1;
  std::cout << format_sized_claims(sized, family == "holm");
  std::vector<ClaimResult> all;  // every size's rows, for the checks that read the whole file
  for (const auto& sc : sized) all.insert(all.end(), sc.results.begin(), sc.results.end());
  const auto absent = known_without_runs(specs, all);
  if (!absent.empty())
    std::cout << "\n" << absent.size() << " known-method row(s) have no runs in this file (e.g. " << absent.front()
              << "); ablations/baselines.ini runs them\n";
  std::vector<ClaimTrend> trends;
  if (ladder) {
    trends = claim_trends(sized, co.level);
    std::cout << "\n" << format_trends(trends, co.level);
  }
  if (vm.count("calibrate")) {
    std::set<int> ns{3, 5, 8};
    for (const auto& r : all)
      if (r.seeds >= 2) ns.insert(r.seeds);
    std::cout << "\n"
              << format_calibration(calibrate(all, std::vector<int>(ns.begin(), ns.end()), co.level,
                                              co.calibration_studies, true));
  }
  if (vm.count("plan"))
    for (const auto& sc : sized)
      std::cout << "\n"
                << (ladder ? "size " + sc.size.label + ": " : "") << format_plan(sc.results, study_of(results), co.power);
  if (vm.count("replicate")) {
    const std::string other = vm["replicate"].as<std::string>();
    if (!fs::exists(other)) throw std::runtime_error("--replicate: results file '" + other + "' does not exist");
    const auto sized_other = evaluate_claims_by_size(specs, load_claims_input(other), co);
    std::cout << "\n" << format_replication(replicate(sized, sized_other), results, other);
  }
  Sensitivity sensitivity;
  if (vm.count("sensitivity")) {
    sensitivity = claim_sensitivity(specs, load_claims_input(results), co);
    std::cout << "\nsensitivity: each verdict along its operating point (plain verdicts)\n"
              << format_sensitivity(sensitivity);
  }
  if (!vm.count("no-write")) {
    if (vm.count("sensitivity")) write_table(results, "claims_sensitivity", sensitivity_table(sensitivity));
    write_claims(results, sized, trends, stamp);
    std::printf("wrote /claims (%zu rows)%s and /claims_seeds into %s\n", all.size(),
                ladder ? ", /claims_trend" : "", results.c_str());
  }
  return 0;
}

// `zerolayer report` is Python (python/zerolayer/report.py, the notebooks'
// plots): it runs /usr/bin/python3 (or $ZL_PYTHON) in this process's place
// with the source tree's python/ on PYTHONPATH.
int cmd_report(int argc, char** argv) {
  po::options_description opts("zerolayer report RESULTS.h5 [options]");
  opts.add_options()("help,h", "this help")("results", po::value<std::string>(), "a merged results file")(
      "output,o", po::value<std::string>(), "the report (default: report.html, or report.md, beside RESULTS)")(
      "format", po::value<std::string>(),
      "html (the default; md when --output ends in .md): one self-contained file, every figure embedded, no "
      "network access; or md: Markdown with the figures as PNG files in a folder beside it");
  po::positional_options_description pos;
  pos.add("results", 1);
  auto vm = parse(argc, argv, opts, pos);
  if (vm.count("help") || !vm.count("results")) {
    std::cout << opts << "\n";
    return vm.count("help") ? 0 : 2;
  }
  std::vector<std::string> args;
  if (vm.count("format")) {
    const std::string format = vm["format"].as<std::string>();
    if (format != "html" && format != "md") throw ConfigError("--format: must be html or md, got '" + format + "'");
    args = {"--format", format};
  }
  if (vm.count("output")) args.insert(args.begin(), {"-o", vm["output"].as<std::string>()});
  args.insert(args.begin(), vm["results"].as<std::string>());
  const char* env_python = std::getenv("ZL_PYTHON");
  const std::string python = env_python && *env_python ? env_python : "/usr/bin/python3";
  const std::string package = std::string(ZL_SOURCE_DIR) + "/python";
  if (::access(python.c_str(), X_OK) != 0)
    throw std::runtime_error(python + " not found: the report is Python (install python3 with scripts/setup)");
  if (!fs::is_regular_file(package + "/zerolayer/report.py"))
    throw std::runtime_error(package + "/zerolayer/report.py not found: the report needs the source tree this "
                             "binary was built from");
  const char* old_path = std::getenv("PYTHONPATH");
  const std::string path = package + (old_path && *old_path ? ":" + std::string(old_path) : "");
  ::setenv("PYTHONPATH", path.c_str(), 1);
  // A missing Python package (matplotlib, pandas, h5py) is named, not a traceback.
  const std::string boot =
      "import sys\n"
      "try:\n"
      "    from zerolayer.report import main\n"
      "except ImportError as e:\n"
      "    sys.exit(f'zerolayer report: cannot load the report ({e}): scripts/setup installs python3-h5py, "
      "python3-pandas and python3-matplotlib')\n"
      "sys.exit(main(sys.argv[1:]))\n";
  std::vector<std::string> words = {python, "-c", boot};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv_out;
  for (auto& w : words) argv_out.push_back(w.data());
  argv_out.push_back(nullptr);
  std::cout.flush();
  ::execv(python.c_str(), argv_out.data());
  throw std::runtime_error("cannot run " + python + ": " + std::strerror(errno));
}

int cmd_bench_decode(int argc, char** argv) {
  po::options_description opts("zerolayer bench-decode CONFIG [options]");
  opts.add_options()("help,h", "this help")("config", po::value<std::string>(), "study file giving the shape")(
      "prompt-tokens", po::value<int64_t>()->default_value(32), "random prompt tokens per sequence")(
      "repeats", po::value<int64_t>()->default_value(3), "timed passes per decoder (best kept)")(
      "variants", po::value<std::string>()->default_value("baseline,sfcl,oet,fused,speculative"),
      "comma list: each variant's model on the fast and the reference step");
  opts.add(key_options());
  po::positional_options_description pos;
  pos.add("config", 1);
  auto vm = parse(argc, argv, opts, pos);
  if (vm.count("help") || !vm.count("config")) {
    std::cout << opts << "\n";
    return vm.count("help") ? 0 : 2;
  }
  RunConfig cfg = load_study(vm["config"].as<std::string>(), overrides_from(vm)).base;
  check_memory(cfg, MemoryUse::Decode);  // random models of the shape, decoded (sim/memory_estimate.h)
  std::vector<std::string> variants;
  std::stringstream list(vm["variants"].as<std::string>());
  for (std::string v; std::getline(list, v, ',');)
    if (!v.empty()) variants.push_back(v);
  auto r = run_decode_bench(cfg, vm["prompt-tokens"].as<int64_t>(), vm["repeats"].as<int64_t>(), variants);
  std::string per_variant;
  for (const auto& v : r.variants) {
    char row[256];
    std::snprintf(row, sizeof row,
                  "%s{\"variant\": \"%s\", \"fast_tok_s\": %.1f, \"reference_tok_s\": %.1f, \"fast_step\": %s}",
                  per_variant.empty() ? "" : ", ", v.variant.c_str(), v.fast_tok_s, v.reference_tok_s,
                  v.fast_step ? "true" : "false");
    per_variant += row;
  }
  std::printf("{\"baseline_tok_s\": %.1f, \"sfvl_tok_s\": %.1f, \"sfvl_checks_per_token\": %.4f, "
              "\"verifier_time_share\": %.5f, \"verifier_flops_share\": %.5f, \"variants\": [%s]}\n",
              r.baseline_tok_s, r.sfvl_tok_s, r.sfvl_checks_per_token, r.verifier_time_share, r.verifier_flops_share,
              per_variant.c_str());
  return 0;
}

int cmd_info() {
  configure_runtime(0);
  std::printf("zerolayer %s (%s build, commit %s)\n", ZL_VERSION, ZL_BUILD_TYPE, ZL_GIT_COMMIT);
  std::printf("source      %s\n", ZL_SOURCE_DIR);
  std::printf("libtorch    %s\n", TORCH_VERSION);
  auto prov = collect_provenance("", hardware_threads());
  std::printf("hdf5        %s\n", prov.hdf5_version.c_str());
  std::printf("blas        %s\n", blas_name().c_str());
  std::printf("cpu         %s\n", prov.cpu_model.c_str());
  std::printf("threads     %d torch intra-op (of %lld cores), OpenBLAS pinned to 1\n", at::get_num_threads(),
              static_cast<long long>(hardware_threads()));
  std::printf("devices     cpu%s\n", torch::cuda::is_available()
                                       ? (", cuda x" + std::to_string(torch::cuda::device_count())).c_str()
                                       : " (no CUDA)");
  std::printf("parallel    %s", at::get_parallel_info().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" || std::string(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  // Past a file-size limit (ulimit -f) a write then fails with EFBIG and the
  // run reports it, as on a full disk, instead of the process dying of SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  const std::string cmd = argv[1];
  const std::string command_line = join_args(argc, argv);
  try {
    if (cmd == "train" || cmd == "ablate" || cmd == "serve-bench" || cmd == "simulate")
      return cmd_study(cmd, argc - 1, argv + 1, command_line);
    if (cmd == "submit") return cmd_submit(argc - 1, argv + 1);
    if (cmd == "merge") return cmd_merge(argc - 1, argv + 1, command_line);
    if (cmd == "generate") return cmd_generate(argc - 1, argv + 1);
    if (cmd == "info") return cmd_info();
    if (cmd == "variants") return cmd_variants(argc - 1, argv + 1);
    if (cmd == "bench-decode") return cmd_bench_decode(argc - 1, argv + 1);
    if (cmd == "claims") return cmd_claims(argc - 1, argv + 1);
    if (cmd == "report") return cmd_report(argc - 1, argv + 1);
    std::fprintf(stderr, "zerolayer: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
    return 2;
  } catch (const po::error& e) {
    std::fprintf(stderr, "zerolayer %s: %s\n", cmd.c_str(), e.what());
    return 2;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "zerolayer %s: %s\n", cmd.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zerolayer %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
