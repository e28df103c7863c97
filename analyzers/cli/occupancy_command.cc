// `warpscope occupancy TRACE`: theoretical vs achieved occupancy per kernel name and launch
// configuration, with advice (analyzers/lib/occupancy_report.h).
#include <cstdio>
#include <string>

#include "analyzers/cli/commands.h"
#include "analyzers/lib/flags.h"
#include "analyzers/lib/occupancy_report.h"
#include "analyzers/lib/output.h"
#include "analyzers/lib/trace_model.h"

namespace warpscope {
namespace {

int OccupancyUsageError(const absl::Status& status) {
  std::fprintf(stderr, "warpscope: %s\n", std::string(status.message()).c_str());
  return 2;
}

}  // namespace

int RunOccupancyCommand(const CommandArgs& args) {
  FlagSet flags("occupancy", "TRACE.wst [flags]",
                {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
                 {"kernel", "k", true, "REGEX", "only kernels whose name matches (ECMAScript)", ""},
                 {"top", "n", true, "N", "keep the N rows with the most GPU time (0 = all)", "0"}});
  if (absl::Status status = flags.Parse(args); !status.ok()) return OccupancyUsageError(status);
  if (flags.help_requested()) {
    std::fputs(flags.HelpText().c_str(), stdout);
    std::fputs(
        "\nTheoretical occupancy comes from CUDA's occupancy calculator (cuda_occupancy.h) "
        "fed with the\ntrace's device limits and launch configuration; achieved occupancy "
        "from PM samples\n(record with WARPSCOPE_PM_SAMPLING=1). See docs/occupancy.md.\n",
        stdout);
    return 0;
  }
  if (flags.positionals().size() != 1) {
    return OccupancyUsageError(absl::InvalidArgumentError(
        "occupancy needs exactly one trace file; see warpscope occupancy --help"));
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return OccupancyUsageError(format.status());
  absl::StatusOr<int64_t> top = flags.GetInt("top");
  if (!top.ok()) return OccupancyUsageError(top.status());
  if (*top < 0)
    return OccupancyUsageError(absl::InvalidArgumentError("flag --top must be 0 or more"));
  OccupancyReportOptions options;
  options.kernel_regex = flags.Get("kernel");
  options.top = static_cast<int>(*top);

  const std::string& path = flags.positionals()[0];
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  if (!model.ok()) {
    std::fprintf(stderr, "warpscope: %s\n", std::string(model.status().message()).c_str());
    return 1;
  }
  if (model->truncation.truncated()) {
    std::fprintf(stderr, "warpscope: %s was cut short: %s; figures cover what was written\n",
                 path.c_str(), model->truncation.Describe().c_str());
  }
  absl::StatusOr<OccupancyReport> report = BuildOccupancyReport(PmInputsOf(*model), options);
  if (!report.ok()) return OccupancyUsageError(report.status());
  std::fputs(RenderOccupancyReport(*report, *format).c_str(), stdout);
  return 0;
}

}  // namespace warpscope
