// The subcommands of the `warpscope` CLI. Each takes the arguments after its name and
// returns the process exit code (0 ok, 1 analysis/input error, 2 usage error). All logic
// lives in analyzers/analyses; the analyses are rows of one list (analyses/analysis.h) that
// one runner serves; record, export and the control commands parse flags, call it and print.
#ifndef WARPSCOPE_ANALYZERS_CLI_COMMANDS_H_
#define WARPSCOPE_ANALYZERS_CLI_COMMANDS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analyzers/cli/flags.h"
#include "analyzers/render/output_path.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/slice.h"

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

// Loads each trace, in order, for a command, only the part `slice` asks for (slice.h); a
// trace that was cut short is read up to its last whole packet with a one-line notice on
// stderr. `pointers` then points into `models`. False (errors printed) when one could not
// be loaded or the slice selects nothing in it.
bool LoadTracesForCommand(const std::vector<std::string>& paths, std::vector<TraceModel>* models,
                          std::vector<const TraceModel*>* pointers,
                          const TraceModelOptions& options = {},
                          const SliceRequest& slice = {});

// An analysis row's option as a flag (the runner's rows, the export command's slice options).
FlagSpec FlagOf(const AnalysisOption& option);

// Parses `args` into `flags`: a usage error is printed and 2 returned; --help prints the
// flag list, then `about` (may be empty), and returns 0; otherwise nullopt and the command
// goes on.
std::optional<int> ParseCommandFlags(FlagSet& flags, const CommandArgs& args,
                                     std::string_view about);

// Runs the analysis `row` (analyses/analysis.h) on the command line `args`
// (analysis_runner.cc): every command of the list of analyses is this.
int RunAnalysisCommand(const AnalysisRow& row, const CommandArgs& args);

// The commands that are not analyses: defined in cli/<name>_command.cc and listed in
// kCommands (main.cc).
int RunRecordCommand(const CommandArgs& args);
int RunExportCommand(const CommandArgs& args);
// control_command.cc: commands to running processes through their control channel.
int RunStatusCommand(const CommandArgs& args);
int RunStartCommand(const CommandArgs& args);
int RunStopCommand(const CommandArgs& args);
int RunDumpCommand(const CommandArgs& args);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_CLI_COMMANDS_H_
