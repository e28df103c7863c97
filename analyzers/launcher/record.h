// `warpscope record`: turns record flags into the environment of the profiled program
// (WARPSCOPE_* variables, LD_PRELOAD, CUDA/NVTX injection paths) and describes the trace it
// left. Pure functions here; the fork/exec/wait is launch.h.
#ifndef WARPSCOPE_ANALYZERS_LAUNCHER_RECORD_H_
#define WARPSCOPE_ANALYZERS_LAUNCHER_RECORD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/settings/settings.h"

namespace warpscope {

struct RecordRequest {
  std::optional<std::string> output;  // -o; unset: WARPSCOPE_OUTPUT, else warpscope_%p.wst
  bool force_overwrite = false;
  std::optional<std::string> delay, duration, capture_range, nvtx_capture, capture_range_end,
      trace, capture_signal, flush_interval_ms, buffer_size_mb, device_buffer_mb, log_level;
  bool quiet = false;
  // --max-size, --max-duration, --flight-recorder, --flight-recorder-mb, --slow-step,
  // --slow-step-threshold, --slow-step-factor
  std::optional<std::string> max_size, max_duration, flight_recorder, flight_recorder_mb,
      slow_step, slow_step_threshold, slow_step_factor;
  bool pm_sampling = false;  // --pm-sampling: PM sampling collector on
  std::optional<std::string> pm_interval, pm_metrics, pm_buffer;
  bool pc_sampling = false;  // --pc-sampling: PC sampling collector on
  std::optional<std::string> pc_period;  // --pc-period N: 2^N cycles (5..31, 0 = CUPTI's)
  std::optional<std::string> stacks;       // --stacks CALLS: syncs,copies,launches,allocs or none
  std::optional<std::string> stack_depth;  // --stack-depth N: frames kept (1..128)
  std::vector<std::string> command;  // program and its arguments
};

// Sets the request field of a record flag (proto/settings/settings.h): a value flag's string, a
// switch's bool (`value` unused). False for a setting without a record flag.
bool SetRecordFlag(SettingId id, std::string value, RecordRequest* request);

struct RecordPlan {
  // Variables to set in the child (values are final; LD_PRELOAD already merged).
  std::map<std::string, std::string> env;
  std::vector<std::string> warnings;  // one line each, printed before the launch
  // The trace file pattern in effect (-o, an exported WARPSCOPE_OUTPUT, or the default), how
  // messages name it, and whether an existing file may be replaced (-f or the variable).
  std::string output_pattern;
  std::string output_name;
  bool force_overwrite = false;
};

// Validates the request (same parsers as the injected library, so an error here is the error
// the library would give) and builds the child's environment. `current_env` is the
// launcher's environment; `shim_path` the absolute path of libwarpscope.so.
absl::StatusOr<RecordPlan> BuildRecordPlan(const RecordRequest& request,
                                           const std::map<std::string, std::string>& current_env,
                                           const std::string& shim_path, uint32_t launcher_pid,
                                           uint64_t start_ns);

// Where the shim is: $WARPSCOPE_SHIM if set, else <dir of the CLI>/../lib/libwarpscope.so.
// Fails with a message that says how to fix it when the file (or the core beside it) is
// missing.
absl::StatusOr<std::string> FindShim(const std::string& cli_path, const char* env_override);

// The trace file the child will write: the output pattern expanded with the child's pid.
absl::StatusOr<std::string> ExpectedTracePath(const std::string& pattern, uint32_t child_pid,
                                              const std::string& hostname);

// Checks, before the launch, the file the run will write (`path`: the output pattern expanded
// for the program's pid): it must be creatable (see CheckOutputPath), and a file already there
// is refused (AlreadyExists) unless `force_overwrite`. Returns whether a file is there.
// `output_name` is how messages name the setting ("-o/--output").
absl::StatusOr<bool> CheckTraceDestination(const std::string& path, bool force_overwrite,
                                           std::string_view output_name = "-o/--output");

// The same for `plan`'s trace, after making the folder of a folder pattern ("DIR/", one level).
absl::StatusOr<bool> PrepareTraceDestination(const RecordPlan& plan, const std::string& path);

// The output pattern that names exactly `path` when the library expands it again ('%'
// doubled), so that the launcher and the library agree on the file.
std::string LiteralOutputPattern(const std::string& path);

// What a run of `record` left behind, for the lines it prints at the end.
struct RecordedRun {
  std::string output_pattern;        // the user's pattern (RecordPlan::output_pattern)
  std::string child_trace;           // the name the launched program was given
  bool child_trace_existed = false;  // a file was there before the launch (-f replaced it)
  uint32_t launcher_pid = 0;
  uint64_t start_ns = 0;  // the launch time (WARPSCOPE_START_NS)
};

// The traces this run wrote: the launched program's file and every file the user's pattern
// can name (each escape a wildcard; with or without the "_<pid>" that a process below the
// launched one adds) whose header carries this launch's WARPSCOPE_LAUNCHER_PID and
// WARPSCOPE_START_NS. In rank order (traces without one last), then by name.
std::vector<std::string> FindRunTraces(const RecordedRun& run);

// The lines `record` prints after the program exited: one per trace this run wrote,
// "warpscope: trace PATH (rank 2): 1200 kernels, ..., 2.310 s span, 0 dropped", and a total
// when there are several; or one line on why this run left no trace. A file at the launched
// program's name that this run did not write (e.g. an older trace that -f would have replaced)
// is never described as this run's.
std::string RecordOutcome(const RecordedRun& run);

// Exit status of `warpscope record`: the child's code, or 128 + signal when it was killed.
int ChildExitCode(int wait_status);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_LAUNCHER_RECORD_H_
