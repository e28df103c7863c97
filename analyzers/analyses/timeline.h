// `warpscope timeline TRACE --svg FILE`: a picture of a stretch of the trace, one row per
// host thread (API calls, NVTX ranges stacked by depth) and per GPU stream (kernels, copies,
// memsets colored by kind), with a time axis and a legend. docs/cli.md#timeline.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_TIMELINE_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_TIMELINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/short_names.h"

namespace warpscope {

// The stretch drawn, in trace ns (since Header.time_base_ns), and how it was chosen.
struct TimelineWindow {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  std::string rule;  // "steps 2-4 (NVTX range train_step)", "asked for", ...
};

struct TimelineOptions {
  // The window; when neither is given, DefaultTimelineWindow's. A missing end is the end of
  // the trace, a missing begin its time 0.
  std::optional<uint64_t> from_ns, to_ns;
  std::optional<uint32_t> device;  // GPU streams of this device only; nullopt: all
  // Given, the window drawn as it is, its rule included (found on another load of the trace:
  // StepsTimelineWindow); before from_ns/to_ns.
  std::optional<TimelineWindow> window;
};

// The default window, a stretch short enough to read: when the program marks steps (a
// push/pop NVTX range at depth 0 whose name recurs, the most frequent such name), three
// consecutive steps from the second (the first is often warm-up), fewer when the trace has
// fewer; else the first 200 GPU operations (kernels, copies, memsets) of the device(s)
// shown; else the whole trace.
TimelineWindow DefaultTimelineWindow(const TraceModel& model, std::optional<uint32_t> device);
// The default window's first rule alone, which reads only the NVTX ranges: three steps from
// the second when the trace marks steps, else nullopt.
std::optional<TimelineWindow> StepsTimelineWindow(const TraceModel& model);

struct TimelinePicture {
  std::string svg;
  TimelineWindow window;
  size_t kernels = 0;          // kernels drawn (each once)
  size_t boxes_left_out = 0;   // over the drawing's box limit
};

// Fails on a device the trace does not have and on an empty window. A kernel box's text is
// its base name, which a box has room for, or with `names` short (--short-names) its name
// there, which tells kernels apart; its tooltip holds the whole name either way.
absl::StatusOr<TimelinePicture> RenderTimelineSvg(const TraceModel& model,
                                                  const TimelineOptions& options,
                                                  const KernelNames& names = KernelNames());

// The box class of an API call: "wait" for calls that block the host on the GPU
// (synchronizations, copies that are not async), else "api".
std::string_view ApiCallBoxClass(std::string_view name);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_TIMELINE_H_
