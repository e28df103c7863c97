// `warpscope summary TRACE...`: kernel, API, memory and NVTX statistics (NVTX ranges with
// the GPU work launched inside them) and GPU idle time (analyzers/analyses/summary.h).
#include <cstdio>
#include <string>
#include <vector>

#include "analyzers/analyses/summary.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/output.h"
#include "analyzers/render/output_path.h"

namespace warpscope {

namespace {

// The flags that shape the report: order, reports, rows kept, names.
absl::Status ParseSummaryOptions(const FlagSet& flags, SummaryOptions* options) {
  if (absl::Status s = ParseSummarySort(flags.Get("sort"), options); !s.ok()) return s;
  if (absl::Status s = ParseSummaryReports(flags.Get("report"), options); !s.ok()) return s;
  absl::StatusOr<size_t> top = GetCountFlag(flags, "top");
  if (!top.ok()) return top.status();
  options->top = *top;
  options->literal_ranges = flags.Has("literal-ranges");
  absl::StatusOr<int64_t> name_width = flags.GetInt("name-width");
  if (!name_width.ok()) return name_width.status();
  if (*name_width < 0 || (*name_width > 0 && *name_width < 4)) {
    return absl::InvalidArgumentError("flag --name-width must be 0 or at least 4");
  }
  options->name_width = static_cast<size_t>(*name_width);
  return absl::OkStatus();
}

}  // namespace

int RunSummaryCommand(const CommandArgs& args) {
  FlagSet flags(
      "summary", "TRACE.wst... [flags]",
      {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
       {"sort", "s", true, "KEY", "order rows by total, count, avg, max or name", "total"},
       {"top", "n", true, "N", "keep the first N rows of each table (0 = all)", "0"},
       {"report", "r", true, "LIST",
        "comma-separated reports: kernels, api, memory, nvtx, nvtx-kernels, idle, syncs, "
        "launch-sites",
        "kernels,api,memory,nvtx,idle"},
       {"output", "o", true, "FILE", "write the report to FILE instead of stdout", ""},
       ShortNamesFlag(),
       {"name-width", "", true, "N", "cut names in text tables to N columns (0 = whole)", "100"},
       {"literal-ranges", "", false, "",
        "NVTX ranges by their names as written (step_12, not step_<N>)", ""}});
  if (std::optional<int> exit = ParseCommandFlags(
          flags, args, TraceFiles::kOneOrMore,
          "With several traces (one per rank), each gets its own section and a combined "
          "view (file \"*\")\nsums kernels, memory operations, API calls and NVTX ranges "
          "over all of them.\n\nThe nvtx report gives each range's host time and the GPU time of "
          "the kernels and copies\nlaunched inside it (found through the API calls' correlation "
          "ids: needs -t runtime or driver);\nnvtx-kernels lists those kernels per range. "
          "Numbered ranges (step_12, ProfilerStep#12) are one\nrow, step_<N>, with the steps as "
          "its instances (--literal-ranges: one row per name).\n\nsyncs gives the host time "
          "blocked in syncs and blocking copies by the program's line that\nmade them, "
          "launch-sites the kernel time by the line that launched it (both need call\nstacks, "
          "recorded by default). See docs/cli.md.\n")) {
    return *exit;
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  SummaryOptions options;
  if (absl::Status s = ParseSummaryOptions(flags, &options); !s.ok()) return UsageError(s);
  // The report file is checked before the traces are read.
  const std::string output = flags.Get("output");
  if (flags.Has("output") && output != "-") {
    if (absl::StatusOr<bool> ok = CheckOutputPath(output, "-o", "summary.txt"); !ok.ok()) {
      return UsageError(ok.status());
    }
  }

  std::vector<TraceModel> models;
  std::vector<const TraceModel*> pointers;
  if (!LoadTracesForCommand(flags.positionals(), &models, &pointers)) return 1;
  options.names = KernelNamesOfFlag(flags, pointers);
  const std::vector<TraceSummary> summaries =
      SummarizeTraces(pointers, flags.positionals(), options);
  const std::string report = RenderSummary(summaries, *format, options);
  if (flags.Has("output") && output != "-") {
    if (absl::Status s = WriteOutputFile(output, "-o", report); !s.ok()) return InputError(s);
  } else {
    std::fputs(report.c_str(), stdout);
  }
  // Tables carry these notes; CSV and JSON stay machine-readable.
  if (*format != OutputFormat::kTable) {
    for (const std::string& line : SummaryNotes(summaries, options)) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  return 0;
}

}  // namespace warpscope
