// A process that writes a trace as the injected library does, without a GPU: it reads its
// WARPSCOPE_* settings, takes the header's job fields from its environment, and names, opens
// and closes its trace with the library's own code (libinject/trace_name.h), with `--kernels N`
// kernels in it. With `--children K` it first starts K copies of itself with RANK=0..K-1 (each
// writing `--child-kernels M` kernels) and waits for them, as torchrun does. The CLI tests of
// `warpscope record` on a job of many processes run it: the real shim needs a GPU to start.
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "libinject/config.h"
#include "libinject/header_environment.h"
#include "libinject/trace_name.h"

namespace warpscope {
namespace {

struct Args {
  int kernels = 0;
  int children = 0;
  int child_kernels = 5;
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const int value = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--kernels") == 0) args.kernels = value;
    if (std::strcmp(argv[i], "--children") == 0) args.children = value;
    if (std::strcmp(argv[i], "--child-kernels") == 0) args.child_kernels = value;
  }
  return args;
}

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::vector<pid_t> StartChildren(const Args& args) {
  std::vector<pid_t> children;
  for (int rank = 0; rank < args.children; ++rank) {
    const pid_t child = fork();
    if (child == 0) {
      setenv("RANK", std::to_string(rank).c_str(), 1);
      const std::string kernels = std::to_string(args.child_kernels);
      execl("/proc/self/exe", "trace_writing_process", "--kernels", kernels.c_str(), nullptr);
      _exit(127);
    }
    if (child > 0) children.push_back(child);
  }
  return children;
}

int Run(const Args& args) {
  Config config;
  std::string error;
  if (!ParseConfig([](const char* n) { return std::getenv(n); }, &config, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 0;
  }
  HeaderRecord header;
  header.tool_version = "test";
  header.pid = static_cast<uint32_t>(getpid());
  header.ppid = static_cast<uint32_t>(getppid());
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  header.hostname = host;
  header.clock_domain = ClockDomain::kRealtime;
  header.time_base_ns = RealtimeNs();
  header.unix_time_base_ns = header.time_base_ns;
  header.producer = "test:trace_writing_process";
  AddEnvironmentToHeader(config, environ, &header);
  std::unique_ptr<TraceWriter> writer = OpenProcessTrace(
      config, header, [](const char* n) { return std::getenv(n); }, &error);
  if (writer == nullptr) std::fprintf(stderr, "%s\n", error.c_str());  // and run on
  const std::vector<pid_t> children = StartChildren(args);
  for (int i = 0; writer != nullptr && i < args.kernels; ++i) {
    const uint64_t start = header.time_base_ns + 1000u * static_cast<uint64_t>(i);
    writer->Write(KernelRecord{.start_ns = start, .end_ns = start + 500});
  }
  int failed = 0;
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  if (writer != nullptr) writer->Close(EndReason::kExit, RealtimeNs());
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace warpscope

int main(int argc, char** argv) { return warpscope::Run(warpscope::ParseArgs(argc, argv)); }
