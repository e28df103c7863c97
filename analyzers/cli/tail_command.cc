// `warpscope tail TRACE`: active-warp curves per kernel from PM samples, ranked by tail cost,
// with an optional SVG of one curve (analyzers/analyses/tail.h).
#include <algorithm>
#include <cstdio>
#include <string>

#include "analyzers/analyses/tail.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/output.h"
#include "analyzers/render/output_path.h"

namespace warpscope {
int RunTailCommand(const CommandArgs& args) {
  FlagSet flags(
      "tail", "TRACE.wst [flags]",
      {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
       {"kernel", "k", true, "REGEX", "only kernels whose name matches (RE2 syntax)", ""},
       {"points", "p", true, "N", "points of the resampled curve (normalised time)", "50"},
       {"instances", "i", false, "", "also list every launch", ""},
       {"top", "n", true, "N", "keep the N kernels with the most tail cost (0 = all)", "0"},
       {"svg", "", true, "FILE",
        "draw the worst launch of the top kernel (or of --kernel's) as SVG", ""},
       ShortNamesFlag()});
  if (std::optional<int> exit = ParseCommandFlags(
          flags, args, TraceFiles::kOne,
          "Needs PM samples (record with --pm-sampling). Tail cost = time lost "
          "against running\nat the steady level throughout; see docs/tail.md for every "
          "definition and threshold.\n")) {
    return *exit;
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  absl::StatusOr<int64_t> points = flags.GetInt("points");
  if (!points.ok()) return UsageError(points.status());
  TailReportOptions options;
  options.kernel_regex = flags.Get("kernel");
  options.instances = flags.Has("instances");
  options.tail.points = static_cast<int>(std::min<int64_t>(*points, 1 << 20));
  absl::StatusOr<size_t> top = GetCountFlag(flags, "top");
  if (!top.ok()) return UsageError(top.status());
  options.top = *top;
  // The SVG's path is checked before the report is built and printed.
  const std::string svg_path = flags.Get("svg");
  if (flags.Has("svg")) {
    if (absl::StatusOr<bool> ok = CheckOutputPath(svg_path, "--svg", "tail.svg"); !ok.ok()) {
      return UsageError(ok.status());
    }
  }

  const std::string& path = flags.positionals()[0];
  absl::StatusOr<TraceModel> model = LoadTraceForCommand(path);
  if (!model.ok()) return 1;
  const PmInputs in = PmInputsOf(*model);
  options.names = KernelNamesOfFlag(flags, {&*model});
  if (std::string loss = PmDataLossNote(model->stats); !loss.empty()) {
    std::fprintf(stderr, "warpscope: %s\n", loss.c_str());
  }
  absl::StatusOr<TailReport> report = BuildTailReportFiltered(in, options);
  if (!report.ok()) return UsageError(report.status());
  std::fputs(RenderTailReport(*report, in, options, *format).c_str(), stdout);
  if (flags.Has("svg")) {
    const ActiveWarpCurve* curve = CurveToDraw(*report);
    if (curve == nullptr) {
      std::fprintf(stderr,
                   "warpscope: no kernel has an active-warp curve to draw; %s not written\n",
                   svg_path.c_str());
      return 1;
    }
    if (absl::Status s = WriteOutputFile(svg_path, "--svg", TailSvg(*curve, in, options.names));
        !s.ok()) {
      return InputError(s);
    }
    std::fprintf(stderr, "warpscope: wrote %s (%s)\n", svg_path.c_str(),
                 options.names.Show(in.kernels[curve->kernel_index].name, false).c_str());
  }
  return 0;
}

}  // namespace warpscope
