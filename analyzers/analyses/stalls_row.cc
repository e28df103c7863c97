// `warpscope stalls`, a row of the list of analyses (analysis.h, stalls.h).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/stalls.h"
#include "proto/settings/setting_error.h"

namespace warpscope {
namespace {

absl::StatusOr<StallView> ParseStallView(const std::string& by) {
  if (by == "kernel") return StallView::kKernel;
  if (by == "pc") return StallView::kPc;
  if (by == "line") return StallView::kLine;
  return absl::InvalidArgumentError(
      absl::StrCat("flag --by must be kernel, pc or line, not ", QuoteValue(by)));
}

absl::Status CheckStallsOptions(const OptionValues& values) {
  return ParseStallView(values.Text("by")).status();
}

absl::StatusOr<AnalysisResult> RunStalls(const AnalysisInputs& in, const OptionValues& values) {
  StallReportOptions options;
  options.kernel_regex = values.Text("kernel");
  options.top = static_cast<int>(values.Count("top"));
  absl::StatusOr<StallView> view = ParseStallView(values.Text("by"));
  if (!view.ok()) return view.status();
  options.view = *view;
  for (absl::string_view dir : absl::StrSplit(values.Text("source-dir"), ':', absl::SkipEmpty())) {
    options.source_dirs.emplace_back(dir);
  }
  absl::StatusOr<StallReport> report = BuildStallReport(in.traces, in.paths, options);
  if (!report.ok()) return report.status();
  // PC samples name their kernels themselves: those names are kept apart too.
  std::vector<std::string_view> sampled;
  for (const StallKernelRow& row : report->rows) sampled.push_back(row.name);
  report->names = KernelNamesOf(values, in.traces, sampled);
  AnalysisResult result;
  result.report = StallReportTables(*report, options.view == StallView::kPc);
  if (values.Has("svg")) result.files.push_back({"svg", RenderStallSvg(*report), ""});
  return result;
}

}  // namespace

AnalysisRow StallsAnalysis() {
  AnalysisRow row;
  row.name = "stalls";
  row.summary = "warp stall reasons per kernel (PC samples), with advice; hottest lines and PCs";
  row.usage = "TRACE.wst... [flags]";
  row.input = AnalysisInput::kOneOrMore;
  row.options = {
      KernelRegexOption(),
      {"top", "n", OptionKind::kCount, "N", "reasons, PCs or lines shown per kernel (0 = all)",
       "5"},
      {"by", "b", OptionKind::kText, "VIEW",
       "kernel (reasons), pc or line (hottest PCs or source lines)", "kernel"},
      {"source-dir", "", OptionKind::kText, "DIRS",
       "directories to find source files in by name (':'-separated)", ""},
      {"svg", "", OptionKind::kOutputFile, "FILE",
       "one stacked bar of warp states per kernel, as SVG", "", "stalls.svg"},
      ShortNamesOption()};
  row.about =
      "Needs PC samples (record with --pc-sampling). Several traces (one per rank) are "
      "summed per\nkernel. Reasons are Nsight Compute's warp states; cycles_per_issue = "
      "samples / selected\nsamples. Source lines need the program built with nvcc -lineinfo "
      "and CUPTI's library on\nthis machine (no GPU needed). See docs/stalls.md.\n";
  row.check = CheckStallsOptions;
  row.load_options = SamplesReadAgainLoad;
  row.run = RunStalls;
  return row;
}

}  // namespace warpscope
