// Entry point of the `warpscope` CLI: dispatches to a subcommand (commands.h).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "analyzers/cli/commands.h"
#include "proto/settings/setting_error.h"

namespace warpscope {
namespace {

// Add new subcommands here, in the order `warpscope help` should list them.
const CommandInfo kCommands[] = {
    {"record", "run a program with warpscope injected and write a .wst trace", RunRecordCommand},
    {"info", "header, devices, event counts, time span, drops and truncation of a trace",
     RunInfoCommand},
    {"summary", "kernel, API, memory and NVTX statistics; GPU idle time", RunSummaryCommand},
    {"occupancy", "theoretical vs achieved occupancy, limiter, advice", RunOccupancyCommand},
    {"tail", "active-warp curves (PM samples): long tails ranked by cost", RunTailCommand},
    {"stalls", "warp stall reasons per kernel (PC samples), with advice; hottest lines and PCs",
     RunStallsCommand},
    {"diff", "what changed between two traces, ranked by impact; exit status for CI",
     RunDiffCommand},
    {"advise", "findings ranked by the time a fix would save; HTML report", RunAdviseCommand},
    {"job", "all ranks of a job: collectives matched, waiting, the straggler and its cause",
     RunJobCommand},
    {"export", "traces as Perfetto protobuf, Chrome JSON, Kineto JSON (HTA) or Parquet",
     RunExportCommand},
    {"timeline", "an SVG picture of a stretch of the trace: threads and GPU streams",
     RunTimelineCommand},
    {"status", "running processes with warpscope: rank, job, trace, capture window", RunStatusCommand},
    {"start", "open a capture window now in running processes (--rank, --job, --all)",
     RunStartCommand},
    {"stop", "close the open capture window in running processes", RunStopCommand},
    {"dump", "write running processes' flight recorder out", RunDumpCommand},
};

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "warpscope %s: a CUDA profiler (trace with `record`, analyze the .wst file)\n\n"
               "usage: warpscope COMMAND [flags] ...\n\ncommands:\n",
               WARPSCOPE_VERSION);
  for (const CommandInfo& cmd : kCommands) std::fprintf(out, "  %-11s %s\n", cmd.name, cmd.summary);
  std::fprintf(out,
               "\n`warpscope help COMMAND` or `warpscope COMMAND --help` describes a command.\n");
}

}  // namespace
}  // namespace warpscope

int main(int argc, char** argv) {
  using warpscope::kCommands;
  if (argc < 2) {
    warpscope::PrintUsage(stderr);
    return 2;
  }
  const bool help = std::strcmp(argv[1], "help") == 0;
  if (help && argc >= 3) {
    // `warpscope help COMMAND` is `warpscope COMMAND --help`.
    for (const warpscope::CommandInfo& cmd : kCommands) {
      if (std::strcmp(argv[2], cmd.name) == 0) return cmd.run({"--help"});
    }
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
  for (const warpscope::CommandInfo& cmd : kCommands) {
    if (std::strcmp(argv[1], cmd.name) == 0) {
      return cmd.run(std::vector<std::string>(argv + 2, argv + argc));
    }
  }
  std::fprintf(stderr, "warpscope: unknown command %s; run `warpscope help` for the list\n",
               warpscope::QuoteValue(argv[1]).c_str());
  return 2;
}
