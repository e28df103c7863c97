// Environment planning and trace description for `warpscope record` (see record.h).
#include "analyzers/lib/record.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/lib/trace_model.h"
#include "collectors/pm_sampling/pm_sampling_config.h"
#include "libinject/config.h"
#include "libinject/trace_writer.h"

namespace warpscope {
namespace {

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

absl::StatusOr<RecordPlan> BuildRecordPlan(const RecordRequest& r,
                                           const std::map<std::string, std::string>& current_env,
                                           const std::string& shim_path, uint32_t launcher_pid,
                                           uint64_t start_ns) {
  if (r.command.empty()) {
    return absl::InvalidArgumentError(
        "record needs a command to run, e.g. `warpscope record -o run.wst -- ./app args`");
  }
  RecordPlan plan;
  auto& env = plan.env;
  std::string what;
  auto bad = [&what](const char* flag, const std::string& value) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", value, "' is not ", what, "; see warpscope record --help"));
  };
  if (r.output.empty()) return absl::InvalidArgumentError("-o/--output needs a file name");
  env["WARPSCOPE_OUTPUT"] = r.output;
  if (r.force_overwrite) env["WARPSCOPE_FORCE_OVERWRITE"] = "1";
  double seconds = 0;
  if (r.delay) {
    if (!ParseSeconds(*r.delay, &seconds, &what)) return bad("-y/--delay", *r.delay);
    env["WARPSCOPE_DELAY"] = *r.delay;
  }
  if (r.duration) {
    if (!ParseSeconds(*r.duration, &seconds, &what)) return bad("-d/--duration", *r.duration);
    env["WARPSCOPE_DURATION"] = *r.duration;
  }
  CaptureRange range = CaptureRange::kNone;
  if (r.capture_range) {
    if (!ParseCaptureRange(*r.capture_range, &range, &what)) {
      return bad("-c/--capture-range", *r.capture_range);
    }
  }
  if (r.nvtx_capture) {
    std::string name, domain;
    if (!ParseNvtxCapture(*r.nvtx_capture, &name, &domain, &what)) {
      return bad("-p/--nvtx-capture", *r.nvtx_capture);
    }
    if (r.capture_range && range != CaptureRange::kNvtx) {
      return absl::InvalidArgumentError(
          "-p/--nvtx-capture only applies with -c nvtx (or no -c, which then means nvtx)");
    }
    range = CaptureRange::kNvtx;
    env["WARPSCOPE_NVTX_CAPTURE"] = *r.nvtx_capture;
  } else if (range == CaptureRange::kNvtx) {
    return absl::InvalidArgumentError(
        "-c nvtx needs the range to wait for: -p RANGE or -p RANGE@DOMAIN");
  }
  if (range != CaptureRange::kNone) env["WARPSCOPE_CAPTURE_RANGE"] = std::string(CaptureRangeName(range));
  if (r.capture_range_end) {
    CaptureRangeEnd end;
    uint32_t windows = 0;
    if (!ParseCaptureRangeEnd(*r.capture_range_end, &end, &windows, &what)) {
      return bad("--capture-range-end", *r.capture_range_end);
    }
    if (range == CaptureRange::kNone && end == CaptureRangeEnd::kRepeat) {
      return absl::InvalidArgumentError(
          "--capture-range-end repeat needs -c cudaProfilerApi, nvtx or signal");
    }
    env["WARPSCOPE_CAPTURE_RANGE_END"] = *r.capture_range_end;
  }
  if (r.trace) {
    TraceKinds kinds;
    if (!ParseTraceKinds(*r.trace, &kinds, &what)) return bad("-t/--trace", *r.trace);
    env["WARPSCOPE_TRACE"] = *r.trace;
  }
  if (r.capture_signal) {
    int sig = 0;
    if (!ParseSignal(*r.capture_signal, &sig, &what)) return bad("--capture-signal", *r.capture_signal);
    env["WARPSCOPE_CAPTURE_SIGNAL"] = *r.capture_signal;
  }
  // The remaining numeric settings go through the library's own parser below.
  if (r.flush_interval_ms) env["WARPSCOPE_FLUSH_INTERVAL_MS"] = *r.flush_interval_ms;
  if (r.buffer_size_mb) env["WARPSCOPE_BUFFER_SIZE_MB"] = *r.buffer_size_mb;
  if (r.device_buffer_mb) env["WARPSCOPE_DEVICE_BUFFER_MB"] = *r.device_buffer_mb;
  if (r.log_level) env["WARPSCOPE_LOG_LEVEL"] = *r.log_level;
  if (r.quiet) env["WARPSCOPE_QUIET"] = "1";
  if ((r.pm_interval || r.pm_metrics || r.pm_buffer) && !r.pm_sampling) {
    return absl::InvalidArgumentError(
        "--pm-interval, --pm-metrics and --pm-buffer need --pm-sampling");
  }
  if (r.pm_sampling) {
    env["WARPSCOPE_PM_SAMPLING"] = "1";
    if (r.pm_interval) env["WARPSCOPE_PM_INTERVAL"] = *r.pm_interval;
    if (r.pm_metrics) env["WARPSCOPE_PM_METRICS"] = *r.pm_metrics;
    if (r.pm_buffer) env["WARPSCOPE_PM_BUFFER"] = *r.pm_buffer;
    // Same parser as the collector, so the launcher refuses what the library would.
    PmSamplingConfig pm;
    std::string pm_error;
    auto pm_env = [&env](std::string_view name) -> std::string {
      auto it = env.find(std::string(name));
      return it == env.end() ? std::string() : it->second;
    };
    if (!LoadPmSamplingConfig(pm_env, &pm, &pm_error)) {
      std::string msg = pm_error;
      if (msg.rfind("warpscope: ", 0) == 0) msg = msg.substr(11);
      if (size_t tail = msg.rfind("; PM sampling stays off"); tail != std::string::npos) {
        msg.resize(tail);
      }
      // Name the flag the user typed, not the variable it became: --pm-buffer '9G': ...
      using VarFlag = std::pair<std::string_view, std::string_view>;
      for (const auto& [var, flag] : {VarFlag{"WARPSCOPE_PM_INTERVAL=", "--pm-interval "},
                                      VarFlag{"WARPSCOPE_PM_METRICS=", "--pm-metrics "},
                                      VarFlag{"WARPSCOPE_PM_BUFFER=", "--pm-buffer "}}) {
        if (msg.rfind(var, 0) == 0) msg = std::string(flag) + msg.substr(var.size());
      }
      return absl::InvalidArgumentError(msg);
    }
  }

  // Whole-configuration check with the library's parser: the child sees exactly these
  // values (plus any WARPSCOPE_* the user exported, which the flags override).
  std::map<std::string, std::string> merged;
  for (const auto& [k, v] : current_env) {
    if (k.rfind("WARPSCOPE_", 0) == 0) merged[k] = v;
  }
  for (const auto& [k, v] : env) merged[k] = v;
  Config config;
  std::string error;
  auto getenv_fn = [&merged](const char* name) -> const char* {
    auto it = merged.find(name);
    return it == merged.end() ? nullptr : it->second.c_str();
  };
  if (!ParseConfig(getenv_fn, &config, &error)) {
    // "warpscope: X='v' is not ...; running without profiling" -> drop the tail.
    std::string msg = error;
    if (msg.rfind("warpscope: ", 0) == 0) msg = msg.substr(11);
    size_t tail = msg.rfind("; running without profiling");
    if (tail != std::string::npos) msg.resize(tail);
    return absl::InvalidArgumentError(msg);
  }

  // Injection: the shim first in LD_PRELOAD (the user's entries kept after it), and both
  // injection paths pointing at it.
  auto get = [&current_env](const char* k) -> std::string {
    auto it = current_env.find(k);
    return it == current_env.end() ? std::string() : it->second;
  };
  std::string preload = get("LD_PRELOAD");
  env["LD_PRELOAD"] = preload.empty() ? shim_path : shim_path + ":" + preload;
  for (const char* k : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"}) {
    std::string old = get(k);
    if (!old.empty() && old != shim_path) {
      plan.warnings.push_back(absl::StrCat("warpscope: ", k, " was '", old,
                                           "'; replaced by warpscope's library for this run"));
    }
    env[k] = shim_path;
  }
  env["WARPSCOPE_LAUNCHER_PID"] = std::to_string(launcher_pid);
  env["WARPSCOPE_START_NS"] = std::to_string(start_ns);
  return plan;
}

absl::StatusOr<std::string> FindShim(const std::string& cli_path, const char* env_override) {
  std::string shim;
  if (env_override != nullptr && env_override[0] != '\0') {
    shim = env_override;
  } else {
    shim = Dirname(cli_path) + "/../lib/libwarpscope.so";
  }
  char resolved[4096];
  if (realpath(shim.c_str(), resolved) == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "cannot find the warpscope library at ", shim,
        " (build the warpscope_inject target, or set WARPSCOPE_SHIM=/path/to/libwarpscope.so)"));
  }
  shim = resolved;
  std::string core = Dirname(shim) + "/libwarpscope_core.so";
  if (!FileExists(core)) {
    return absl::NotFoundError(absl::StrCat("found ", shim, " but not ", core,
                                            " beside it; build the warpscope_inject target"));
  }
  return shim;
}

absl::StatusOr<std::string> ExpectedTracePath(const std::string& pattern, uint32_t child_pid,
                                              const std::string& hostname) {
  std::string out, error;
  if (!ExpandOutputPattern(
          pattern, child_pid, hostname, [](const char* n) { return std::getenv(n); },
          [](const std::string& p) { return FileExists(p); }, &out, &error)) {
    return absl::InvalidArgumentError(error);
  }
  return out;
}

std::string DescribeTrace(const std::string& path) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  if (!model.ok()) return absl::StrCat("unreadable: ", model.status().message());
  uint64_t dropped = 0;
  for (const StatCounter& c : model->stats) {
    if (c.name == "cupti.dropped_records" || c.name.rfind("writer.events_dropped", 0) == 0) {
      dropped += c.value;
    }
  }
  std::string line = absl::StrFormat(
      "%d kernels, %d memcpy/memset, %d API calls, %d NVTX ranges, %.3f s span, %d dropped",
      model->kernels.size(), model->memcpys.size() + model->memsets.size(),
      model->api_calls.size(), model->nvtx_ranges.size(), model->span.duration_ns() / 1e9,
      dropped);
  if (model->capture_windows.size() > 1 ||
      (model->capture_windows.size() == 1 &&
       model->capture_windows[0].begin_trigger != v1::CAPTURE_TRIGGER_PROCESS)) {
    absl::StrAppend(&line, ", ", model->capture_windows.size(), " capture window(s)");
  }
  if (model->truncation.truncated()) absl::StrAppend(&line, " (", model->truncation.Describe(), ")");
  return line;
}

int ChildExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace warpscope
