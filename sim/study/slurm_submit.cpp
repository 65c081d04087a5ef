#include "sim/study/slurm_submit.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

#include "sim/config.h"

namespace zl {
namespace fs = std::filesystem;

namespace {

// sbatch reads an #SBATCH line as words: a value with a space, a quote or a
// line break would become other options (or none), so it is refused.
void check_directive_value(const std::string& option, const std::string& value) {
  for (unsigned char c : value)
    if (std::isspace(c) || std::iscntrl(c) || c == '"' || c == '\'')
      throw ConfigError(option + ": '" + value +
                        "' cannot go on an #SBATCH line (no spaces, quotes or control characters)");
}

// The array's tasks that land on one node share its cores, and LibTorch's
// OpenMP threads spin while they wait by default, taking cores from the
// other tasks: two smoke studies at once took 17-82 s each spinning, 4-5 s
// sleeping (one alone, 2-5 s either way). So a task's threads sleep, unless
// the environment the job was submitted from (sbatch passes it on) says
// otherwise (docs/studies.md#running-a-study-on-a-slurm-cluster). After the
// #SBATCH lines: sbatch reads none past the first command.
std::string wait_policy_lines() {
  return "# Tasks on one node share its cores: their OpenMP threads sleep while they wait, not spin\n"
         "# (docs/studies.md), unless the environment sets OMP_WAIT_POLICY.\n"
         "export OMP_WAIT_POLICY=\"${OMP_WAIT_POLICY:-PASSIVE}\"\n";
}

// SLURM's job names are free text, but a plain one reads well in squeue.
std::string job_name(const std::string& name) {
  std::string out = "zl-";
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  return out;
}

// The #SBATCH lines both jobs share: where they run and what they may use.
std::string common_directives(const SubmitOptions& opt) {
  std::string d = "#SBATCH --chdir=" + opt.workdir + "\n";
  if (!opt.partition.empty()) d += "#SBATCH --partition=" + opt.partition + "\n";
  if (!opt.time.empty()) d += "#SBATCH --time=" + opt.time + "\n";
  if (!opt.mem.empty()) d += "#SBATCH --mem=" + opt.mem + "\n";
  return d;
}

void validate(const SubmitOptions& opt) {
  if (opt.shards < 1) throw ConfigError("--shards: must be at least 1, got " + std::to_string(opt.shards));
  if (opt.runs > 0 && opt.shards > opt.runs)
    throw ConfigError("--shards " + std::to_string(opt.shards) + ": the study has only " + std::to_string(opt.runs) +
                      " run(s), so at most " + std::to_string(opt.runs) + " slices have work");
  if (opt.cpus_per_task < 1)
    throw ConfigError("--cpus-per-task: must be at least 1, got " + std::to_string(opt.cpus_per_task));
  // SLURM's time formats (sbatch(1)): minutes, [D-]HH[:MM[:SS]], MM:SS, or no limit.
  static const std::regex time_format(R"(^(\d+-)?\d+(:\d+){0,2}$|^(infinite|unlimited|INFINITE|UNLIMITED)$)");
  if (!opt.time.empty() && !std::regex_match(opt.time, time_format))
    throw ConfigError("--time: '" + opt.time + "' is not a SLURM time (minutes, HH:MM:SS, D-HH:MM:SS or UNLIMITED)");
  static const std::regex mem_format(R"(^\d+[KMGTkmgt]?$)");
  if (!opt.mem.empty() && !std::regex_match(opt.mem, mem_format))
    throw ConfigError("--mem: '" + opt.mem + "' is not a SLURM memory size (megabytes, or a number with K, M, G or T)");
  check_directive_value("--partition", opt.partition);
  check_directive_value("output.dir", opt.output_dir);
  if (opt.output_dir.find('%') != std::string::npos)  // --output=<dir>/task-%A_%a.log: % starts a pattern there
    throw ConfigError("output.dir: '" + opt.output_dir + "' holds a '%', which SLURM reads as a file-name pattern");
  check_directive_value("the working directory", opt.workdir);
  for (const auto& [what, path] : {std::pair{"output.dir", &opt.output_dir}, {"the working directory", &opt.workdir},
                                    {"the study file", &opt.study}, {"the zerolayer executable", &opt.executable}})
    if (!fs::path(*path).is_absolute())
      throw ConfigError(std::string(what) + ": '" + *path + "' must be an absolute path (the jobs may start elsewhere)");
}

// Runs a shell command, returning its exit status and its output (stderr too,
// so a refusal is reported with sbatch's own words).
int run_captured(const std::string& command, std::string* output) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run '" + command + "'");
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) output->append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (::access((fs::path(dir.empty() ? "." : dir) / program).c_str(), X_OK) == 0) return true;
  return false;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(path + ": cannot write the job script");
}

// `sbatch --parsable` prints "<job id>" or "<job id>;<cluster>".
std::string sbatch(const std::vector<std::string>& args, const std::string& what) {
  std::string command = "sbatch --parsable";
  for (const auto& a : args) command += " " + shell_quote(a);
  std::string output;
  const int rc = run_captured(command, &output);
  while (!output.empty() && std::isspace(static_cast<unsigned char>(output.back()))) output.pop_back();
  if (rc != 0) throw std::runtime_error("sbatch refused the " + what + " (exit " + std::to_string(rc) + "): " + output);
  const std::string last = output.substr(output.find_last_of('\n') == std::string::npos ? 0 : output.find_last_of('\n') + 1);
  const std::string id = last.substr(0, last.find(';'));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error("sbatch submitted the " + what + " but printed no job id: '" + output + "'");
  return id;
}

}  // namespace

std::string shell_quote(const std::string& text) {
  static const std::string plain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-";
  if (!text.empty() && text.find_first_not_of(plain) == std::string::npos) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

SlurmScripts slurm_scripts(const SubmitOptions& opt) {
  validate(opt);
  SlurmScripts s;
  s.dir = (fs::path(opt.output_dir) / "slurm").string();
  s.array_path = (fs::path(s.dir) / "array.sbatch").string();
  s.merge_path = (fs::path(s.dir) / "merge.sbatch").string();
  const std::string n = std::to_string(opt.shards);

  std::string study_options = " \\\n  --output.dir " + shell_quote(opt.output_dir);
  for (const auto& [key, value] : opt.overrides)
    if (key != "output.dir") study_options += " \\\n  --" + key + " " + shell_quote(value);

  std::ostringstream a;
  a << "#!/bin/bash\n"
    << "# zerolayer submit: study " << opt.name << " (" << opt.runs << " runs) as " << n
    << " slices, one array task each.\n"
    << "# Task i runs `ablate --shard i/" << n << "`, which skips the runs already complete: after a task\n"
    << "# failed or was killed, submitting again finishes the study without redoing them.\n"
    << "#SBATCH --job-name=" << job_name(opt.name) << "\n"
    << "#SBATCH --array=0-" << opt.shards - 1 << "\n"
    << "#SBATCH --cpus-per-task=" << opt.cpus_per_task << "\n"
    << "#SBATCH --output=" << s.dir << "/task-%A_%a.log\n"
    << common_directives(opt)
    << wait_policy_lines()
    << "exec " << shell_quote(opt.executable) << " ablate " << shell_quote(opt.study)
    << " --shard \"${SLURM_ARRAY_TASK_ID:?not an array task: submit this script with sbatch}/" << n << "\""
    << study_options << "\n";
  s.array_text = a.str();

  std::ostringstream m;
  m << "#!/bin/bash\n"
    << "# zerolayer submit: joins the slices of study " << opt.name << " into " << opt.output_dir << "/results.h5.\n"
    << "# Submitted with --dependency=afterok:<array job>: it runs once every task has succeeded,\n"
    << "# and SLURM cancels it when one fails (--kill-on-invalid-dep), rather than leave it pending.\n"
    << "# The unsharded ablate finds every run complete; it times the runs that await paired timing\n"
    << "# (decode.timing = paired: each seed's arms interleaved on this one node), then merges.\n"
    << "#SBATCH --job-name=" << job_name(opt.name) << "-merge\n"
    << "#SBATCH --cpus-per-task=" << opt.cpus_per_task << "\n"
    << "#SBATCH --kill-on-invalid-dep=yes\n"
    << "#SBATCH --output=" << s.dir << "/merge-%j.log\n"
    << common_directives(opt)
    << "exec " << shell_quote(opt.executable) << " ablate " << shell_quote(opt.study) << study_options << "\n";
  s.merge_text = m.str();
  return s;
}

std::string describe_submission(const SlurmScripts& s) {
  return "==> " + s.array_path + " <==\n" + s.array_text + "\n==> " + s.merge_path + " <==\n" + s.merge_text +
         "\nwould submit (--dry-run: nothing written, nothing submitted):\n  sbatch --parsable " +
         shell_quote(s.array_path) + "\n  sbatch --parsable --dependency=afterok:<array job id> " +
         shell_quote(s.merge_path) + "\n";
}

SubmittedJobs submit_to_slurm(const SlurmScripts& s) {
  if (!on_path("sbatch"))
    throw std::runtime_error("sbatch not found on PATH: submit needs a SLURM client (Debian: slurm-client); "
                             "--dry-run prints the scripts without one");
  fs::create_directories(s.dir);
  write_text(s.array_path, s.array_text);
  write_text(s.merge_path, s.merge_text);
  SubmittedJobs jobs;
  jobs.array_id = sbatch({s.array_path}, "array job (" + s.array_path + ")");
  try {
    jobs.merge_id = sbatch({"--dependency=afterok:" + jobs.array_id, s.merge_path}, "merge job (" + s.merge_path + ")");
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + "\narray job " + jobs.array_id +
                             " is submitted: once it has finished, time and join its slices by running the same study "
                             "with `zerolayer ablate` and no --shard (or scancel " + jobs.array_id + ")");
  }
  return jobs;
}

}  // namespace zl
