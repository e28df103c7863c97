// The trace's header and the output pattern of this process (see trace_header.h).
#include "libinject/trace_header.h"

#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/activity/cupti_activity.h"
#include "collectors/callbacks/cupti_callbacks.h"
#include "libinject/driver_version.h"
#include "proto/common/settings.h"

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

std::string PatternForThisProcess(const std::string& pattern) {
  if (OutputPatternHasPid(pattern)) return pattern;
  const char* launcher = std::getenv(Setting(SettingId::kLauncherPid).variable.data());
  if (launcher == nullptr || std::atoi(launcher) == static_cast<int>(getppid())) return pattern;
  size_t slash = pattern.rfind('/');
  size_t dot = pattern.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return pattern + "_%p";
  return pattern.substr(0, dot) + "_%p" + pattern.substr(dot);
}

HeaderRecord MakeTraceHeader(const Config& config, pid_t pid) {
  HeaderRecord header;
  header.tool_version = WARPSCOPE_VERSION;
  header.pid = static_cast<uint32_t>(pid);
  header.ppid = static_cast<uint32_t>(getppid());
  header.hostname = Hostname();
  header.command_line = CommandLine();
  for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK",
                           "GROUP_RANK", "SLURM_PROCID", "SLURM_LOCALID", "OMPI_COMM_WORLD_RANK",
                           "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "CUDA_VISIBLE_DEVICES"}) {
    if (const char* v = std::getenv(name)) header.rank_env.emplace_back(name, v);
  }
  header.clock_domain = config.monotonic_clock ? ClockDomain::kMonotonic : ClockDomain::kRealtime;
  header.time_base_ns = TraceClockNs();
  header.unix_time_base_ns = RealtimeNs();
  header.config = config.raw;
  // Collectors' own variables (WARPSCOPE_PM_*, WARPSCOPE_PC_*) are not in the session's
  // table: record every WARPSCOPE_* variable so the header says how the trace was taken.
  for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
    std::string_view entry(*env);
    const size_t eq = entry.find('=');
    if (entry.rfind("WARPSCOPE_", 0) != 0 || eq == std::string_view::npos) continue;
    std::string name(entry.substr(0, eq));
    bool known = false;
    for (const auto& [k, v] : header.config) known = known || k == name;
    if (!known) header.config.emplace_back(std::move(name), std::string(entry.substr(eq + 1)));
  }
  header.config.emplace_back("effective.trace", TraceKindsString(config.trace));
  header.config.emplace_back("effective.capture_range",
                             std::string(CaptureRangeName(config.capture_range)));
  header.producer = "libwarpscope";
  header.cupti_version = CuptiCallbacks::CuptiVersion();
  header.cuda_driver_version = CuptiCallbacks::DriverVersion();
  header.display_driver_version = DisplayDriverVersion();
  return header;
}

}  // namespace warpscope
