// Environment planning and the traces a run left, for `warpscope record` (see record.h).
#include "analyzers/launcher/record.h"

#include <glob.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/launcher/setting_check.h"
#include "analyzers/render/output_path.h"
#include "collectors/pc_sampling/pc_sampling_config.h"
#include "libinject/config.h"
#include "libinject/trace_name.h"
#include "proto/settings/setting_error.h"
#include "proto/writer/output_name.h"
#include "proto/writer/stats_table.h"

namespace warpscope {
namespace {

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A library message without its "warpscope: ", which the CLI adds.
std::string WithoutPrefix(std::string message) {
  constexpr std::string_view kPrefix = "warpscope: ";
  if (message.rfind(kPrefix, 0) == 0) message.erase(0, kPrefix.size());
  return message;
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Where each record flag of the settings table lands in a RecordRequest: a value flag in an
// optional string, a switch in a bool. `copied`: the value goes into the flag's variable as
// typed (-c is decided together with -p in BuildRecordPlan).
struct RecordFlagField {
  SettingId id;
  std::optional<std::string> RecordRequest::*value;
  bool RecordRequest::*on;
  bool copied;
};
constexpr RecordFlagField kRecordFlagFields[] = {
    {SettingId::kOutput, &RecordRequest::output, nullptr, true},
    {SettingId::kForceOverwrite, nullptr, &RecordRequest::force_overwrite, true},
    {SettingId::kDelay, &RecordRequest::delay, nullptr, true},
    {SettingId::kDuration, &RecordRequest::duration, nullptr, true},
    {SettingId::kCaptureRange, &RecordRequest::capture_range, nullptr, false},
    {SettingId::kNvtxCapture, &RecordRequest::nvtx_capture, nullptr, true},
    {SettingId::kCaptureRangeEnd, &RecordRequest::capture_range_end, nullptr, true},
    {SettingId::kTrace, &RecordRequest::trace, nullptr, true},
    {SettingId::kCaptureSignal, &RecordRequest::capture_signal, nullptr, true},
    {SettingId::kFlushIntervalMs, &RecordRequest::flush_interval_ms, nullptr, true},
    {SettingId::kBufferSizeMb, &RecordRequest::buffer_size_mb, nullptr, true},
    {SettingId::kDeviceBufferMb, &RecordRequest::device_buffer_mb, nullptr, true},
    {SettingId::kLogLevel, &RecordRequest::log_level, nullptr, true},
    {SettingId::kQuiet, nullptr, &RecordRequest::quiet, true},
    {SettingId::kMaxSize, &RecordRequest::max_size, nullptr, true},
    {SettingId::kMaxDuration, &RecordRequest::max_duration, nullptr, true},
    {SettingId::kFlightRecorder, &RecordRequest::flight_recorder, nullptr, true},
    {SettingId::kFlightRecorderMb, &RecordRequest::flight_recorder_mb, nullptr, true},
    {SettingId::kSlowStep, &RecordRequest::slow_step, nullptr, true},
    {SettingId::kSlowStepThreshold, &RecordRequest::slow_step_threshold, nullptr, true},
    {SettingId::kSlowStepFactor, &RecordRequest::slow_step_factor, nullptr, true},
    {SettingId::kPmSampling, nullptr, &RecordRequest::pm_sampling, true},
    {SettingId::kPmInterval, &RecordRequest::pm_interval, nullptr, true},
    {SettingId::kPmMetrics, &RecordRequest::pm_metrics, nullptr, true},
    {SettingId::kPmBuffer, &RecordRequest::pm_buffer, nullptr, true},
    {SettingId::kPcSampling, nullptr, &RecordRequest::pc_sampling, true},
    {SettingId::kPcPeriod, &RecordRequest::pc_period, nullptr, true},
    {SettingId::kStacks, &RecordRequest::stacks, nullptr, true},
    {SettingId::kStackDepth, &RecordRequest::stack_depth, nullptr, true},
};

const RecordFlagField* FieldFor(SettingId id) {
  for (const RecordFlagField& f : kRecordFlagFields) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

// How an error names a variable: its record flag, or the variable itself.
std::string RecordFlagFor(std::string_view variable) {
  const SettingSpec* spec = FindSetting(variable);
  return spec != nullptr && !spec->flag.empty() ? spec->FlagName() : std::string(variable);
}

using Env = std::map<std::string, std::string>;

// An error about a value names what the user typed: the flag when it came from one, else
// the variable exported in the shell.
absl::Status FlagError(const SettingError& e) {
  return absl::InvalidArgumentError(
      absl::StrCat(e.ForFlag(RecordFlagFor(e.variable)), "; see warpscope record --help"));
}
absl::Status Refused(const SettingError& e, const Env& env) {
  if (env.count(e.variable) > 0) return FlagError(e);
  return absl::InvalidArgumentError(
      absl::StrCat(e.ForVariable(), " (set in the environment; fix or unset it)"));
}

// Each flag's value is checked with the parser of the layer that reads its variable; the
// PM and PC switches are set by PlanSampling, once their other flags are checked.
absl::Status CopyFlagValues(const RecordRequest& r, Env& env) {
  for (const RecordFlagField& f : kRecordFlagFields) {
    const SettingSpec& spec = Setting(f.id);
    const std::string variable(spec.variable);
    if (f.value != nullptr && (r.*f.value).has_value()) {
      if (std::optional<SettingError> e = CheckSettingValue(spec, *(r.*f.value))) {
        return FlagError(*e);
      }
      if (f.copied) env[variable] = *(r.*f.value);
    }
    if (f.on != nullptr && r.*f.on && spec.owner != SettingOwner::kCollectors) env[variable] = "1";
  }
  return absl::OkStatus();
}

// -c and -p decide the capture range together: -p alone means nvtx.
absl::Status PlanCaptureRange(const RecordRequest& r, Env& env) {
  std::string what;  // the values were checked by CopyFlagValues
  CaptureRange range = CaptureRange::kNone;
  if (r.capture_range) ParseCaptureRange(*r.capture_range, &range, &what);
  if (r.nvtx_capture) {
    if (r.capture_range && range != CaptureRange::kNvtx) {
      return absl::InvalidArgumentError(
          "-p/--nvtx-capture only applies with -c nvtx (or no -c, which then means nvtx)");
    }
    range = CaptureRange::kNvtx;
  } else if (range == CaptureRange::kNvtx) {
    return absl::InvalidArgumentError(
        "-c nvtx needs the range to wait for: -p RANGE or -p RANGE@DOMAIN");
  }
  // Also `-c none`, so that it overrides a WARPSCOPE_CAPTURE_RANGE exported in the shell.
  if (r.capture_range || range != CaptureRange::kNone) {
    env[std::string(Setting(SettingId::kCaptureRange).variable)] =
        std::string(CaptureRangeName(range));
  }
  if (r.capture_range_end) {
    CaptureRangeEnd end = CaptureRangeEnd::kStop;
    uint32_t windows = 0;
    ParseCaptureRangeEnd(*r.capture_range_end, &end, &windows, &what);
    if (range == CaptureRange::kNone && end == CaptureRangeEnd::kRepeat) {
      return absl::InvalidArgumentError(
          "--capture-range-end repeat needs -c cudaProfilerApi, nvtx or signal");
    }
  }
  return absl::OkStatus();
}

absl::Status PlanSampling(const RecordRequest& r, const Env& current_env, Env& env) {
  if ((r.pm_interval || r.pm_metrics || r.pm_buffer) && !r.pm_sampling) {
    return absl::InvalidArgumentError(
        "--pm-interval, --pm-metrics and --pm-buffer need --pm-sampling");
  }
  if (r.pm_sampling) env[std::string(Setting(SettingId::kPmSampling).variable)] = "1";

  if (r.pc_period && !r.pc_sampling) {
    return absl::InvalidArgumentError("--pc-period needs --pc-sampling");
  }
  if (r.pc_sampling && r.pm_sampling) {
    // The library would keep PM sampling and drop PC sampling (one line, a Notice); on the
    // command line the choice is the user's.
    return absl::InvalidArgumentError(
        "--pc-sampling and --pm-sampling cannot share the GPU (PC sampling cannot start "
        "while PM sampling holds the counters); record them in two runs");
  }
  if (!r.pc_sampling) return absl::OkStatus();
  env[std::string(Setting(SettingId::kPcSampling).variable)] = "1";
  PcSamplingConfig pc;
  SettingError pc_error;
  auto pc_env = [&env, &current_env](std::string_view name) -> std::string {
    auto it = env.find(std::string(name));
    if (it != env.end()) return it->second;
    auto exported = current_env.find(std::string(name));
    return exported == current_env.end() ? std::string() : exported->second;
  };
  if (!LoadPcSamplingConfig(pc_env, &pc, &pc_error)) return Refused(pc_error, env);
  return absl::OkStatus();
}

// Whole-configuration check with the library's parser: the child sees exactly these values
// (plus any WARPSCOPE_* the user exported, which the flags override). Then the trace file:
// -o, else an exported WARPSCOPE_OUTPUT, else the default; likewise -f.
absl::Status PlanOutput(const RecordRequest& r, const Env& current_env, uint32_t launcher_pid,
                        RecordPlan& plan) {
  Env merged;
  for (const auto& [k, v] : current_env) {
    if (k.rfind("WARPSCOPE_", 0) == 0) merged[k] = v;
  }
  for (const auto& [k, v] : plan.env) merged[k] = v;
  Config config;
  SettingError error;
  auto getenv_fn = [&merged](const char* name) -> const char* {
    auto it = merged.find(name);
    return it == merged.end() ? nullptr : it->second.c_str();
  };
  if (!ParseConfig(getenv_fn, &config, &error)) return Refused(error, plan.env);

  // With the flight recorder every dump is a file: the names follow the pattern with "_%w"
  // (WindowedPattern), so the check before the launch is on the first dump's name and the
  // list at the end finds every dump.
  plan.output_pattern = WindowedPattern(config, config.output_pattern);
  plan.force_overwrite = config.force_overwrite;
  const SettingSpec& output = Setting(SettingId::kOutput);
  plan.output_name = r.output || merged.count(std::string(output.variable)) == 0
                         ? output.FlagName()
                         : std::string(output.variable);
  // A pattern that names a directory without the folder form's '/' would become DIR.wst
  // beside it, or DIR/..wst.
  const std::string& pattern = plan.output_pattern;
  const std::string last_component = pattern.substr(pattern.rfind('/') + 1);
  if (last_component == "." || last_component == ".." ||
      (pattern.find('%') == std::string::npos && !IsFolderPattern(pattern) &&
       IsDirectory(pattern))) {
    return absl::InvalidArgumentError(absl::StrCat(
        plan.output_name, " ", QuoteValue(pattern), " names a directory; write ",
        QuoteValue(pattern + "/"), " for one trace per process in it, or name a file in it, e.g. ",
        QuoteValue(pattern + "/run.wst")));
  }
  // The pattern's syntax; the name itself is checked once the program's pid is known.
  if (absl::StatusOr<std::string> name = ExpectedTracePath(pattern, launcher_pid, "host");
      !name.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(plan.output_name, ": ", name.status().message()));
  }
  return absl::OkStatus();
}

// `pattern` from the root: a relative one under this directory (its '%' escaped).
std::string AbsolutePattern(const std::string& pattern) {
  if (pattern.empty() || pattern[0] == '/') return pattern;
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return pattern;
  const std::string dir = LiteralOutputPattern(cwd);
  return dir == "/" ? dir + pattern : dir + "/" + pattern;
}

// Injection: the shim first in LD_PRELOAD (the user's entries kept after it), and both
// injection paths pointing at it.
void PlanInjection(const Env& current_env, const std::string& shim_path, uint32_t launcher_pid,
                   uint64_t start_ns, RecordPlan& plan) {
  Env& env = plan.env;
  auto get = [&current_env](const char* k) -> std::string {
    auto it = current_env.find(k);
    return it == current_env.end() ? std::string() : it->second;
  };
  std::string preload = get("LD_PRELOAD");
  env["LD_PRELOAD"] = preload.empty() ? shim_path : shim_path + ":" + preload;
  for (const char* k : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"}) {
    std::string old = get(k);
    if (!old.empty() && old != shim_path) {
      plan.warnings.push_back(absl::StrCat("warpscope: ", k, " was ", QuoteValue(old),
                                           "; replaced by warpscope's library for this run"));
    }
    env[k] = shim_path;
  }
  env[std::string(Setting(SettingId::kLauncherPid).variable)] = std::to_string(launcher_pid);
  env[std::string(Setting(SettingId::kStartNs).variable)] = std::to_string(start_ns);
  // The launched program gets the name checked here; every process below it expands this,
  // from this directory even where a launcher starts it in another (srun --chdir, a script's
  // cd), so that its trace lands where the end of the run looks for it.
  env[std::string(Setting(SettingId::kRecordOutputPattern).variable)] =
      AbsolutePattern(plan.output_pattern);
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
  if (r.output && r.output->empty()) {
    return absl::InvalidArgumentError("-o/--output needs a file name");
  }
  RecordPlan plan;
  if (absl::Status s = CopyFlagValues(r, plan.env); !s.ok()) return s;
  if (absl::Status s = PlanCaptureRange(r, plan.env); !s.ok()) return s;
  if (absl::Status s = PlanSampling(r, current_env, plan.env); !s.ok()) return s;
  if (absl::Status s = PlanOutput(r, current_env, launcher_pid, plan); !s.ok()) return s;
  PlanInjection(current_env, shim_path, launcher_pid, start_ns, plan);
  return plan;
}

bool SetRecordFlag(SettingId id, std::string value, RecordRequest* request) {
  const RecordFlagField* field = FieldFor(id);
  if (field == nullptr) return false;
  if (field->value != nullptr) request->*(field->value) = std::move(value);
  if (field->on != nullptr) request->*(field->on) = true;
  return true;
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
  struct stat st;
  if (::stat(shim.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat(
        shim, " is not a file; set WARPSCOPE_SHIM to the path of libwarpscope.so, or unset it"));
  }
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
    return absl::InvalidArgumentError(WithoutPrefix(error));
  }
  return out;
}

absl::StatusOr<bool> CheckTraceDestination(const std::string& path, bool force_overwrite,
                                           std::string_view output_name) {
  absl::StatusOr<bool> exists = CheckOutputPath(path, output_name, "run.wst");
  if (!exists.ok() || !*exists || force_overwrite) return exists;
  return absl::AlreadyExistsError(
      absl::StrCat(std::string(output_name), " ", QuoteValue(path),
                   " exists; pass -f/--force-overwrite to replace it, or choose another name"));
}

absl::StatusOr<bool> PrepareTraceDestination(const RecordPlan& plan, const std::string& path) {
  std::string error;
  if (IsFolderPattern(plan.output_pattern) && !MakeOutputFolder(path, &error)) {
    return absl::InvalidArgumentError(absl::StrCat(plan.output_name, ": ", WithoutPrefix(error)));
  }
  return CheckTraceDestination(path, plan.force_overwrite, plan.output_name);
}

std::string LiteralOutputPattern(const std::string& path) {
  std::string pattern;
  for (char c : path) {
    pattern += c;
    if (c == '%') pattern += '%';
  }
  return pattern;
}

namespace {

// Whether a header carries this launch's variables: the library copies every WARPSCOPE_*
// variable into it, and these two are this launch's own.
bool FromThisLaunch(const v1::Header& header, uint32_t launcher_pid, uint64_t start_ns) {
  std::string header_launcher, header_start;
  for (const v1::KeyValue& kv : header.config()) {
    if (kv.key() == Setting(SettingId::kLauncherPid).variable) header_launcher = kv.value();
    if (kv.key() == Setting(SettingId::kStartNs).variable) header_start = kv.value();
  }
  return header_launcher == std::to_string(launcher_pid) &&
         header_start == std::to_string(start_ns);
}

void AddGlobMatches(const std::string& pattern, std::set<std::string>* paths) {
  glob_t matches{};
  if (!pattern.empty() && ::glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) paths->insert(matches.gl_pathv[i]);
  }
  ::globfree(&matches);
}

constexpr char kNoTraceReason[] =
    "no process launched GPU work or pushed an NVTX range, or warpscope stepped aside; see the "
    "messages above";

// Why the run left no trace, said about the launched program's file.
std::string NoTraceLine(const RecordedRun& run) {
  const std::string& path = run.child_trace;
  if (!FileExists(path)) {
    return absl::StrCat("warpscope: no trace at ", path, " (", kNoTraceReason, ")");
  }
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(path);
  if (!reader.ok() && !run.child_trace_existed) {
    // Created during the run but unreadable: the program was killed before its first write.
    return absl::StrCat("warpscope: trace ", path, ": unreadable: ", reader.status().message());
  }
  return absl::StrCat("warpscope: no trace from this run (", kNoTraceReason, "); ", path,
                      run.child_trace_existed ? " is the earlier file, left as it was"
                                              : " was written by another process");
}

struct TraceFigures {
  uint64_t kernels = 0, copies = 0, api_calls = 0, nvtx_ranges = 0, dropped = 0;
};

TraceFigures FiguresOf(const TraceModel& model) {
  TraceFigures f{model.kernels.size(), model.memcpys.size() + model.memsets.size(),
                 model.api_calls.size(), model.nvtx_ranges.size(), 0};
  for (const StatCounter& c : model.stats) {
    if (c.name == stats::kCuptiDroppedRecords.name ||
        c.name.rfind(stats::kWriterDroppedPrefix, 0) == 0) {
      f.dropped += c.value;
    }
  }
  return f;
}

std::string FiguresText(const TraceFigures& f) {
  return absl::StrFormat("%d kernels, %d memcpy/memset, %d API calls, %d NVTX ranges", f.kernels,
                         f.copies, f.api_calls, f.nvtx_ranges);
}

// One trace's line; adds its figures to *total.
std::string TraceLine(const std::string& path, TraceFigures* total) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  if (!model.ok()) {
    return absl::StrCat("warpscope: trace ", path, ": unreadable: ", model.status().message());
  }
  const TraceFigures f = FiguresOf(*model);
  *total = {total->kernels + f.kernels, total->copies + f.copies, total->api_calls + f.api_calls,
            total->nvtx_ranges + f.nvtx_ranges, total->dropped + f.dropped};
  const std::optional<int64_t> rank = HeaderRank(model->header);
  std::string line = absl::StrFormat(
      "warpscope: trace %s%s: %s, %.3f s span, %d dropped", path,
      rank ? absl::StrCat(" (rank ", *rank, ")") : "", FiguresText(f),
      model->span.duration_ns() / 1e9, f.dropped);
  if (model->capture_windows.size() > 1 ||
      (model->capture_windows.size() == 1 &&
       model->capture_windows[0].begin_trigger != v1::CAPTURE_TRIGGER_PROCESS)) {
    absl::StrAppend(&line, ", ", model->capture_windows.size(), " capture window(s)");
  }
  if (model->truncation.truncated()) absl::StrAppend(&line, " (", model->truncation.Describe(), ")");
  return line;
}

}  // namespace

std::vector<std::string> FindRunTraces(const RecordedRun& run) {
  std::set<std::string> candidates = {run.child_trace};
  const std::string& pattern = run.output_pattern;
  AddGlobMatches(OutputPatternGlob(pattern), &candidates);
  if (!IsFolderPattern(pattern)) {
    AddGlobMatches(OutputPatternGlob(WithSuffixBeforeExtension(pattern, "_%p")), &candidates);
  }
  // The header decides, not the file's time: a file server's clock may differ from this
  // host's. Opening reads the header only.
  std::vector<std::pair<int64_t, std::string>> found;  // (rank, or max for none; path)
  for (const std::string& path : candidates) {
    absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(path);
    if (!reader.ok() || !FromThisLaunch((*reader)->header(), run.launcher_pid, run.start_ns)) {
      continue;
    }
    TraceHeader header;
    for (const v1::KeyValue& kv : (*reader)->header().rank_env()) {
      header.rank_env.emplace_back(kv.key(), kv.value());
    }
    found.emplace_back(HeaderRank(header).value_or(std::numeric_limits<int64_t>::max()), path);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  paths.reserve(found.size());
  for (auto& [rank, path] : found) paths.push_back(std::move(path));
  return paths;
}

std::string RecordOutcome(const RecordedRun& run) {
  const std::vector<std::string> traces = FindRunTraces(run);
  if (traces.empty()) return NoTraceLine(run);
  std::string out;
  TraceFigures total;
  for (const std::string& path : traces) {
    absl::StrAppend(&out, out.empty() ? "" : "\n", TraceLine(path, &total));
  }
  if (traces.size() > 1) {
    absl::StrAppend(&out, "\nwarpscope: ", traces.size(), " traces: ", FiguresText(total), ", ",
                    total.dropped, " dropped");
  }
  return out;
}
int ChildExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace warpscope
