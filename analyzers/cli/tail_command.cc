// `warpscope tail TRACE`: active-warp curves per kernel from PM samples, ranked by tail cost,
// with an optional SVG of one curve (analyzers/lib/tail_report.h).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "analyzers/cli/commands.h"
#include "analyzers/lib/flags.h"
#include "analyzers/lib/output.h"
#include "analyzers/lib/tail_report.h"
#include "analyzers/lib/trace_model.h"

namespace warpscope {
int RunTailCommand(const CommandArgs& args) {
  FlagSet flags(
      "tail", "TRACE.wst [flags]",
      {{"format", "f", true, "FORMAT", "table, csv or json", "table"},
       {"kernel", "k", true, "REGEX", "only kernels whose name matches (RE2 syntax)", ""},
       {"points", "p", true, "N", "points of the resampled curve (normalised time)", "50"},
       {"instances", "i", false, "", "also list every launch", ""},
       {"svg", "", true, "FILE",
        "draw the worst launch of the top kernel (or of --kernel's) as SVG", ""}});
  if (absl::Status status = flags.Parse(args); !status.ok()) return UsageError(status);
  if (flags.help_requested()) {
    std::fputs(flags.HelpText().c_str(), stdout);
    std::fputs(
        "\nNeeds PM samples (record with --pm-sampling). Tail cost = time lost "
        "against running\nat the steady level throughout; see docs/tail.md for every "
        "definition and threshold.\n",
        stdout);
    return 0;
  }
  if (flags.positionals().size() != 1) {
    return UsageError(
        absl::InvalidArgumentError("tail needs exactly one trace file; see warpscope tail --help"));
  }
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(flags.Get("format"));
  if (!format.ok()) return UsageError(format.status());
  absl::StatusOr<int64_t> points = flags.GetInt("points");
  if (!points.ok()) return UsageError(points.status());
  TailReportOptions options;
  options.kernel_regex = flags.Get("kernel");
  options.instances = flags.Has("instances");
  options.tail.points = static_cast<int>(std::min<int64_t>(*points, 1 << 20));

  const std::string& path = flags.positionals()[0];
  absl::StatusOr<TraceModel> model = LoadTraceForCommand(path);
  if (!model.ok()) return 1;
  const PmInputs in = PmInputsOf(*model);
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
                   flags.Get("svg").c_str());
      return 1;
    }
    std::ofstream out(flags.Get("svg"), std::ios::binary | std::ios::trunc);
    out << TailSvg(*curve, in);
    if (!out) {
      std::fprintf(stderr, "warpscope: cannot write %s\n", flags.Get("svg").c_str());
      return 1;
    }
    std::fprintf(stderr, "warpscope: wrote %s (%s)\n", flags.Get("svg").c_str(),
                 std::string(in.kernels[curve->kernel_index].name).c_str());
  }
  return 0;
}

}  // namespace warpscope
