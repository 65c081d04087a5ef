#include "sim/provenance.h"

#include <H5public.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "sim/util/shell.h"

namespace zl {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

Provenance collect_provenance(const std::string& command_line, int64_t threads) {
  Provenance p;
  const std::string src = ZL_SOURCE_DIR;
  p.git_commit = shell_output("git -C '" + src + "' rev-parse HEAD 2>/dev/null");
  if (p.git_commit.empty()) p.git_commit = "unknown";
  p.git_dirty = !shell_output("git -C '" + src + "' status --porcelain --untracked-files=no 2>/dev/null").empty();
  p.command_line = command_line;
  p.created_utc = utc_now();
  p.torch_version = TORCH_VERSION;
  unsigned maj, min, rel;
  H5get_libversion(&maj, &min, &rel);
  p.hdf5_version = std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel);
  p.cuda_version = torch::cuda::is_available() ? "available" : "none";
  p.cpu_model = cpu_model();
  p.gpu_model = torch::cuda::is_available() ? shell_output("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1")
                                            : "none";
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  p.host = host;
  p.threads = threads;
  p.zerolayer_version = ZL_VERSION;
  return p;
}

}  // namespace zl
