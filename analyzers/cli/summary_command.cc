// `warpscope summary TRACE...`: kernel, API, memory and NVTX statistics (NVTX ranges with
// the GPU work launched inside them) and GPU idle time (analyzers/analyses/summary.h).
#include <cstdio>
#include <string>
#include <vector>

#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/render/output.h"
#include "analyzers/analyses/summary.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {
int RunSummaryCommand(const CommandArgs& args) {
  FlagSet flags(
      "summary", "TRACE.wst... [flags]",
      {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
       {"sort", "s", true, "KEY", "order rows by total, count, avg, max or name", "total"},
       {"top", "n", true, "N", "keep the first N rows of each table (0 = all)", "0"},
       {"report", "r", true, "LIST",
        "comma-separated reports: kernels, api, memory, nvtx, nvtx-kernels, idle",
        "kernels,api,memory,nvtx,idle"}});
  if (absl::Status status = flags.Parse(args); !status.ok()) return UsageError(status);
  if (flags.help_requested()) {
    std::fputs(flags.HelpText().c_str(), stdout);
    std::fputs(
        "\nWith several traces (one per rank), each gets its own section and a combined "
        "view (file \"*\")\nsums kernels, memory operations, API calls and NVTX ranges "
        "over all of them.\n\nThe nvtx report gives each range's host time and the GPU time of the "
        "kernels and copies\nlaunched inside it (found through the API calls' correlation ids: "
        "needs -t runtime or driver);\nnvtx-kernels lists those kernels per range. See "
        "docs/cli.md.\n",
        stdout);
    return 0;
  }
  if (flags.positionals().empty()) {
    return UsageError(absl::InvalidArgumentError(
        "summary needs at least one trace file; see warpscope summary --help"));
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  SummaryOptions options;
  if (absl::Status s = ParseSummarySort(flags.Get("sort"), &options); !s.ok()) return UsageError(s);
  if (absl::Status s = ParseSummaryReports(flags.Get("report"), &options); !s.ok()) {
    return UsageError(s);
  }
  absl::StatusOr<int64_t> top = flags.GetInt("top");
  if (!top.ok()) return UsageError(top.status());
  if (*top < 0) {
    return UsageError(absl::InvalidArgumentError("flag --top must be 0 or more"));
  }
  options.top = static_cast<size_t>(*top);

  std::vector<TraceModel> models;
  std::vector<const TraceModel*> pointers;
  if (!LoadTracesForCommand(flags.positionals(), &models, &pointers)) return 1;
  const std::vector<TraceSummary> summaries =
      SummarizeTraces(pointers, flags.positionals(), options);
  std::fputs(RenderSummary(summaries, *format, options).c_str(), stdout);
  // Tables carry these notes; CSV and JSON stay machine-readable.
  if (*format != OutputFormat::kTable) {
    for (const std::string& line : SummaryNotes(summaries, options)) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  return 0;
}

}  // namespace warpscope
