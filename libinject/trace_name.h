// How a process names and opens its trace. Under `warpscope record` the process it launched
// writes the name `record` checked; every process below it (the ranks that torchrun, mpirun or
// a script start) expands the user's pattern in its own environment, gets "_%p" when that
// pattern would give every process the same name, and steps aside to <name>_<pid> from a name
// another process of the same run took. Without `record`, each process expands its pattern as
// given. The trace is removed at the end when the process recorded no work and no capture
// window was asked for.
#ifndef WARPSCOPE_LIBINJECT_TRACE_NAME_H_
#define WARPSCOPE_LIBINJECT_TRACE_NAME_H_

#include <cstdint>
#include <memory>
#include <string>

#include "libinject/config.h"
#include "proto/writer/trace_records.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {

// The pattern a process expands, and whether it steps aside from a taken name.
struct TracePatternChoice {
  std::string pattern;
  bool step_aside_if_taken = false;  // a process below the one `record` launched
};

// For a process whose parent is `ppid`, whose configured pattern (WARPSCOPE_OUTPUT) is
// `configured`, in the environment `getenv_fn`.
TracePatternChoice ChooseTracePattern(const std::string& configured, uint32_t ppid,
                                      const GetEnvFn& getenv_fn);

// When the run began, in CLOCK_REALTIME ns (the clock of file times): `record`'s launch time
// (WARPSCOPE_START_NS, CLOCK_MONOTONIC of this host) moved by the two clocks read now; 0 when
// unknown, or not in the past here (another host's clock).
uint64_t RunStartUnixNs(const GetEnvFn& getenv_fn);

// Whether the regular file at `path` was made during this run: modified at or after
// `run_start_unix_ns` (0: unknown, false), less kFileClockSlackNs.
bool TakenByThisRun(const std::string& path, uint64_t run_start_unix_ns);
// File times come from the kernel's coarse clock, up to one tick (10 ms at HZ=100) behind
// CLOCK_REALTIME, or from a file server's clock (NFS), which may be a little behind this
// host's: a file made just after the launch can carry a time just before it. An older file
// taken for this run's costs only a "_<pid>" name.
inline constexpr uint64_t kFileClockSlackNs = 1'000'000'000;

// Whether the settings ask for a capture window (a delay, a duration or a capture range): then
// a trace without work is kept, since the program may just not have opened the window.
bool CaptureWindowConfigured(const Config& config);

// The pattern a process's files follow, %w included where there is one file per window: with
// the flight recorder, "_%w" goes before the extension of a pattern without %w (the folder
// form: DIR/rank%r_%w.wst), since every dump is a file of its own.
std::string WindowedPattern(const Config& config, const std::string& pattern);

// The pattern this process's files follow: ChooseTracePattern's, made WindowedPattern; for the
// process `record` launched, the pattern as given rather than the name `record` checked when
// there is a file per window or dump.
TracePatternChoice ChooseProcessPattern(const Config& config, uint32_t ppid,
                                        const GetEnvFn& getenv_fn);

// Opens this process's trace as the session does (header.pid, ppid and hostname name it). On
// failure nullptr and *error is one line starting with "warpscope:". With %w in the pattern,
// the file of window 1, and the writer keeps its definitions for the next windows' files;
// with the flight recorder, a writer that holds events in memory and makes no file.
std::unique_ptr<TraceWriter> OpenProcessTrace(const Config& config, const HeaderRecord& header,
                                              const GetEnvFn& getenv_fn, std::string* error);

// The file of capture window (or flight-recorder dump) `window` of this process: the pattern
// OpenProcessTrace used, with %w = `window`. False with *error (one line) on failure.
bool ProcessTraceName(const Config& config, const HeaderRecord& header, const GetEnvFn& getenv_fn,
                      uint32_t window, std::string* path, std::string* error);

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_TRACE_NAME_H_
