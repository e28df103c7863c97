// The timeline picture (timeline.h): rows from the model, boxes stacked as the exporters
// stack slices (StackSlices), drawn by render/svg.h's SvgTimeline.
#include "analyzers/analyses/timeline.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/export/export_common.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/render/output.h"
#include "analyzers/render/svg.h"

namespace warpscope {
namespace {

constexpr size_t kDefaultSteps = 3;
constexpr size_t kDefaultGpuOperations = 200;

// A box before it is placed: its interval, class, tooltip and the name written in it. Every
// event of a track is placed (its lane depends on the boxes before it), but only those in the
// window are drawn: the others carry no text, so that a long trace costs no string per event.
struct BoxText {
  std::string cls, label, name;
};
struct TimelineBox {
  SliceInterval interval;
  std::unique_ptr<BoxText> text;  // null outside the window
};
TimelineBox Drawn(SliceInterval interval, std::string cls, std::string label, std::string name) {
  return {interval, std::make_unique<BoxText>(BoxText{std::move(cls), std::move(label),
                                                      std::move(name)})};
}

bool Overlaps(const SliceInterval& s, uint64_t begin, uint64_t end) {
  return s.end_ns >= begin && s.start_ns <= end;
}

// One track's boxes as rows: `title` for lane 0 at depth 0, "title [d]" deeper,
// "title overlapping L [d]" for further lanes; only rows with a box in the window.
void DrawTrack(SvgTimeline& svg, const std::string& title, const std::vector<TimelineBox>& boxes,
               uint64_t begin, uint64_t end, size_t* kernels) {
  std::vector<SliceInterval> intervals;
  intervals.reserve(boxes.size());
  for (const TimelineBox& b : boxes) intervals.push_back(b.interval);
  std::vector<uint32_t> order;
  const std::vector<SlicePlace> places = StackSlices(intervals, &order);
  auto row = [&](const SlicePlace& p) {
    std::string name = title;
    if (p.lane != 0) absl::StrAppend(&name, " overlapping ", p.lane);
    if (p.depth != 0) absl::StrAppend(&name, " [", p.depth, "]");
    return name;
  };
  std::set<std::pair<uint32_t, uint32_t>> rows;
  for (size_t i = 0; i < boxes.size(); ++i) {
    if (places[i].lane != kNoLane && Overlaps(intervals[i], begin, end)) {
      rows.insert({places[i].lane, places[i].depth});
    }
  }
  for (const auto& [lane, depth] : rows) svg.AddRow(row({lane, depth}));
  for (uint32_t i : order) {
    if (places[i].lane == kNoLane || !Overlaps(intervals[i], begin, end)) continue;
    const TimelineBox& b = boxes[i];
    if (svg.Add(row(places[i]), b.interval.start_ns, b.interval.end_ns, b.text->cls,
                b.text->label, b.text->name) &&
        b.text->cls == "kernel") {
      ++*kernels;
    }
  }
}

void DrawHost(const TraceModel& m, SvgTimeline& svg, uint64_t begin, uint64_t end,
              size_t* kernels) {
  const HostTids tids(m);
  std::map<uint64_t, std::vector<TimelineBox>> threads;
  std::vector<TimelineBox> start_end;
  for (const ApiCallEvent& call : m.api_calls) {
    const SliceInterval interval{call.start_ns, call.end_ns()};
    if (!Overlaps(interval, begin, end)) {
      threads[call.thread_id].push_back({interval, nullptr});
      continue;
    }
    // The tooltip of a call with a recorded stack lists it, innermost first.
    std::string label(call.name);
    if (const CallStackInfo* stack = m.StackOfCall(call.correlation_id); stack != nullptr) {
      absl::StrAppend(&label, "\n", absl::StrJoin(StackLines(m, *stack), "\n"));
    }
    threads[call.thread_id].push_back(Drawn(interval, std::string(ApiCallBoxClass(call.name)),
                                            std::move(label), std::string(call.name)));
  }
  for (const NvtxRange& r : m.nvtx_ranges) {
    const SliceInterval interval{r.start_ns, r.end_ns()};
    TimelineBox box{interval, nullptr};
    if (Overlaps(interval, begin, end)) box = Drawn(interval, "range", std::string(r.name), "");
    if (r.is_push_pop) {
      threads[r.thread_id].push_back(std::move(box));
    } else {
      start_end.push_back(std::move(box));
    }
  }
  for (const OverheadEvent& o : m.overheads) {
    const SliceInterval interval{o.start_ns, o.end_ns()};
    threads[o.thread_id].push_back(Overlaps(interval, begin, end)
                                       ? Drawn(interval, "overhead", std::string(o.kind), "")
                                       : TimelineBox{interval, nullptr});
  }
  for (const auto& [id, boxes] : threads) {
    const ThreadInfo* info = m.FindThread(id);
    std::string title = absl::StrCat("thread ", tids.Of(id));
    if (info != nullptr && !info->name.empty()) absl::StrAppend(&title, " ", info->name);
    DrawTrack(svg, title, boxes, begin, end, kernels);
  }
  DrawTrack(svg, "NVTX start/end ranges", start_end, begin, end, kernels);
}

void DrawGpu(const TraceModel& m, std::optional<uint32_t> device, const KernelNames& names,
             SvgTimeline& svg, uint64_t begin, uint64_t end, size_t* kernels) {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<TimelineBox>> streams;
  auto shown = [&](const StreamWork& w) { return !device.has_value() || w.device_id == *device; };
  // Work outside the window is placed but not drawn: no text.
  auto hidden = [&](const StreamWork& w) {
    if (Overlaps({w.start_ns, w.end_ns()}, begin, end)) return false;
    streams[{w.device_id, w.stream_id}].push_back({{w.start_ns, w.end_ns()}, nullptr});
    return true;
  };
  for (const KernelEvent& k : m.kernels) {
    if (!shown(k) || hidden(k)) continue;
    const std::string name = KernelDisplayName(k);
    streams[{k.device_id, k.stream_id}].push_back(
        Drawn({k.start_ns, k.end_ns()}, "kernel", name,
              names.is_short() ? names.Show(name, false) : BaseFunctionName(name)));
  }
  for (const MemcpyEvent& c : m.memcpys) {
    if (!shown(c) || hidden(c)) continue;
    streams[{c.device_id, c.stream_id}].push_back(
        Drawn({c.start_ns, c.end_ns()}, "copy",
              absl::StrCat(MemcpyOperationName(c.copy_kind), " ",
                           FormatBytes(static_cast<double>(c.bytes))),
              absl::StrCat(std::string(CopyKindName(c.copy_kind)), " ",
                           FormatBytes(static_cast<double>(c.bytes)))));
  }
  for (const MemsetEvent& s : m.memsets) {
    if (!shown(s) || hidden(s)) continue;
    streams[{s.device_id, s.stream_id}].push_back(
        Drawn({s.start_ns, s.end_ns()}, "memset", std::string(kMemsetOperationName), "memset"));
  }
  for (const auto& [key, boxes] : streams) {
    DrawTrack(svg, absl::StrCat("GPU ", key.first, " stream ", key.second), boxes, begin, end,
              kernels);
  }
}

std::string FormatMs(uint64_t ns) { return absl::StrCat(static_cast<double>(ns) / 1e6, " ms"); }

}  // namespace

std::string_view ApiCallBoxClass(std::string_view name) {
  const bool wait = name.find("Synchronize") != std::string_view::npos ||
                    (name.find("Memcpy") != std::string_view::npos &&
                     name.find("Async") == std::string_view::npos);
  return wait ? "wait" : "api";
}

std::optional<TimelineWindow> StepsTimelineWindow(const TraceModel& model) {
  // Steps: the most frequent name of a depth-0 push/pop range, when it recurs.
  std::map<std::string_view, std::vector<const NvtxRange*>> top_level;
  for (const NvtxRange& r : model.nvtx_ranges) {
    if (r.is_push_pop && r.depth == 0) top_level[r.name].push_back(&r);
  }
  const std::vector<const NvtxRange*>* steps = nullptr;
  for (const auto& [name, ranges] : top_level) {
    if (ranges.size() >= 2 && (steps == nullptr || ranges.size() > steps->size())) {
      steps = &ranges;
    }
  }
  if (steps != nullptr) {
    std::vector<const NvtxRange*> sorted = *steps;
    std::sort(sorted.begin(), sorted.end(),
              [](const NvtxRange* a, const NvtxRange* b) { return a->start_ns < b->start_ns; });
    const size_t first = sorted.size() > kDefaultSteps ? 1 : 0;
    const size_t last = std::min(sorted.size(), first + kDefaultSteps) - 1;
    uint64_t end = 0;
    for (size_t i = first; i <= last; ++i) end = std::max(end, sorted[i]->end_ns());
    return TimelineWindow{sorted[first]->start_ns, end,
            absl::StrCat("steps ", first + 1, "-", last + 1, " of ", sorted.size(),
                         " (NVTX range ", std::string(sorted[first]->name), ")")};
  }
  return std::nullopt;
}

TimelineWindow DefaultTimelineWindow(const TraceModel& model, std::optional<uint32_t> device) {
  if (std::optional<TimelineWindow> steps = StepsTimelineWindow(model)) return *steps;
  std::vector<SliceInterval> work;
  auto add = [&](const StreamWork& w) {
    if (!device.has_value() || w.device_id == *device) work.push_back({w.start_ns, w.end_ns()});
  };
  for (const KernelEvent& k : model.kernels) add(k);
  for (const MemcpyEvent& c : model.memcpys) add(c);
  for (const MemsetEvent& s : model.memsets) add(s);
  if (!work.empty()) {
    std::sort(work.begin(), work.end(),
              [](const SliceInterval& a, const SliceInterval& b) { return a.start_ns < b.start_ns; });
    const size_t n = std::min(work.size(), kDefaultGpuOperations);
    uint64_t end = 0;
    for (size_t i = 0; i < n; ++i) end = std::max(end, work[i].end_ns);
    return {work.front().start_ns, end, absl::StrCat("the first ", n, " GPU operations")};
  }
  return {model.span.begin_ns, model.span.end_ns, "the whole trace"};
}

absl::StatusOr<TimelinePicture> RenderTimelineSvg(const TraceModel& model,
                                                  const TimelineOptions& options,
                                                  const KernelNames& names) {
  if (absl::Status s = model.CheckDevice(options.device); !s.ok()) return s;
  TimelinePicture picture;
  if (options.window.has_value()) {
    picture.window = *options.window;
  } else if (options.from_ns.has_value() || options.to_ns.has_value()) {
    picture.window = {options.from_ns.value_or(0), options.to_ns.value_or(model.span.end_ns),
                      "asked for"};
  } else {
    picture.window = DefaultTimelineWindow(model, options.device);
  }
  const uint64_t begin = picture.window.begin_ns, end = picture.window.end_ns;
  if (end <= begin) {
    return absl::InvalidArgumentError(absl::StrCat("the window from ", FormatMs(begin), " to ",
                                                   FormatMs(end),
                                                   " is empty; give an end after its start"));
  }
  SvgTimeline::Options style;
  style.names_in_boxes = style.axis = style.legend = true;
  SvgTimeline svg(begin, end, style);
  DrawHost(model, svg, begin, end, &picture.kernels);
  DrawGpu(model, options.device, names, svg, begin, end, &picture.kernels);
  picture.boxes_left_out = svg.boxes_left_out();
  std::string file = model.source_name;
  if (const size_t slash = file.rfind('/'); slash != std::string::npos) file.erase(0, slash + 1);
  std::string caption =
      absl::StrCat(file, ": ", FormatDuration(static_cast<double>(end - begin)), " from ",
                   FormatMs(begin), " (", picture.window.rule, ")");
  if (options.device.has_value()) absl::StrAppend(&caption, ", GPU ", *options.device);
  picture.svg = svg.Render(absl::StrCat("warpscope timeline of ", file), caption);
  return picture;
}

}  // namespace warpscope
