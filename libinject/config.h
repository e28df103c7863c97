// The session configuration read from WARPSCOPE_* environment variables: parsing and
// validation only (pure code, unit-tested). docs/configuration.md lists every variable.
#ifndef WARPSCOPE_LIBINJECT_CONFIG_H_
#define WARPSCOPE_LIBINJECT_CONFIG_H_

#include <signal.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/activity/trace_kinds.h"
#include "proto/settings/setting_error.h"
#include "proto/settings/settings.h"

namespace warpscope {

enum class CaptureRange { kNone, kProfilerApi, kNvtx, kSignal, kControl };
enum class CaptureRangeEnd { kStop, kRepeat };
enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

// The defaults here are the table's (proto/settings/settings.h), which ParseConfig applies; a
// test checks that the two agree.
struct Config {
  std::string output_pattern = "warpscope_%p.wst";
  bool force_overwrite = false;
  double delay_s = 0;        // no window opens before this many seconds after injection
  double duration_s = 0;     // a window closes after this long; 0 = no limit
  CaptureRange capture_range = CaptureRange::kNone;
  std::string nvtx_range_name;    // for kNvtx
  std::string nvtx_range_domain;  // empty = the default domain
  CaptureRangeEnd capture_range_end = CaptureRangeEnd::kStop;
  uint32_t max_windows = 1;       // repeat:N -> N; repeat -> 0 (no limit); stop -> 1
  TraceKinds trace;
  uint32_t buffer_size_mb = 2;          // CUPTI host activity buffer size
  uint32_t device_buffer_mb = 0;        // CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, 0 = CUPTI's
  uint32_t device_buffer_pool = 0;      // CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, 0 = CUPTI's
  uint32_t writer_memory_mb = 64;       // TraceWriter memory bound
  uint32_t flush_interval_ms = 250;     // periodic CUPTI + writer flush
  bool monotonic_clock = false;         // WARPSCOPE_CLOCK=monotonic: CUPTI timestamp callback
  bool api_filter = true;               // drop trivial runtime queries (cudaGetDevice, ...)
  bool attach_early = true;             // window kinds on and off at start (WARPSCOPE_ATTACH_EARLY)
  int capture_signal = SIGUSR2;
  bool handle_signals = true;           // flush on SIGINT/SIGTERM/SIGHUP, then re-raise
  LogLevel log_level = LogLevel::kWarning;
  bool quiet = false;                   // only errors on stderr
  uint64_t max_size_bytes = 0;          // a window closes after writing this much; 0 = no cap
  double max_duration_s = 0;            // all windows together; 0 = no cap
  double flight_recorder_s = 0;         // > 0: events go to a ring of this many seconds
  uint32_t flight_recorder_mb = 256;    // the ring's memory cap
  std::string slow_step_name;           // the step range of the flight recorder's trigger
  std::string slow_step_domain;
  double slow_step_threshold_s = 0;     // a step longer than this is slow; 0 = factor only
  double slow_step_factor = 3;          // a step longer than this times the median is slow
  bool control = true;                  // the control channel (warpscope start/stop/dump)

  // The variables as given, for the trace header (WARPSCOPE_* only).
  std::vector<std::pair<std::string, std::string>> raw;
};

using GetEnvFn = std::function<const char*(const char*)>;

// Reads every library setting of the table (proto/settings/settings.h) through `getenv_fn`. On the
// first invalid value returns false and sets *error to one line, e.g.
//   warpscope: WARPSCOPE_DELAY='abc' is not a number of seconds; running without profiling
bool ParseConfig(const GetEnvFn& getenv_fn, Config* config, std::string* error);
// The same, with the refusal typed (which variable, its value, what is wrong with it), for
// callers that name the setting their own way (`warpscope record` names the flag).
bool ParseConfig(const GetEnvFn& getenv_fn, Config* config, SettingError* error);

// Parses one library setting (a row of proto/settings/settings.h owned by kLibrary) into its
// field of *config. On a refused value returns false and sets *problem to the rest of the
// sentence after the quoted value (" is not a number of seconds"). Rows of other owners are
// left alone (true).
bool ApplyLibrarySetting(const SettingSpec& spec, std::string_view value, Config* config,
                         std::string* problem);

// Value parsers shared with `warpscope record` (they return false on a bad value and set
// *what to the phrase that follows "is not ", e.g. "a number of seconds").
bool ParseSeconds(std::string_view text, double* out, std::string* what);
bool ParseBool(std::string_view text, bool* out, std::string* what);
bool ParseCaptureRange(std::string_view text, CaptureRange* out, std::string* what);
bool ParseCaptureRangeEnd(std::string_view text, CaptureRangeEnd* end, uint32_t* max_windows,
                          std::string* what);
bool ParseTraceKinds(std::string_view text, TraceKinds* out, std::string* what);
bool ParseNvtxCapture(std::string_view text, std::string* name, std::string* domain,
                      std::string* what);
bool ParseSignal(std::string_view text, int* out, std::string* what);
bool ParseLogLevel(std::string_view text, LogLevel* out, std::string* what);
bool ParseClock(std::string_view text, bool* monotonic, std::string* what);
// A size in bytes, with an optional binary unit: 0, 4096, 512K, 64M, 2G, 1T (at most 1 PiB).
bool ParseBytes(std::string_view text, uint64_t* out, std::string* what);
// A factor K with 1 < K <= 1000 (e.g. 2, 2.5).
bool ParseFactor(std::string_view text, double* out, std::string* what);

std::string_view CaptureRangeName(CaptureRange range);
std::string TraceKindsString(const TraceKinds& kinds);

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_CONFIG_H_
