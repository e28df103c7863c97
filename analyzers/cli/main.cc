// Entry point of the `warpscope` CLI: dispatches to a subcommand (commands.h).
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/cli/commands.h"
#include "proto/settings/setting_error.h"

namespace warpscope {
namespace {

// The commands that are not analyses (the analyses are the rows of analyses/analysis_list.cc),
// in the order `warpscope help` lists them: `record` first, the analyses, then these.
const CommandInfo kRecord = {"record", "run a program with warpscope injected and write a .wst trace",
                             RunRecordCommand};
const CommandInfo kCommands[] = {
    {"export", "traces as Perfetto protobuf, Chrome JSON, Kineto JSON (HTA) or Parquet",
     RunExportCommand},
    {"status", "running processes with warpscope: rank, job, trace, capture window", RunStatusCommand},
    {"start", "open a capture window now in running processes (--rank, --job, --all)",
     RunStartCommand},
    {"stop", "close the open capture window in running processes", RunStopCommand},
    {"dump", "write running processes' flight recorder out", RunDumpCommand},
};

// The command named `name`: an analysis row or one of the others; its exit code, or nullopt
// when there is no such command.
std::optional<int> RunNamedCommand(std::string_view name, const CommandArgs& args) {
  if (name == kRecord.name) return kRecord.run(args);
  if (const AnalysisRow* row = FindAnalysis(name)) return RunAnalysisCommand(*row, args);
  for (const CommandInfo& cmd : kCommands) {
    if (name == cmd.name) return cmd.run(args);
  }
  return std::nullopt;
}

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "warpscope %s: a CUDA profiler (trace with `record`, analyze the .wst file)\n\n"
               "usage: warpscope COMMAND [flags] ...\n\ncommands:\n",
               WARPSCOPE_VERSION);
  std::fprintf(out, "  %-11s %s\n", kRecord.name, kRecord.summary);
  for (const AnalysisRow& row : AnalysisRows()) {
    std::fprintf(out, "  %-11s %s\n", row.name.c_str(), row.summary.c_str());
  }
  for (const CommandInfo& cmd : kCommands) std::fprintf(out, "  %-11s %s\n", cmd.name, cmd.summary);
  std::fprintf(out,
               "\n`warpscope help COMMAND` or `warpscope COMMAND --help` describes a command.\n");
}

}  // namespace
}  // namespace warpscope

int main(int argc, char** argv) {
  if (argc < 2) {
    warpscope::PrintUsage(stderr);
    return 2;
  }
  const bool help = std::strcmp(argv[1], "help") == 0;
  if (help && argc >= 3) {
    // `warpscope help COMMAND` is `warpscope COMMAND --help`.
    if (std::optional<int> code = warpscope::RunNamedCommand(argv[2], {"--help"})) return *code;
    std::fprintf(stderr, "warpscope: unknown command %s; run `warpscope help` for the list\n",
                 warpscope::QuoteValue(argv[2]).c_str());
    return 2;
  }
  if (help || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    warpscope::PrintUsage(stdout);
    return 0;
  }
  if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0) {
    std::printf("warpscope %s\n", WARPSCOPE_VERSION);
    return 0;
  }
  if (std::optional<int> code = warpscope::RunNamedCommand(
          argv[1], std::vector<std::string>(argv + 2, argv + argc))) {
    return *code;
  }
  std::fprintf(stderr, "warpscope: unknown command %s; run `warpscope help` for the list\n",
               warpscope::QuoteValue(argv[1]).c_str());
  return 2;
}
