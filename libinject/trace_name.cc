// Naming and opening this process's trace (see trace_name.h).
#include "libinject/trace_name.h"

#include <sys/stat.h>
#include <time.h>

#include <cstdlib>
#include <string>

#include "proto/settings/settings.h"
#include "proto/writer/output_name.h"

namespace warpscope {
namespace {

uint64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

const char* Variable(const GetEnvFn& getenv_fn, SettingId id) {
  const char* value = getenv_fn(Setting(id).variable.data());
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

uint64_t UnixNsOfMonotonic(uint64_t monotonic_ns) {
  const uint64_t monotonic = ClockNs(CLOCK_MONOTONIC);
  const uint64_t realtime = ClockNs(CLOCK_REALTIME);
  // A time from the future is another host's clock: it says nothing here.
  if (monotonic_ns == 0 || monotonic_ns > monotonic || monotonic - monotonic_ns > realtime) {
    return 0;
  }
  return realtime - (monotonic - monotonic_ns);
}

}  // namespace

TracePatternChoice ChooseTracePattern(const std::string& configured, uint32_t ppid,
                                      const GetEnvFn& getenv_fn) {
  TracePatternChoice choice{configured};
  const char* launcher = Variable(getenv_fn, SettingId::kLauncherPid);
  // Without `record` the pattern is the user's; `record`'s own child writes the name checked.
  if (launcher == nullptr || std::strtoull(launcher, nullptr, 10) == ppid) return choice;
  if (const char* original = Variable(getenv_fn, SettingId::kRecordOutputPattern)) {
    choice.pattern = original;
  }
  if (!OutputPatternIsPerProcess(choice.pattern, getenv_fn)) {
    choice.pattern = WithSuffixBeforeExtension(choice.pattern, "_%p");
  }
  choice.step_aside_if_taken = true;
  return choice;
}

uint64_t RunStartUnixNs(const GetEnvFn& getenv_fn) {
  const char* start = Variable(getenv_fn, SettingId::kStartNs);
  return start == nullptr ? 0 : UnixNsOfMonotonic(std::strtoull(start, nullptr, 10));
}

bool TakenByThisRun(const std::string& path, uint64_t run_start_unix_ns) {
  struct stat st {};
  if (run_start_unix_ns == 0 || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return false;
  }
  const uint64_t modified = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull +
                            static_cast<uint64_t>(st.st_mtim.tv_nsec);
  return modified + kFileClockSlackNs >= run_start_unix_ns;
}

bool CaptureWindowConfigured(const Config& config) {
  return config.delay_s > 0 || config.duration_s > 0 || config.capture_range != CaptureRange::kNone ||
         config.max_duration_s > 0 || config.max_size_bytes > 0;
}

std::string WindowedPattern(const Config& config, const std::string& pattern) {
  if (config.flight_recorder_s <= 0 || OutputPatternHasWindow(pattern)) return pattern;
  if (IsFolderPattern(pattern)) return pattern + "rank%r_%w.wst";
  return WithSuffixBeforeExtension(pattern, "_%w");
}

TracePatternChoice ChooseProcessPattern(const Config& config, uint32_t ppid,
                                        const GetEnvFn& getenv_fn) {
  TracePatternChoice choice = ChooseTracePattern(config.output_pattern, ppid, getenv_fn);
  // `record`'s own child was given the name `record` checked, window 1's: its later windows
  // and its dumps need the pattern itself, which expands to that name for window 1.
  const char* original = Variable(getenv_fn, SettingId::kRecordOutputPattern);
  if (!choice.step_aside_if_taken && original != nullptr &&
      Variable(getenv_fn, SettingId::kLauncherPid) != nullptr &&
      (config.flight_recorder_s > 0 || OutputPatternHasWindow(original))) {
    choice.pattern = original;
  }
  choice.pattern = WindowedPattern(config, choice.pattern);
  return choice;
}

bool ProcessTraceName(const Config& config, const HeaderRecord& header, const GetEnvFn& getenv_fn,
                      uint32_t window, std::string* path, std::string* error) {
  const TracePatternChoice choice = ChooseProcessPattern(config, header.ppid, getenv_fn);
  return ExpandOutputPattern(choice.pattern, header.pid, header.hostname, getenv_fn, FileExists,
                             path, error, window) &&
         (!IsFolderPattern(choice.pattern) || MakeOutputFolder(*path, error));
}

std::unique_ptr<TraceWriter> OpenProcessTrace(const Config& config, const HeaderRecord& header,
                                              const GetEnvFn& getenv_fn, std::string* error) {
  const TracePatternChoice choice = ChooseProcessPattern(config, header.ppid, getenv_fn);
  TraceWriterOptions options;
  if (!ExpandOutputPattern(choice.pattern, header.pid, header.hostname, getenv_fn, FileExists,
                           &options.path, error) ||
      (IsFolderPattern(choice.pattern) && !MakeOutputFolder(options.path, error))) {
    *error += "; running without profiling";
    return nullptr;
  }
  options.force_overwrite = config.force_overwrite;
  options.max_buffered_bytes = static_cast<size_t>(config.writer_memory_mb) << 20;
  options.flush_interval_ms = config.flush_interval_ms;
  options.remove_if_no_work = !CaptureWindowConfigured(config);
  options.keep_definitions = OutputPatternHasWindow(choice.pattern);
  if (config.flight_recorder_s > 0) {
    options.ring_ns = static_cast<uint64_t>(config.flight_recorder_s * 1e9);
    options.max_buffered_bytes = static_cast<size_t>(config.flight_recorder_mb) << 20;
  }
  if (choice.step_aside_if_taken && options.ring_ns == 0) {
    options.rename_if_exists = [start = RunStartUnixNs(getenv_fn),
                                pid = header.pid](const std::string& path) {
      return TakenByThisRun(path, start)
                 ? WithSuffixBeforeExtension(path, "_" + std::to_string(pid))
                 : std::string();
    };
  }
  std::unique_ptr<TraceWriter> writer = TraceWriter::Open(options, header, error);
  if (writer == nullptr && error->empty()) *error = "warpscope: cannot open the trace file";
  return writer;
}

}  // namespace warpscope
