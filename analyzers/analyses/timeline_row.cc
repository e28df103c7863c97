// `warpscope timeline`, a row of the list of analyses (analysis.h, timeline.h): the picture
// is its file; its report holds the window drawn.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/timeline.h"

namespace warpscope {
namespace {

absl::StatusOr<AnalysisResult> RunTimeline(const AnalysisInputs& in, const OptionValues& values) {
  // The window drawn is the slice loaded (--from/--to, --step, --window: slice.h).
  TimelineOptions options;
  if (const std::optional<TimeSlice>& slice = in.traces[0]->slice) {
    options.from_ns = slice->begin_ns;
    if (slice->end_ns != UINT64_MAX) options.to_ns = slice->end_ns;
  }
  options.device = values.Device();
  absl::StatusOr<TimelinePicture> picture =
      RenderTimelineSvg(*in.traces[0], options, KernelNamesOf(values, in.traces));
  if (!picture.ok()) return picture.status();
  AnalysisResult result;
  result.report.scalars = {{"begin_ns", picture->window.begin_ns},
                           {"end_ns", picture->window.end_ns},
                           {"rule", picture->window.rule},
                           {"kernels", static_cast<uint64_t>(picture->kernels)},
                           {"boxes_left_out", static_cast<uint64_t>(picture->boxes_left_out)}};
  result.files.push_back({"svg", std::move(picture->svg),
                          absl::StrCat(picture->window.rule, ", ", picture->kernels, " kernels")});
  return result;
}

}  // namespace

AnalysisRow TimelineAnalysis() {
  AnalysisRow row;
  row.name = "timeline";
  row.summary = "an SVG picture of a stretch of the trace: threads and GPU streams";
  row.usage = "TRACE.wst --svg FILE [flags]";
  row.input = AnalysisInput::kOneTrace;
  row.options = {
      {"svg", "", OptionKind::kOutputFile, "FILE", "the SVG file to write", "", "timeline.svg",
       true},
      {"device", "d", OptionKind::kDevice, "N", "GPU streams of device N only", ""},
      ShortNamesOption()};
  row.about =
      "One row per host thread (API calls, NVTX ranges stacked by depth) and per GPU "
      "stream\n(kernels, copies, memsets). The window is the slice asked for (--from/--to, "
      "--step,\n--window). Without one: three steps (a recurring top-level NVTX range) from "
      "the\nsecond, else the first 200 GPU operations; see docs/cli.md.\n";
  row.run = RunTimeline;
  return row;
}

}  // namespace warpscope
