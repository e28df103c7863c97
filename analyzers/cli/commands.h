// The subcommands of the `warpscope` CLI. Each takes the arguments after its name and
// returns the process exit code (0 ok, 1 analysis/input error, 2 usage error). All logic
// lives in analyzers/analyses; these functions parse flags, call it and print.
#ifndef WARPSCOPE_ANALYZERS_CLI_COMMANDS_H_
#define WARPSCOPE_ANALYZERS_CLI_COMMANDS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analyzers/cli/flags.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/short_names.h"

namespace warpscope {

using CommandArgs = std::vector<std::string>;

struct CommandInfo {
  const char* name;
  const char* summary;  // one line for `warpscope help`
  int (*run)(const CommandArgs& args);
};

// Prints `warpscope: <message>` on stderr and returns `exit_code` (2 for usage errors, 1 for
// inputs that cannot be used), so every command reports errors the same way.
int ReportError(const absl::Status& status, int exit_code);
inline int UsageError(const absl::Status& status) { return ReportError(status, 2); }
inline int InputError(const absl::Status& status) { return ReportError(status, 1); }

// Loads a trace for an analysis command; a trace that was cut short is read up to its last
// whole packet with a one-line notice on stderr. Errors are printed (exit code 1 to return).
absl::StatusOr<TraceModel> LoadTraceForCommand(const std::string& path,
                                               const TraceModelOptions& options = {});
// LoadTraceForCommand for each path, in order; `pointers` then points into `models`. False
// (errors printed) when one could not be loaded.
bool LoadTracesForCommand(const std::vector<std::string>& paths, std::vector<TraceModel>* models,
                          std::vector<const TraceModel*>* pointers,
                          const TraceModelOptions& options = {});

// The steps every analysis command takes, written once (report_error.cc).
//
// How many trace files a command takes: exactly one, one or more, or a count it checks itself.
enum class TraceFiles { kOne, kOneOrMore, kCheckedByCommand };
// Parses `args` into `flags`: a usage error is printed and 2 returned; --help prints the
// flag list, then `about` (may be empty), and returns 0; trace files other than `traces`
// says are a usage error ("<command> needs exactly one trace file; see warpscope <command>
// --help"); otherwise nullopt and the command goes on.
std::optional<int> ParseCommandFlags(FlagSet& flags, const CommandArgs& args, TraceFiles traces,
                                     const char* about);
// A count flag such as --top: a whole number, 0 or more, capped at 2^20.
absl::StatusOr<size_t> GetCountFlag(const FlagSet& flags, const std::string& name);
// --device N: a device id when given, nullopt when not.
absl::StatusOr<std::optional<uint32_t>> GetDeviceFlag(const FlagSet& flags);
// Writes `content` to `path`, the value of `flag`; the error names both and errno's text.
absl::Status WriteOutputFile(const std::string& path, const std::string& flag,
                             const std::string& content);
// --short-names, taken by every command that prints kernel names (short_names_flag.cc).
FlagSpec ShortNamesFlag();
// Kernel names as --short-names asks (render/short_names.h): whole without the flag; with it,
// short and distinct over every kernel name of `models` and `more` (names a report takes
// from elsewhere, such as PC samples).
KernelNames KernelNamesOfFlag(const FlagSet& flags, const std::vector<const TraceModel*>& models,
                              const std::vector<std::string_view>& more = {});

// Defined in cli/<name>_command.cc and listed in kCommands (main.cc).
int RunInfoCommand(const CommandArgs& args);
int RunRecordCommand(const CommandArgs& args);
int RunSummaryCommand(const CommandArgs& args);
int RunOccupancyCommand(const CommandArgs& args);
int RunTailCommand(const CommandArgs& args);
int RunStallsCommand(const CommandArgs& args);
int RunDiffCommand(const CommandArgs& args);
int RunAdviseCommand(const CommandArgs& args);
int RunExportCommand(const CommandArgs& args);
int RunTimelineCommand(const CommandArgs& args);
int RunJobCommand(const CommandArgs& args);
// control_command.cc: commands to running processes through their control channel.
int RunStatusCommand(const CommandArgs& args);
int RunStartCommand(const CommandArgs& args);
int RunStopCommand(const CommandArgs& args);
int RunDumpCommand(const CommandArgs& args);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_CLI_COMMANDS_H_
