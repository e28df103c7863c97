// `warpscope occupancy TRACE`: theoretical vs achieved occupancy per kernel name and launch
// configuration, with advice (analyzers/analyses/occupancy.h).
#include <cstdio>
#include <string>

#include "analyzers/analyses/occupancy.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/output.h"

namespace warpscope {
int RunOccupancyCommand(const CommandArgs& args) {
  FlagSet flags("occupancy", "TRACE.wst [flags]",
                {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
                 {"kernel", "k", true, "REGEX", "only kernels whose name matches (RE2 syntax)", ""},
                 {"top", "n", true, "N", "keep the N rows with the most GPU time (0 = all)", "0"},
                 ShortNamesFlag()});
  if (std::optional<int> exit = ParseCommandFlags(
          flags, args, TraceFiles::kOne,
          "Theoretical occupancy comes from CUDA's occupancy calculator (cuda_occupancy.h) "
          "fed with the\ntrace's device limits and launch configuration; achieved occupancy "
          "from PM samples\n(record with --pm-sampling). See docs/occupancy.md.\n")) {
    return *exit;
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  absl::StatusOr<size_t> top = GetCountFlag(flags, "top");
  if (!top.ok()) return UsageError(top.status());
  OccupancyReportOptions options;
  options.kernel_regex = flags.Get("kernel");
  options.top = static_cast<int>(*top);

  const std::string& path = flags.positionals()[0];
  absl::StatusOr<TraceModel> model = LoadTraceForCommand(path);
  if (!model.ok()) return 1;
  if (std::string loss = PmDataLossNote(model->stats); !loss.empty()) {
    std::fprintf(stderr, "warpscope: %s\n", loss.c_str());
  }
  absl::StatusOr<OccupancyReport> report = BuildOccupancyReport(PmInputsOf(*model), options);
  if (!report.ok()) return UsageError(report.status());
  report->names = KernelNamesOfFlag(flags, {&*model});
  std::fputs(RenderOccupancyReport(*report, *format).c_str(), stdout);
  return 0;
}

}  // namespace warpscope
