// The subcommands of the `warpscope` CLI. Each takes the arguments after its name and
// returns the process exit code (0 ok, 1 analysis/input error, 2 usage error). All logic
// lives in analyzers/lib; these functions parse flags, call it and print.
#ifndef WARPSCOPE_ANALYZERS_CLI_COMMANDS_H_
#define WARPSCOPE_ANALYZERS_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace warpscope {

using CommandArgs = std::vector<std::string>;

struct CommandInfo {
  const char* name;
  const char* summary;  // one line for `warpscope help`
  int (*run)(const CommandArgs& args);
};

// Defined in cli/<name>_command.cc and listed in kCommands (main.cc).
int RunInfoCommand(const CommandArgs& args);
int RunRecordCommand(const CommandArgs& args);
int RunSummaryCommand(const CommandArgs& args);
int RunOccupancyCommand(const CommandArgs& args);
int RunTailCommand(const CommandArgs& args);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_CLI_COMMANDS_H_
