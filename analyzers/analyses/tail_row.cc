// `warpscope tail`, a row of the list of analyses (analysis.h, tail.h).
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/tail.h"
#include "analyzers/measures/pm_attribution.h"

namespace warpscope {
namespace {

absl::StatusOr<AnalysisResult> RunTail(const AnalysisInputs& in, const OptionValues& values) {
  const TraceModel& model = *in.traces[0];
  TailReportOptions options;
  options.kernel_regex = values.Text("kernel");
  options.instances = values.Has("instances");
  options.tail.points = static_cast<int>(std::min<int64_t>(values.Integer("points"), 1 << 20));
  options.top = values.Count("top");
  options.names = KernelNamesOf(values, in.traces);
  AnalysisResult result;
  if (std::string loss = PmDataLossNote(model.stats); !loss.empty()) {
    result.notices.push_back(loss);
  }
  absl::StatusOr<TailReport> report = BuildTailReportFiltered(PmSourcesOf(model), options);
  if (!report.ok()) return report.status();
  if (values.Has("svg")) {
    const ActiveWarpCurve* curve = CurveToDraw(*report);
    if (curve == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no kernel has an active-warp curve to draw; ", values.Text("svg"), " not written"));
    }
    result.files.push_back(
        {"svg", TailSvg(*curve, *report, model.devices, options.names),
         options.names.Show(report->summaries[curve->summary].name, false)});
  }
  result.report = TailReportTables(*report, options.instances, options.names);
  return result;
}

}  // namespace

AnalysisRow TailAnalysis() {
  AnalysisRow row;
  row.name = "tail";
  row.summary = "active-warp curves (PM samples): long tails ranked by cost";
  row.usage = "TRACE.wst [flags]";
  row.input = AnalysisInput::kOneTrace;
  row.options = {
      KernelRegexOption(),
      {"points", "p", OptionKind::kInteger, "N", "points of the resampled curve (normalised time)",
       "50"},
      {"instances", "i", OptionKind::kSwitch, "", "also list every launch", ""},
      {"top", "n", OptionKind::kCount, "N", "keep the N kernels with the most tail cost (0 = all)",
       "0"},
      {"svg", "", OptionKind::kOutputFile, "FILE",
       "draw the worst launch of the top kernel (or of --kernel's) as SVG", "", "tail.svg"},
      ShortNamesOption()};
  row.about =
      "Needs PM samples (record with --pm-sampling). Tail cost = time lost "
      "against running\nat the steady level throughout; see docs/tail.md for every "
      "definition and threshold.\n";
  row.load_options = SamplesReadAgainLoad;
  row.run = RunTail;
  return row;
}

}  // namespace warpscope
