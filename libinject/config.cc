// Parsing and validation of the WARPSCOPE_* environment variables (see config.h).
#include "libinject/config.h"

#include <signal.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "proto/settings/setting_values.h"
#include "proto/settings/settings.h"

namespace warpscope {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view Trim(std::string_view s) { return TrimBlanks(s); }

bool ParseUint(std::string_view text, uint64_t min, uint64_t max, uint32_t* out) {
  uint64_t v = 0;
  if (!ParseWholeNumber(text, min, max, &v)) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

struct SignalName {
  const char* name;
  int number;
};
constexpr SignalName kSignals[] = {
    {"hup", SIGHUP},   {"int", SIGINT},   {"quit", SIGQUIT}, {"usr1", SIGUSR1},
    {"usr2", SIGUSR2}, {"term", SIGTERM}, {"alrm", SIGALRM}, {"cont", SIGCONT},
    {"winch", SIGWINCH}, {"pwr", SIGPWR}, {"urg", SIGURG},   {"prof", SIGPROF},
};

}  // namespace

bool ParseSeconds(std::string_view text, double* out, std::string* what) {
  // Longest accepted duration, in seconds after the unit is applied (about 115 days): far
  // beyond any run, and small enough to be exact in nanoseconds.
  constexpr double kMaxSeconds = 1e7;
  std::string s(Trim(text));
  // Accept an optional unit suffix: s, ms, m.
  double scale = 1;
  if (s.size() > 2 && s.ends_with("ms")) {
    scale = 1e-3;
    s.resize(s.size() - 2);
  } else if (s.size() > 1 && s.back() == 's') {
    s.pop_back();
  } else if (s.size() > 1 && s.back() == 'm') {
    scale = 60;
    s.pop_back();
  }
  char* end = nullptr;
  errno = 0;
  double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || end == nullptr || *end != '\0' || !std::isfinite(v) || v < 0) {
    *what = "a number of seconds";
    return false;
  }
  // The range is checked on the duration itself, so that 1e7m is refused like 1e8.
  const double seconds = v * scale;
  if (seconds > kMaxSeconds) {
    *what = "a number of seconds from 0 to 10000000 (115 days)";
    return false;
  }
  *out = seconds;
  return true;
}

bool ParseBool(std::string_view text, bool* out, std::string* what) {
  if (ParseBoolSetting(text, out)) return true;
  *what = "a boolean (1/0, true/false, yes/no, on/off)";
  return false;
}

bool ParseCaptureRange(std::string_view text, CaptureRange* out, std::string* what) {
  std::string s = Lower(Trim(text));
  if (s == "none" || s.empty()) {
    *out = CaptureRange::kNone;
  } else if (s == "cudaprofilerapi") {
    *out = CaptureRange::kProfilerApi;
  } else if (s == "nvtx") {
    *out = CaptureRange::kNvtx;
  } else if (s == "signal") {
    *out = CaptureRange::kSignal;
  } else if (s == "control") {
    *out = CaptureRange::kControl;
  } else {
    *what = "a capture range (none, cudaProfilerApi, nvtx, signal, control)";
    return false;
  }
  return true;
}

bool ParseCaptureRangeEnd(std::string_view text, CaptureRangeEnd* end, uint32_t* max_windows,
                          std::string* what) {
  std::string s = Lower(Trim(text));
  *what = "a capture range end (stop, repeat, repeat:N with N >= 1)";
  if (s == "stop" || s.empty()) {
    *end = CaptureRangeEnd::kStop;
    *max_windows = 1;
    return true;
  }
  if (s == "repeat") {
    *end = CaptureRangeEnd::kRepeat;
    *max_windows = 0;
    return true;
  }
  if (s.starts_with("repeat:")) {
    uint32_t n = 0;
    if (!ParseUint(std::string_view(s).substr(7), 1, 1000000, &n)) return false;
    *end = CaptureRangeEnd::kRepeat;
    *max_windows = n;
    return true;
  }
  return false;
}

bool ParseTraceKinds(std::string_view text, TraceKinds* out, std::string* what) {
  TraceKinds k;
  k.kernel = k.launch = k.memory = k.alloc = k.runtime = k.driver = k.nvtx = k.sync =
      k.overhead = k.graph = false;
  std::string s = Lower(text);
  size_t pos = 0;
  bool any = false;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string_view item = Trim(std::string_view(s).substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) continue;
    any = true;
    if (item == "cuda") {
      k.kernel = k.launch = k.memory = k.alloc = k.runtime = true;
    } else if (item == "kernel") {
      k.kernel = true;
    } else if (item == "launch") {
      k.launch = true;
    } else if (item == "memory") {
      k.memory = true;
    } else if (item == "alloc") {
      k.alloc = true;
    } else if (item == "runtime") {
      k.runtime = true;
    } else if (item == "driver") {
      k.driver = true;
    } else if (item == "nvtx") {
      k.nvtx = true;
    } else if (item == "sync") {
      k.sync = true;
    } else if (item == "overhead") {
      k.overhead = true;
    } else if (item == "graph") {
      k.graph = true;
    } else if (item == "none") {
    } else {
      *what = "a list of trace kinds (cuda, kernel, launch, memory, alloc, runtime, driver, "
              "nvtx, sync, overhead, graph, none)";
      return false;
    }
  }
  if (!any) {
    *what = "a list of trace kinds (cuda, kernel, launch, memory, alloc, runtime, driver, "
            "nvtx, sync, overhead, graph, none)";
    return false;
  }
  *out = k;
  return true;
}

bool ParseNvtxCapture(std::string_view text, std::string* name, std::string* domain,
                      std::string* what) {
  // RANGE[@DOMAIN]; the last '@' separates, so names may contain '@' when a domain is given.
  std::string_view t = Trim(text);
  size_t at = t.rfind('@');
  std::string_view n = at == std::string_view::npos ? t : t.substr(0, at);
  std::string_view d = at == std::string_view::npos ? std::string_view() : t.substr(at + 1);
  if (n.empty() || (at != std::string_view::npos && d.empty())) {
    *what = "an NVTX range name (RANGE or RANGE@DOMAIN)";
    return false;
  }
  *name = std::string(n);
  *domain = std::string(d);
  return true;
}

bool ParseSignal(std::string_view text, int* out, std::string* what) {
  *what = "a signal (a name like SIGUSR2 or USR2, or a number)";
  std::string s = Lower(Trim(text));
  if (s.starts_with("sig")) s = s.substr(3);
  int sig = 0;
  uint32_t n = 0;
  if (ParseUint(s, 1, 64, &n)) {
    sig = static_cast<int>(n);
  } else {
    for (const SignalName& entry : kSignals) {
      if (s == entry.name) sig = entry.number;
    }
    if (s.starts_with("rtmin+")) {
      if (ParseUint(std::string_view(s).substr(6), 0, 30, &n)) sig = SIGRTMIN + static_cast<int>(n);
    }
  }
  if (sig <= 0 || sig >= NSIG) return false;
  if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
      sig == SIGILL || sig == SIGABRT || sig == SIGCHLD || sig == SIGPIPE) {
    *what = "a signal that can be used for capture (not KILL, STOP, SEGV, BUS, FPE, ILL, ABRT, "
            "CHLD, PIPE)";
    return false;
  }
  *out = sig;
  return true;
}

bool ParseLogLevel(std::string_view text, LogLevel* out, std::string* what) {
  std::string s = Lower(Trim(text));
  if (s == "error") {
    *out = LogLevel::kError;
  } else if (s == "warning" || s == "warn" || s.empty()) {
    *out = LogLevel::kWarning;
  } else if (s == "info") {
    *out = LogLevel::kInfo;
  } else if (s == "debug") {
    *out = LogLevel::kDebug;
  } else {
    *what = "a log level (error, warning, info, debug)";
    return false;
  }
  return true;
}

bool ParseClock(std::string_view text, bool* monotonic, std::string* what) {
  std::string s = Lower(Trim(text));
  if (s == "cupti" || s == "realtime" || s.empty()) {
    *monotonic = false;
  } else if (s == "monotonic") {
    *monotonic = true;
  } else {
    *what = "a clock (cupti, monotonic)";
    return false;
  }
  return true;
}

bool ParseBytes(std::string_view text, uint64_t* out, std::string* what) {
  *what = "a size in bytes (e.g. 0, 512M, 2G; units K, M, G, T are binary; at most 1P)";
  std::string s(Trim(text));
  double scale = 1;
  if (s.size() > 3 && (s.ends_with("KiB") || s.ends_with("MiB") || s.ends_with("GiB") ||
                       s.ends_with("TiB"))) {
    s.resize(s.size() - 2);
  } else if (s.size() > 1 && s.back() == 'B') {
    s.pop_back();
  }
  if (!s.empty()) {
    const char unit = s.back();
    const double k = 1024.0;
    if (unit == 'K' || unit == 'k') scale = k;
    if (unit == 'M') scale = k * k;
    if (unit == 'G') scale = k * k * k;
    if (unit == 'T') scale = k * k * k * k;
    if (scale != 1) s.pop_back();
  }
  char* end = nullptr;
  errno = 0;
  const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || end == nullptr || *end != '\0' || !std::isfinite(v) || v < 0) {
    return false;
  }
  const double bytes = std::floor(v * scale);
  if (bytes > 1024.0 * 1024 * 1024 * 1024 * 1024) return false;
  *out = static_cast<uint64_t>(bytes);
  return true;
}

bool ParseFactor(std::string_view text, double* out, std::string* what) {
  *what = "a factor greater than 1 and at most 1000 (e.g. 2.5)";
  std::string s(Trim(text));
  if (s.size() > 1 && (s.back() == 'x' || s.back() == 'X')) s.pop_back();
  char* end = nullptr;
  errno = 0;
  const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || end == nullptr || *end != '\0' || !std::isfinite(v) || v <= 1 ||
      v > 1000) {
    return false;
  }
  *out = v;
  return true;
}

std::string_view CaptureRangeName(CaptureRange range) {
  switch (range) {
    case CaptureRange::kNone: return "none";
    case CaptureRange::kProfilerApi: return "cudaProfilerApi";
    case CaptureRange::kNvtx: return "nvtx";
    case CaptureRange::kSignal: return "signal";
    case CaptureRange::kControl: return "control";
  }
  return "none";
}

std::string TraceKindsString(const TraceKinds& k) {
  std::string out;
  auto add = [&out](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ',';
    out += name;
  };
  add(k.kernel, "kernel");
  add(k.launch, "launch");
  add(k.memory, "memory");
  add(k.alloc, "alloc");
  add(k.runtime, "runtime");
  add(k.driver, "driver");
  add(k.nvtx, "nvtx");
  add(k.sync, "sync");
  add(k.overhead, "overhead");
  add(k.graph, "graph");
  return out.empty() ? "none" : out;
}

bool ParseConfig(const GetEnvFn& getenv_fn, Config* config, std::string* error) {
  SettingError refused;
  if (ParseConfig(getenv_fn, config, &refused)) return true;
  *error = "warpscope: " + refused.ForVariable() + "; running without profiling";
  return false;
}

namespace {

// How the text of one library setting lands in a Config. False when the text is refused, with
// `what` saying what was expected (empty where the setting's row words the refusal).
using ApplySettingFn = bool (*)(std::string_view v, const SettingSpec& spec, Config* c,
                                std::string* what);

// A setting read by a parser of the form Parse(text, &field, &what).
template <auto Parse, auto Field>
bool Parsed(std::string_view v, const SettingSpec& /*spec*/, Config* c, std::string* what) {
  return Parse(v, &(c->*Field), what);
}

// A whole number held to the [min, max] of the setting's row.
template <auto Field>
bool InRange(std::string_view v, const SettingSpec& spec, Config* c, std::string* /*what*/) {
  return ParseUint(v, spec.min, spec.max, &(c->*Field));
}

// An NVTX range given as RANGE or RANGE@DOMAIN, into a name and a domain.
template <auto Name, auto Domain>
bool NvtxRange(std::string_view v, const SettingSpec& /*spec*/, Config* c, std::string* what) {
  return ParseNvtxCapture(v, &(c->*Name), &(c->*Domain), what);
}

bool ApplyOutputPattern(std::string_view v, const SettingSpec& /*spec*/, Config* c,
                        std::string* what) {
  *what = "an output file name pattern";
  if (Trim(v).empty()) return false;
  c->output_pattern = std::string(Trim(v));
  return true;
}

bool ApplyCaptureRangeEnd(std::string_view v, const SettingSpec& /*spec*/, Config* c,
                          std::string* what) {
  return ParseCaptureRangeEnd(v, &c->capture_range_end, &c->max_windows, what);
}

struct LibrarySettingRow {
  SettingId id;
  ApplySettingFn apply;
};

// One row per setting the injected library reads (SettingOwner::kLibrary).
constexpr LibrarySettingRow kLibrarySettingRows[] = {
    {SettingId::kOutput, ApplyOutputPattern},
    {SettingId::kForceOverwrite, Parsed<ParseBool, &Config::force_overwrite>},
    {SettingId::kDelay, Parsed<ParseSeconds, &Config::delay_s>},
    {SettingId::kDuration, Parsed<ParseSeconds, &Config::duration_s>},
    {SettingId::kCaptureRange, Parsed<ParseCaptureRange, &Config::capture_range>},
    {SettingId::kNvtxCapture, NvtxRange<&Config::nvtx_range_name, &Config::nvtx_range_domain>},
    {SettingId::kCaptureRangeEnd, ApplyCaptureRangeEnd},
    {SettingId::kTrace, Parsed<ParseTraceKinds, &Config::trace>},
    {SettingId::kCaptureSignal, Parsed<ParseSignal, &Config::capture_signal>},
    {SettingId::kFlushIntervalMs, InRange<&Config::flush_interval_ms>},
    {SettingId::kBufferSizeMb, InRange<&Config::buffer_size_mb>},
    {SettingId::kDeviceBufferMb, InRange<&Config::device_buffer_mb>},
    {SettingId::kDeviceBufferPool, InRange<&Config::device_buffer_pool>},
    {SettingId::kWriterMemoryMb, InRange<&Config::writer_memory_mb>},
    {SettingId::kLogLevel, Parsed<ParseLogLevel, &Config::log_level>},
    {SettingId::kQuiet, Parsed<ParseBool, &Config::quiet>},
    {SettingId::kApiFilter, Parsed<ParseBool, &Config::api_filter>},
    {SettingId::kAttachEarly, Parsed<ParseBool, &Config::attach_early>},
    {SettingId::kClock, Parsed<ParseClock, &Config::monotonic_clock>},
    {SettingId::kHandleSignals, Parsed<ParseBool, &Config::handle_signals>},
    {SettingId::kMaxSize, Parsed<ParseBytes, &Config::max_size_bytes>},
    {SettingId::kMaxDuration, Parsed<ParseSeconds, &Config::max_duration_s>},
    {SettingId::kFlightRecorder, Parsed<ParseSeconds, &Config::flight_recorder_s>},
    {SettingId::kFlightRecorderMb, InRange<&Config::flight_recorder_mb>},
    {SettingId::kSlowStep, NvtxRange<&Config::slow_step_name, &Config::slow_step_domain>},
    {SettingId::kSlowStepThreshold, Parsed<ParseSeconds, &Config::slow_step_threshold_s>},
    {SettingId::kSlowStepFactor, Parsed<ParseFactor, &Config::slow_step_factor>},
    {SettingId::kControl, Parsed<ParseBool, &Config::control>},
};

}  // namespace

bool ApplyLibrarySetting(const SettingSpec& spec, std::string_view v, Config* c,
                         std::string* problem) {
  for (const LibrarySettingRow& row : kLibrarySettingRows) {
    if (row.id != spec.id) continue;
    std::string what;
    const bool ok = row.apply(v, spec, c, &what);
    if (!ok) *problem = spec.refusal.empty() ? " is not " + what : std::string(spec.refusal);
    return ok;
  }
  return true;  // not a library setting
}

bool ParseConfig(const GetEnvFn& getenv_fn, Config* config, SettingError* error) {
  // Every library setting starts from the table's default and is then read from its
  // variable, in the table's order; the first refused value wins.
  Config c;
  for (const SettingSpec& spec : kSettings) {
    if (spec.owner != SettingOwner::kLibrary) continue;
    std::string problem;
    if (!spec.default_value.empty()) ApplyLibrarySetting(spec, spec.default_value, &c, &problem);
    const char* v = getenv_fn(spec.variable.data());
    if (v == nullptr) continue;
    c.raw.emplace_back(spec.variable, v);
    if (!ApplyLibrarySetting(spec, v, &c, &problem)) {
      *error = SettingError{std::string(spec.variable), v, problem};
      return false;
    }
  }
  // Cross-field checks: the variable at fault is the one whose value needs another.
  auto refuse = [&c, error](SettingId id, const char* problem) {
    const std::string_view name = Setting(id).variable;
    std::string value;
    for (const auto& [k, v] : c.raw) {
      if (k == name) value = v;
    }
    *error = SettingError{std::string(name), value, problem};
    return false;
  };
  if (c.capture_range == CaptureRange::kNvtx && c.nvtx_range_name.empty()) {
    return refuse(SettingId::kCaptureRange, " needs WARPSCOPE_NVTX_CAPTURE=RANGE[@DOMAIN]");
  }
  if (c.capture_range == CaptureRange::kNone && c.capture_range_end == CaptureRangeEnd::kRepeat) {
    return refuse(SettingId::kCaptureRangeEnd,
                  " needs a capture range (WARPSCOPE_CAPTURE_RANGE=cudaProfilerApi, nvtx or "
                  "signal)");
  }
  if (!c.slow_step_name.empty() && c.flight_recorder_s == 0) {
    return refuse(SettingId::kSlowStep,
                  " needs the flight recorder (WARPSCOPE_FLIGHT_RECORDER=SECONDS): a slow step "
                  "dumps the events it holds");
  }
  if (c.flight_recorder_s > 0 && c.capture_range != CaptureRange::kNone &&
      c.capture_range != CaptureRange::kSignal) {
    return refuse(SettingId::kFlightRecorder,
                  " records all the time and writes on a trigger: it takes no capture range "
                  "but none, or signal (the capture signal then asks for a dump)");
  }
  if (c.flight_recorder_s > 0 && (c.duration_s > 0 || c.max_size_bytes > 0 ||
                                  c.max_duration_s > 0)) {
    return refuse(SettingId::kFlightRecorder,
                  " holds the last SECONDS of events: --duration, --max-size and --max-duration "
                  "do not apply to it");
  }
  if (c.capture_range == CaptureRange::kSignal && c.handle_signals &&
      (c.capture_signal == SIGINT || c.capture_signal == SIGTERM || c.capture_signal == SIGHUP)) {
    return refuse(SettingId::kCaptureSignal,
                  " is also a termination signal warpscope handles; pick another (default "
                  "SIGUSR2)");
  }
  *config = std::move(c);
  return true;
}

}  // namespace warpscope
