// The process side of `warpscope record`: runs the program with the planned environment,
// forwards termination and user signals to it, and waits for it. The program is held before
// exec until the trace's name, which needs its pid (%p), has been checked, so that a refused
// name runs nothing.
#ifndef WARPSCOPE_ANALYZERS_LAUNCHER_LAUNCH_H_
#define WARPSCOPE_ANALYZERS_LAUNCHER_LAUNCH_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/launcher/record.h"

namespace warpscope {

struct LaunchResult {
  std::string trace_path;      // the file the program was told to write
  bool trace_existed = false;  // a file was there before the launch (-f replaced it)
  int exec_errno = 0;          // why the program could not be run; 0 once it ran
  int wait_status = 0;         // as waitpid gives it
};

// Runs `command` (program and arguments, looked up on PATH) with `plan`'s environment and its
// trace named by the output pattern expanded for the program's pid. Fails before anything runs
// with the destination's error (PrepareTraceDestination), and with an INTERNAL error when no pipe
// or process could be made.
absl::StatusOr<LaunchResult> LaunchRecorded(const RecordPlan& plan,
                                            const std::vector<std::string>& command);

// The launcher's environment as a map, for BuildRecordPlan.
std::map<std::string, std::string> CurrentEnvironment();

// CLOCK_MONOTONIC now, in ns (the launch time a trace's header carries).
uint64_t MonotonicNs();

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_LAUNCHER_LAUNCH_H_
