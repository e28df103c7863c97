// `warpscope summary`, a row of the list of analyses (analysis.h, summary.h).
#include <string>
#include <vector>

#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/summary.h"

namespace warpscope {
namespace {

// The options that shape the report: order, reports, rows kept, names.
absl::Status SummaryOptionsOf(const OptionValues& values, SummaryOptions* options) {
  if (absl::Status s = ParseSummarySort(values.Text("sort"), options); !s.ok()) return s;
  if (absl::Status s = ParseSummaryReports(values.Text("report"), options); !s.ok()) return s;
  options->top = values.Count("top");
  options->literal_ranges = values.Has("literal-ranges");
  const int64_t name_width = values.Integer("name-width");
  if (name_width < 0 || (name_width > 0 && name_width < 4)) {
    return absl::InvalidArgumentError("flag --name-width must be 0 or at least 4");
  }
  options->name_width = static_cast<size_t>(name_width);
  return absl::OkStatus();
}

absl::Status CheckSummaryOptions(const OptionValues& values) {
  SummaryOptions options;
  return SummaryOptionsOf(values, &options);
}

// Only the NVTX ranges: the GPU work and API calls are folded from a second pass over the file
// (SummarizeTraceFiles), so memory does not grow with events.
TraceModelOptions SummaryLoad(const OptionValues& values) {
  SummaryOptions options;
  if (!SummaryOptionsOf(values, &options).ok()) return {};  // checked before (check)
  return SummaryLoadOptions(options, values.Has("short-names"));
}

absl::StatusOr<AnalysisResult> RunSummary(const AnalysisInputs& in, const OptionValues& values) {
  SummaryOptions options;
  if (absl::Status s = SummaryOptionsOf(values, &options); !s.ok()) return s;
  options.names = KernelNamesOf(values, in.traces);
  absl::StatusOr<std::vector<TraceSummary>> folded =
      SummarizeTraceFiles(in.traces, in.paths, options);
  if (!folded.ok()) return AsInputError(folded.status());
  AnalysisResult result;
  result.report = SummaryReport(*folded, options);
  return result;
}

}  // namespace

AnalysisRow SummaryAnalysis() {
  AnalysisRow row;
  row.name = "summary";
  row.summary = "kernel, API, memory and NVTX statistics; GPU idle time";
  row.usage = "TRACE.wst... [flags]";
  row.input = AnalysisInput::kOneOrMore;
  row.options = {
      {"sort", "s", OptionKind::kText, "KEY", "order rows by total, count, avg, max or name",
       "total"},
      {"top", "n", OptionKind::kCount, "N", "keep the first N rows of each table (0 = all)", "0"},
      {"report", "r", OptionKind::kText, "LIST",
       "comma-separated reports: kernels, api, memory, nvtx, nvtx-kernels, idle, syncs, "
       "launch-sites",
       "kernels,api,memory,nvtx,idle"},
      ShortNamesOption(),
      {"name-width", "", OptionKind::kInteger, "N",
       "cut names in text tables to N columns (0 = whole)", "100"},
      LiteralRangesOption()};
  row.about =
      "With several traces (one per rank), each gets its own section and a combined "
      "view (file \"*\")\nsums kernels, memory operations, API calls and NVTX ranges "
      "over all of them.\n\nThe nvtx report gives each range's host time and the GPU time of "
      "the kernels and copies\nlaunched inside it (found through the API calls' correlation "
      "ids: needs -t runtime or driver);\nnvtx-kernels lists those kernels per range. "
      "Numbered ranges (step_12, ProfilerStep#12) are one\nrow, step_<N>, with the steps as "
      "its instances (--literal-ranges: one row per name).\n\nsyncs gives the host time "
      "blocked in syncs and blocking copies by the program's line that\nmade them, "
      "launch-sites the kernel time by the line that launched it (both need call\nstacks, "
      "recorded by default). See docs/cli.md.\n";
  row.check = CheckSummaryOptions;
  row.load_options = SummaryLoad;
  row.run = RunSummary;
  return row;
}

}  // namespace warpscope
