// `warpscope sol`, a row of the list of analyses (analysis.h, sol.h).
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/sol.h"
#include "analyzers/measures/pm_attribution.h"

namespace warpscope {
namespace {

absl::StatusOr<AnalysisResult> RunSol(const AnalysisInputs& in, const OptionValues& values) {
  const TraceModel& model = *in.traces[0];
  SolReportOptions options;
  options.kernel_regex = values.Text("kernel");
  options.device = values.Device();
  options.top = values.Count("top");
  AnalysisResult result;
  if (std::string loss = PmDataLossNote(model.stats); !loss.empty()) {
    result.notices.push_back(loss);
  }
  const PmInputs pm = PmInputsOf(model);
  absl::StatusOr<SolReport> report = BuildSolReport(pm, options);
  if (!report.ok()) return report.status();
  const KernelNames names = KernelNamesOf(values, in.traces);
  if (values.Has("svg")) {
    const uint32_t device = report->rows.empty() ? 0 : report->rows[0].kernel.device_id;
    const DeviceInfo* info = model.FindDevice(device);
    if (info == nullptr || info->sm_count == 0 || info->core_clock_khz == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the trace has no SM count or clock for device ", device,
          ": the roofs cannot be computed; ", values.Text("svg"), " not written"));
    }
    const SolRoofs roofs = SolRoofsOf(*info, ExtractSolSamples(pm));
    result.files.push_back({"svg", SolRooflineSvg(*report, roofs, names, 10), "roofline"});
  }
  result.report = SolReportTables(*report, names);
  return result;
}

}  // namespace

AnalysisRow SolAnalysis() {
  AnalysisRow row;
  row.name = "sol";
  row.summary = "speed of light per kernel (PM samples): closest unit, memory/compute/latency";
  row.usage = "TRACE.wst [flags]";
  row.input = AnalysisInput::kOneTrace;
  row.options = {
      KernelRegexOption(),
      KernelDeviceOption(),
      TopKernelsOption(),
      {"svg", "", OptionKind::kOutputFile, "FILE",
       "draw a roofline of the top 10 kernels as SVG", "", "roofline.svg"},
      ShortNamesOption()};
  row.about =
      "Needs PM samples with per-unit throughput: record with --pm-sampling --pm-metrics sol.\n"
      "Each sample is attributed to the launches it overlaps, by overlap; see docs/sol.md.\n";
  row.run = RunSol;
  return row;
}

}  // namespace warpscope
