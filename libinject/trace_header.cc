// The trace's header (see trace_header.h).
#include "libinject/trace_header.h"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "collectors/activity/cupti_activity.h"
#include "collectors/callbacks/cupti_callbacks.h"
#include "libinject/driver_version.h"
#include "libinject/header_environment.h"

#ifndef WARPSCOPE_VERSION
#define WARPSCOPE_VERSION "0.0.0"
#endif

namespace warpscope {
namespace {

std::string Hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::vector<std::string> CommandLine() {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) out.push_back(arg);
  return out;
}

std::string DisplayDriverVersion() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string first_line;
  if (!std::getline(in, first_line)) return "";
  return DisplayDriverVersionFrom(first_line);
}

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

HeaderRecord MakeTraceHeader(const Config& config, pid_t pid) {
  HeaderRecord header;
  header.tool_version = WARPSCOPE_VERSION;
  header.pid = static_cast<uint32_t>(pid);
  header.ppid = static_cast<uint32_t>(getppid());
  header.hostname = Hostname();
  header.command_line = CommandLine();
  header.clock_domain = config.monotonic_clock ? ClockDomain::kMonotonic : ClockDomain::kRealtime;
  header.time_base_ns = TraceClockNs();
  header.unix_time_base_ns = RealtimeNs();
  AddEnvironmentToHeader(config, environ, &header);
  header.producer = "libwarpscope";
  header.cupti_version = CuptiCallbacks::CuptiVersion();
  header.cuda_driver_version = CuptiCallbacks::DriverVersion();
  header.display_driver_version = DisplayDriverVersion();
  return header;
}

}  // namespace warpscope
