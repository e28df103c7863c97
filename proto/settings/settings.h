// The one table of WARPSCOPE_* settings: each variable with its `warpscope record` flag, its
// default (as the text a user would type), a one-line help and the parser that checks it.
// The library and the collectors take their variable names and defaults from here, `record
// --help` is generated from it, and the launcher names the flag of a refused value through it.
// docs/configuration.md documents the same rows (a test compares them).
#ifndef WARPSCOPE_PROTO_SETTINGS_SETTINGS_H_
#define WARPSCOPE_PROTO_SETTINGS_SETTINGS_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proto/settings/setting_error.h"

namespace warpscope {

// Every setting, in the order `warpscope record --help` lists the flags.
enum class SettingId {
  kOutput,
  kForceOverwrite,
  kDelay,
  kDuration,
  kCaptureRange,
  kNvtxCapture,
  kCaptureRangeEnd,
  kTrace,
  kCaptureSignal,
  kFlushIntervalMs,
  kBufferSizeMb,
  kDeviceBufferMb,
  kLogLevel,
  kQuiet,
  kMaxSize,
  kMaxDuration,
  kFlightRecorder,
  kFlightRecorderMb,
  kSlowStep,
  kSlowStepThreshold,
  kSlowStepFactor,
  kControl,
  kPmSampling,
  kPmInterval,
  kPmMetrics,
  kPmBuffer,
  kPcSampling,
  kPcPeriod,
  kStacks,
  kStackDepth,
  kStackLaunchEvery,
  // No record flag: set in the environment.
  kApiFilter,
  kAttachEarly,
  kClock,
  kDeviceBufferPool,
  kWriterMemoryMb,
  kHandleSignals,
  kPmDecodeBatch,
  kPmEvaluate,
  kPcBufferMb,
  kPcDebug,
  kDisable,
  kCorePath,
  kShim,
  kLauncherPid,
  kStartNs,
  kRecordOutputPattern,
  kMaxTraceGb,
  kCuptiLibrary,
  kCount,
};

// Which parser checks a value (analyzers/launcher/setting_check.cc dispatches on it; each
// owner calls the same parser directly).
enum class SettingParser {
  kOutputPattern,    // non-blank text (libinject/config.cc)
  kBool,             // ParseBool (libinject/config.h)
  kSeconds,          // ParseSeconds
  kCaptureRange,     // ParseCaptureRange
  kNvtxCapture,      // ParseNvtxCapture
  kCaptureRangeEnd,  // ParseCaptureRangeEnd
  kTraceKinds,       // ParseTraceKinds
  kSignal,           // ParseSignal
  kLogLevel,         // ParseLogLevel
  kClock,            // ParseClock
  kWholeNumber,      // ParseWholeNumber in [min, max] (proto/settings/setting_values.h)
  kPmInterval,       // ParsePmInterval (collectors/pm_sampling/pm_sampling_config.h)
  kPmBytes,          // ParsePmBytes
  kPmMetrics,        // ParsePmMetrics
  kPmEvaluation,     // ParsePmEvaluation
  kPcPeriod,         // 0, or a whole number in [min, max] (collectors/pc_sampling)
  kStackCalls,       // ParseStackCalls (collectors/stacks/stack_config.h)
  kBytes,            // ParseBytes (libinject/config.h)
  kFactor,           // ParseFactor
  kText,             // any text (paths, numbers set by the launcher): not checked
};

// Who reads the variable.
enum class SettingOwner {
  kLibrary,     // libinject/config.cc
  kPmSampling,  // collectors/pm_sampling/pm_sampling_config.cc
  kPcSampling,  // collectors/pc_sampling/pc_sampling_config.cc
  kStacks,      // collectors/stacks/stack_config.cc
  kCollectors,  // the session's collector registry (collector_interface.h)
  kShim,        // libinject/shim.c
  kLauncher,    // analyzers/launcher (`warpscope record`)
  kAnalyzers,   // the trace reader (analyzers/model)
};

struct SettingSpec {
  SettingId id;
  std::string_view variable;    // "WARPSCOPE_DELAY" (a literal: data() ends in a NUL)
  std::string_view flag;        // long record flag without dashes; empty: none
  std::string_view short_flag;  // one letter, or empty
  bool flag_is_switch;          // the flag takes no value and sets the variable to 1
  std::string_view value_name;  // shown in --help: "SECONDS"
  // What applies when the variable is unset, as a value the parser accepts; empty when
  // unset means something no value says (then `default_note` says what, if anything).
  std::string_view default_value;
  std::string_view default_note;  // e.g. "CUPTI's 3.2 MB"
  std::string_view help;          // one line for --help
  SettingParser parser;
  SettingOwner owner;
  uint64_t min = 0, max = 0;  // for kWholeNumber and kPcPeriod
  // The rest of the refusal after the quoted value, where the parser has no phrase of its own
  // (kWholeNumber, kPcPeriod) or the owner words it its own way.
  std::string_view refusal = {};

  // "-y/--delay", "--capture-range-end"; empty without a flag.
  std::string FlagName() const {
    if (flag.empty()) return {};
    std::string name = short_flag.empty() ? std::string() : "-" + std::string(short_flag) + "/";
    return name + "--" + std::string(flag);
  }
};

namespace settings_internal {
using P = SettingParser;
using O = SettingOwner;
using S = SettingId;

// The session: the trace file, capture windows, what is traced, buffers, messages.
inline constexpr auto kSessionRows = std::to_array<SettingSpec>({
    {S::kOutput, "WARPSCOPE_OUTPUT", "output", "o", false, "PATTERN", "warpscope_%p.wst", "",
     "trace file; %p pid, %h host, %r rank, %n sequence number, %q{VAR} environment variable; "
     "DIR/ = DIR/rank%r.wst",
     P::kOutputPattern, O::kLibrary},
    {S::kForceOverwrite, "WARPSCOPE_FORCE_OVERWRITE", "force-overwrite", "f", true, "", "0", "",
     "overwrite an existing trace file", P::kBool, O::kLibrary},
    {S::kDelay, "WARPSCOPE_DELAY", "delay", "y", false, "SECONDS", "0", "",
     "open no capture window before this (from launch)", P::kSeconds, O::kLibrary},
    {S::kDuration, "WARPSCOPE_DURATION", "duration", "d", false, "SECONDS", "0", "",
     "close each capture window after this long; 0 = never", P::kSeconds, O::kLibrary},
    {S::kCaptureRange, "WARPSCOPE_CAPTURE_RANGE", "capture-range", "c", false, "RANGE", "none", "",
     "none | cudaProfilerApi | nvtx | signal: what opens and closes capture windows",
     P::kCaptureRange, O::kLibrary},
    {S::kNvtxCapture, "WARPSCOPE_NVTX_CAPTURE", "nvtx-capture", "p", false, "RANGE[@DOMAIN]", "",
     "", "the NVTX push/pop range that is the window", P::kNvtxCapture, O::kLibrary},
    {S::kCaptureRangeEnd, "WARPSCOPE_CAPTURE_RANGE_END", "capture-range-end", "", false,
     "stop|repeat|repeat:N", "stop", "",
     "after a window closes: stop capturing, or wait for the next (N windows at most)",
     P::kCaptureRangeEnd, O::kLibrary},
    {S::kTrace, "WARPSCOPE_TRACE", "trace", "t", false, "KINDS", "cuda,nvtx,sync", "",
     "cuda,kernel,launch,memory,alloc,runtime,driver,nvtx,sync,overhead,graph (cuda = "
     "kernel,launch,memory,alloc,runtime)",
     P::kTraceKinds, O::kLibrary},
    {S::kCaptureSignal, "WARPSCOPE_CAPTURE_SIGNAL", "capture-signal", "", false, "SIGNAL",
     "SIGUSR2", "", "the signal that toggles the window for -c signal", P::kSignal, O::kLibrary},
    {S::kFlushIntervalMs, "WARPSCOPE_FLUSH_INTERVAL_MS", "flush-interval-ms", "", false, "MS",
     "250", "", "periodic flush of CUPTI buffers and the file", P::kWholeNumber, O::kLibrary, 10,
     600000, " is not a flush interval in ms (10-600000)"},
    {S::kBufferSizeMb, "WARPSCOPE_BUFFER_SIZE_MB", "buffer-size-mb", "", false, "MB", "2", "",
     "size of one CUPTI activity buffer", P::kWholeNumber, O::kLibrary, 1, 256,
     " is not a buffer size in MiB (1-256)"},
    {S::kDeviceBufferMb, "WARPSCOPE_DEVICE_BUFFER_MB", "device-buffer-mb", "", false, "MB", "",
     "CUPTI's 3.2 MB", "CUPTI device-side activity buffer", P::kWholeNumber, O::kLibrary, 1, 1024,
     " is not a device buffer size in MiB (1-1024)"},
    {S::kLogLevel, "WARPSCOPE_LOG_LEVEL", "log-level", "", false, "LEVEL", "warning", "",
     "error | warning | info | debug (library messages)", P::kLogLevel, O::kLibrary},
    {S::kQuiet, "WARPSCOPE_QUIET", "quiet", "q", true, "", "0", "",
     "library prints errors only; record prints no summary", P::kBool, O::kLibrary},
});

// Long jobs: caps on what windows write, the flight recorder, the control channel.
inline constexpr auto kLongJobRows = std::to_array<SettingSpec>({
    {S::kMaxSize, "WARPSCOPE_MAX_SIZE", "max-size", "", false, "BYTES", "0", "",
     "close a capture window once it has written this much (e.g. 2G); 0 = no cap", P::kBytes,
     O::kLibrary},
    {S::kMaxDuration, "WARPSCOPE_MAX_DURATION", "max-duration", "", false, "SECONDS", "0", "",
     "stop capturing once windows have been open this long in all; 0 = no cap", P::kSeconds,
     O::kLibrary},
    {S::kFlightRecorder, "WARPSCOPE_FLIGHT_RECORDER", "flight-recorder", "", false, "SECONDS",
     "0", "",
     "keep the last SECONDS of events in memory; write them only when asked (dump, signal, "
     "slow step, exit, crash)",
     P::kSeconds, O::kLibrary},
    {S::kFlightRecorderMb, "WARPSCOPE_FLIGHT_RECORDER_MB", "flight-recorder-mb", "", false, "MB",
     "256", "", "memory cap of the flight recorder's events (4-65536 MiB)", P::kWholeNumber,
     O::kLibrary, 4, 65536, " is not a memory size in MiB (4-65536)"},
    {S::kSlowStep, "WARPSCOPE_SLOW_STEP", "slow-step", "", false, "RANGE[@DOMAIN]", "", "",
     "the NVTX push/pop range that is one step: a slow one dumps the flight recorder",
     P::kNvtxCapture, O::kLibrary},
    {S::kSlowStepThreshold, "WARPSCOPE_SLOW_STEP_THRESHOLD", "slow-step-threshold", "", false,
     "SECONDS", "0", "", "a step longer than this is slow (e.g. 500ms); 0 = by the factor only",
     P::kSeconds, O::kLibrary},
    {S::kSlowStepFactor, "WARPSCOPE_SLOW_STEP_FACTOR", "slow-step-factor", "", false, "K", "3",
     "", "a step longer than K times the median of the steps before it is slow (1 < K <= 1000)",
     P::kFactor, O::kLibrary},
    {S::kControl, "WARPSCOPE_CONTROL", "", "", false, "", "1", "",
     "listen for warpscope start/stop/dump/status from the process's own user (and root)",
     P::kBool, O::kLibrary},
});

// PM and PC sampling, each off unless asked for.
inline constexpr auto kSamplingRows = std::to_array<SettingSpec>({
    {S::kPmSampling, "WARPSCOPE_PM_SAMPLING", "pm-sampling", "", true, "", "0", "",
     "sample GPU performance counters (active warps, SM and DRAM throughput) for occupancy and "
     "tail analysis",
     P::kBool, O::kCollectors},
    {S::kPmInterval, "WARPSCOPE_PM_INTERVAL", "pm-interval", "", false, "TIME", "200us", "",
     "PM sampling interval, e.g. 200us, 100us, 1ms", P::kPmInterval, O::kPmSampling},
    {S::kPmMetrics, "WARPSCOPE_PM_METRICS", "pm-metrics", "", false, "LIST", "", "",
     "sol (per-unit throughput, for warpscope sol) or comma-separated PM metrics replacing the "
     "default set (must be one pass)", P::kPmMetrics,
     O::kPmSampling},
    {S::kPmBuffer, "WARPSCOPE_PM_BUFFER", "pm-buffer", "", false, "BYTES", "128M", "",
     "PM sampling hardware buffer", P::kPmBytes, O::kPmSampling},
    {S::kPcSampling, "WARPSCOPE_PC_SAMPLING", "pc-sampling", "", true, "", "0", "",
     "sample warp PCs and stall reasons per instruction (not with --pm-sampling)", P::kBool,
     O::kCollectors},
    {S::kPcPeriod, "WARPSCOPE_PC_PERIOD", "pc-period", "", false, "N", "15", "",
     "PC sampling period 2^N GPU cycles, 5..31 (0: CUPTI's default)", P::kPcPeriod, O::kPcSampling,
     5, 31,
     " is not an exponent N from 5 to 31 (the period is 2^N GPU cycles, e.g. 15) or 0 (CUPTI's "
     "default)"},
});

// Tuning without a record flag: clocks, CUPTI pools, the writer's memory, debugging.
inline constexpr auto kTuningRows = std::to_array<SettingSpec>({
    {S::kApiFilter, "WARPSCOPE_API_FILTER", "", "", false, "", "1", "",
     "leave trivial runtime queries out: CUPTI does not record them", P::kBool, O::kLibrary},
    {S::kAttachEarly, "WARPSCOPE_ATTACH_EARLY", "", "", false, "", "1", "",
     "when no window opens at start (--delay, -c), switch the window's activity kinds on and off "
     "once at start, so that CUPTI attaches then and not when the first window opens",
     P::kBool, O::kLibrary},
    {S::kClock, "WARPSCOPE_CLOCK", "", "", false, "", "cupti", "",
     "cupti (CUPTI's default clock) or monotonic (a CLOCK_MONOTONIC timestamp callback)", P::kClock,
     O::kLibrary},
    {S::kDeviceBufferPool, "WARPSCOPE_DEVICE_BUFFER_POOL", "", "", false, "", "", "CUPTI's (250)",
     "CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT", P::kWholeNumber, O::kLibrary, 1, 100000,
     " is not a buffer count (1-100000)"},
    {S::kWriterMemoryMb, "WARPSCOPE_WRITER_MEMORY_MB", "", "", false, "", "64", "",
     "memory bound of the trace writer; beyond it events are dropped and counted", P::kWholeNumber,
     O::kLibrary, 4, 65536, " is not a memory size in MiB (4-65536)"},
    {S::kHandleSignals, "WARPSCOPE_HANDLE_SIGNALS", "", "", false, "", "1", "",
     "close the trace on SIGINT/SIGTERM, then re-raise", P::kBool, O::kLibrary},
    {S::kPmDecodeBatch, "WARPSCOPE_PM_DECODE_BATCH", "", "", false, "", "", "eight polls' worth",
     "the counter data image's capacity in samples", P::kWholeNumber, O::kPmSampling, 16, 65536,
     " is not a sample count from 16 to 65536"},
    {S::kPmEvaluate, "WARPSCOPE_PM_EVALUATE", "", "", false, "", "process", "",
     "where metric values are computed: process, offline or both", P::kPmEvaluation,
     O::kPmSampling},
    {S::kPcBufferMb, "WARPSCOPE_PC_BUFFER_MB", "", "", false, "", "",
     "64 at period 2^12 and longer, doubled per step shorter; 512 with CUPTI's period",
     "CUPTI hardware buffer per sampled context, MiB", P::kWholeNumber, O::kPcSampling, 1, 4096,
     " is not a whole number of MiB from 1 to 4096 (e.g. 64)"},
    {S::kPcDebug, "WARPSCOPE_PC_DEBUG", "", "", false, "", "0", "",
     "one stderr line per CUPTI PC sampling call", P::kBool, O::kPcSampling, 0, 0,
     " is not 0 or 1"},
});

// Call stacks at the CUDA calls that matter (collectors/stacks), on by default.
inline constexpr auto kStackRows = std::to_array<SettingSpec>({
    {S::kStacks, "WARPSCOPE_STACKS", "stacks", "", false, "CALLS", "syncs,copies,launches,allocs",
     "", "CUDA calls whose Python (or native) stack is recorded: syncs,copies,launches,allocs, or "
     "none",
     P::kStackCalls, O::kStacks, 0, 0,
     " is not a list of syncs, copies, launches, allocs (e.g. syncs,copies) or none"},
    {S::kStackDepth, "WARPSCOPE_STACK_DEPTH", "stack-depth", "", false, "N", "32", "",
     "frames kept per stack, innermost first (1-128)", P::kWholeNumber, O::kStacks, 1, 128,
     " is not a stack depth from 1 to 128"},
    {S::kStackLaunchEvery, "WARPSCOPE_STACK_LAUNCH_EVERY", "", "", false, "N", "0", "",
     "take the stack of every Nth kernel launch on each thread; 0: every launch with Python "
     "stacks, one in 1024 with native ones (a backtrace costs microseconds)",
     P::kWholeNumber, O::kStacks, 0, 1000000, " is not a whole number from 0 to 1000000"},
});

// Read outside the library: by the shim, by `warpscope record`, by the analyzers.
inline constexpr auto kOutsideRows = std::to_array<SettingSpec>({
    {S::kDisable, "WARPSCOPE_DISABLE", "", "", false, "", "", "",
     "read by the shim: a true value makes libwarpscope.so do nothing", P::kBool, O::kShim, 0, 0,
     " is not 1/true/yes/on or 0/false/no/off"},
    {S::kCorePath, "WARPSCOPE_CORE_PATH", "", "", false, "", "", "",
     "read by the shim: load the core from here", P::kText, O::kShim},
    {S::kShim, "WARPSCOPE_SHIM", "", "", false, "", "", "",
     "read by warpscope record: the shim to inject", P::kText, O::kLauncher},
    {S::kLauncherPid, "WARPSCOPE_LAUNCHER_PID", "", "", false, "", "", "",
     "set by warpscope record: its pid", P::kText, O::kLauncher},
    {S::kStartNs, "WARPSCOPE_START_NS", "", "", false, "", "", "",
     "set by warpscope record: its launch time (CLOCK_MONOTONIC ns)", P::kText, O::kLauncher},
    {S::kRecordOutputPattern, "WARPSCOPE_OUTPUT_PATTERN", "", "", false, "", "", "",
     "set by warpscope record: the output pattern as given, which every process below the one "
     "it launched expands for itself",
     P::kText, O::kLauncher},
    {S::kMaxTraceGb, "WARPSCOPE_MAX_TRACE_GB", "", "", false, "", "16", "",
     "largest trace file the analysis commands read, in GiB", P::kWholeNumber, O::kAnalyzers, 1,
     1048576, " is not a whole number of GiB from 1 to 1048576"},
    {S::kCuptiLibrary, "WARPSCOPE_CUPTI_LIBRARY", "", "", false, "", "", "",
     "libcupti.so.13 the analysis commands load to evaluate raw PM samples and map PCs to lines",
     P::kText, O::kAnalyzers},
});

// The groups above, one after another: the whole table.
template <size_t... N>
constexpr std::array<SettingSpec, (N + ...)> JoinRows(const std::array<SettingSpec, N>&... groups) {
  std::array<SettingSpec, (N + ...)> rows{};
  size_t next = 0;
  ((std::copy(groups.begin(), groups.end(), rows.begin() + next), next += N), ...);
  return rows;
}

inline constexpr auto kRows = JoinRows(kSessionRows, kLongJobRows, kSamplingRows, kStackRows, kTuningRows, kOutsideRows);
static_assert(kRows.size() == static_cast<size_t>(SettingId::kCount),
              "one row per SettingId");
}  // namespace settings_internal

inline constexpr const auto& kSettings = settings_internal::kRows;

// The row of a setting.
constexpr const SettingSpec& Setting(SettingId id) { return kSettings[static_cast<size_t>(id)]; }

// The row of a variable, or null when the table has none.
constexpr const SettingSpec* FindSetting(std::string_view variable) {
  for (const SettingSpec& s : kSettings) {
    if (s.variable == variable) return &s;
  }
  return nullptr;
}

// The rows are in SettingId order, so that Setting() is an index.
constexpr bool SettingsAreInIdOrder() {
  for (size_t i = 0; i < kSettings.size(); ++i) {
    if (static_cast<size_t>(kSettings[i].id) != i) return false;
  }
  return true;
}
static_assert(SettingsAreInIdOrder(), "kSettings rows must follow SettingId");

// Reads the rows of `owner` through `get_env` (a std::string, empty when unset) and hands each
// value that is set to `apply(spec, value, &problem)`, in the table's order. The first value
// refused wins: false, with *error naming its variable.
template <typename GetEnv, typename Apply>
bool LoadOwnedSettings(SettingOwner owner, const GetEnv& get_env, const Apply& apply,
                       SettingError* error) {
  for (const SettingSpec& spec : kSettings) {
    if (spec.owner != owner) continue;
    const std::string value = get_env(spec.variable);
    std::string problem;
    if (!value.empty() && !apply(spec, value, &problem)) {
      *error = SettingError{std::string(spec.variable), value, problem};
      return false;
    }
  }
  return true;
}

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_SETTINGS_SETTINGS_H_
