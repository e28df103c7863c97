// `warpscope occupancy`, a row of the list of analyses (analysis.h, occupancy.h).
#include <string>

#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/occupancy.h"
#include "analyzers/measures/pm_attribution.h"

namespace warpscope {
namespace {

absl::StatusOr<AnalysisResult> RunOccupancy(const AnalysisInputs& in,
                                            const OptionValues& values) {
  const TraceModel& model = *in.traces[0];
  OccupancyReportOptions options;
  options.kernel_regex = values.Text("kernel");
  options.top = static_cast<int>(values.Count("top"));
  AnalysisResult result;
  if (std::string loss = PmDataLossNote(model.stats); !loss.empty()) {
    result.notices.push_back(loss);
  }
  absl::StatusOr<OccupancyReport> report = BuildOccupancyReport(PmSourcesOf(model), options);
  if (!report.ok()) return report.status();
  report->names = KernelNamesOf(values, in.traces);
  result.report = OccupancyReportTables(*report);
  return result;
}

}  // namespace

AnalysisRow OccupancyAnalysis() {
  AnalysisRow row;
  row.name = "occupancy";
  row.summary = "theoretical vs achieved occupancy, limiter, advice";
  row.usage = "TRACE.wst [flags]";
  row.input = AnalysisInput::kOneTrace;
  row.options = {
      KernelRegexOption(),
      {"top", "n", OptionKind::kCount, "N", "keep the N rows with the most GPU time (0 = all)",
       "0"},
      ShortNamesOption()};
  row.about =
      "Theoretical occupancy comes from CUDA's occupancy calculator (cuda_occupancy.h) "
      "fed with the\ntrace's device limits and launch configuration; achieved occupancy "
      "from PM samples\n(record with --pm-sampling). See docs/occupancy.md.\n";
  row.load_options = SamplesReadAgainLoad;
  row.run = RunOccupancy;
  return row;
}

}  // namespace warpscope
