// `warpscope timeline`, a row of the list of analyses (analysis.h, timeline.h): the picture
// is its file; its report holds the window drawn.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/slice.h"
#include "analyzers/analyses/timeline.h"

namespace warpscope {
namespace {

// Without a slice asked for, the first load keeps the NVTX ranges alone, enough to find the
// default window's steps; the steps are then loaded as a slice (RunTimeline), so that memory
// grows with the ranges and the window's events. With --short-names every kernel name counts:
// the whole trace is loaded, as with no steps.
TraceModelOptions TimelineLoad(const OptionValues& values) {
  TraceModelOptions load;
  absl::StatusOr<SliceRequest> slice = ParseSlice(values);
  if (slice.ok() && slice->empty() && !values.Has("short-names")) {
    load.keep_events = EventKindBit(EventKind::kNvtxRange);
    load.keep_pc_sample_records = false;
  }
  return load;
}

// The trace again, whole or, with steps, their window widened by 1 ns on each side: the
// picture draws what touches its edges.
absl::StatusOr<TraceModel> LoadWindow(const std::string& path,
                                      const std::optional<TimelineWindow>& steps) {
  TraceModelOptions load;
  if (steps.has_value()) {
    load.slice = TimeSlice{steps->begin_ns == 0 ? 0 : steps->begin_ns - 1, steps->end_ns + 1};
  }
  return TraceModel::Load(path, load);
}

absl::StatusOr<AnalysisResult> RunTimeline(const AnalysisInputs& in, const OptionValues& values) {
  // The window drawn is the slice loaded (--from/--to, --step, --window: slice.h).
  TimelineOptions options;
  const TraceModel* model = in.traces[0];
  if (const std::optional<TimeSlice>& slice = model->slice) {
    options.from_ns = slice->begin_ns;
    if (slice->end_ns != UINT64_MAX) options.to_ns = slice->end_ns;
  }
  options.device = values.Device();
  std::optional<TraceModel> window;
  if (!model->slice.has_value() && model->kept_events != kAllEventKinds) {
    options.window = StepsTimelineWindow(*model);
    absl::StatusOr<TraceModel> loaded = LoadWindow(in.paths[0], options.window);
    if (!loaded.ok()) return AsInputError(loaded.status());
    window.emplace(*std::move(loaded));
    model = &*window;
  }
  absl::StatusOr<TimelinePicture> picture =
      RenderTimelineSvg(*model, options, KernelNamesOf(values, in.traces));
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
  row.load_options = TimelineLoad;
  row.run = RunTimeline;
  return row;
}

}  // namespace warpscope
