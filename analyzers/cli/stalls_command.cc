// `warpscope stalls TRACE...`: warp stall reasons per kernel from PC samples, with advice, or
// the hottest PCs (analyzers/analyses/stalls.h).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analyzers/analyses/stalls.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/output.h"
#include "analyzers/render/output_path.h"
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

}  // namespace

int RunStallsCommand(const CommandArgs& args) {
  FlagSet flags(
      "stalls", "TRACE.wst... [flags]",
      {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
       {"kernel", "k", true, "REGEX", "only kernels whose name matches (RE2 syntax)", ""},
       {"top", "n", true, "N", "reasons, PCs or lines shown per kernel (0 = all)", "5"},
       {"by", "b", true, "VIEW", "kernel (reasons), pc or line (hottest PCs or source lines)",
        "kernel"},
       {"source-dir", "", true, "DIRS",
        "directories to find source files in by name (':'-separated)", ""},
       {"svg", "", true, "FILE", "one stacked bar of warp states per kernel, as SVG", ""},
       ShortNamesFlag()});
  if (std::optional<int> exit = ParseCommandFlags(
          flags, args, TraceFiles::kOneOrMore,
          "Needs PC samples (record with --pc-sampling). Several traces (one per rank) are "
          "summed per\nkernel. Reasons are Nsight Compute's warp states; cycles_per_issue = "
          "samples / selected\nsamples. Source lines need the program built with nvcc -lineinfo "
          "and CUPTI's library on\nthis machine (no GPU needed). See docs/stalls.md.\n")) {
    return *exit;
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  absl::StatusOr<size_t> top = GetCountFlag(flags, "top");
  if (!top.ok()) return UsageError(top.status());
  StallReportOptions options;
  options.kernel_regex = flags.Get("kernel");
  options.top = static_cast<int>(*top);
  absl::StatusOr<StallView> view = ParseStallView(flags.Get("by"));
  if (!view.ok()) return UsageError(view.status());
  options.view = *view;
  for (absl::string_view dir : absl::StrSplit(flags.Get("source-dir"), ':', absl::SkipEmpty())) {
    options.source_dirs.emplace_back(dir);
  }
  const std::string svg_path = flags.Get("svg");
  if (flags.Has("svg")) {
    if (absl::StatusOr<bool> ok = CheckOutputPath(svg_path, "--svg", "stalls.svg"); !ok.ok()) {
      return UsageError(ok.status());
    }
  }

  std::vector<TraceModel> models;
  std::vector<const TraceModel*> pointers;
  if (!LoadTracesForCommand(flags.positionals(), &models, &pointers)) return 1;
  absl::StatusOr<StallReport> report = BuildStallReport(pointers, flags.positionals(), options);
  if (!report.ok()) {
    return report.status().code() == absl::StatusCode::kInvalidArgument
               ? UsageError(report.status())
               : InputError(report.status());
  }
  // PC samples name their kernels themselves: those names are kept apart too.
  std::vector<std::string_view> sampled;
  for (const StallKernelRow& row : report->rows) sampled.push_back(row.name);
  report->names = KernelNamesOfFlag(flags, pointers, sampled);
  std::fputs(RenderStallReport(*report, *format).c_str(), stdout);
  // Tables carry these notes; CSV and JSON stay machine-readable.
  if (*format != OutputFormat::kTable) {
    for (const std::string& note : StallReportNotes(*report)) {
      std::fprintf(stderr, "warpscope: %s\n", note.c_str());
    }
  }
  if (flags.Has("svg")) {
    if (absl::Status s = WriteOutputFile(svg_path, "--svg", RenderStallSvg(*report)); !s.ok()) {
      return InputError(s);
    }
    std::fprintf(stderr, "warpscope: wrote %s\n", svg_path.c_str());
  }
  return 0;
}

}  // namespace warpscope
