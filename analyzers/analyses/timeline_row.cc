// `warpscope timeline`, a row of the list of analyses (analysis.h, timeline.h): the picture
// is its file; its report holds the window drawn.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/timeline.h"
#include "analyzers/measures/ns_from_double.h"
#include "proto/settings/setting_error.h"

namespace warpscope {
namespace {

// Milliseconds from the trace's start ("12.5") as trace ns.
absl::StatusOr<uint64_t> TraceNsFromMs(std::string_view flag, std::string_view text) {
  double ms = 0;
  if (!absl::SimpleAtod(std::string(text), &ms) || !std::isfinite(ms) || ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(flag), " ", QuoteValue(std::string(text)),
                     ": expected milliseconds from the trace's start, a number >= 0 such as 12.5"));
  }
  return NsFromDouble(ms * 1e6);
}

absl::Status ParseWindow(const OptionValues& values, TimelineOptions* options) {
  if (values.Has("window")) {
    if (values.Has("from") || values.Has("to")) {
      return absl::InvalidArgumentError("give --window START:END or --from/--to, not both");
    }
    const std::vector<std::string> parts = absl::StrSplit(values.Text("window"), ':');
    if (parts.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("--window ", QuoteValue(values.Text("window")),
                       ": expected START:END in ms from the trace's start, such as 10:25"));
    }
    absl::StatusOr<uint64_t> from = TraceNsFromMs("--window", parts[0]);
    if (!from.ok()) return from.status();
    absl::StatusOr<uint64_t> to = TraceNsFromMs("--window", parts[1]);
    if (!to.ok()) return to.status();
    options->from_ns = *from;
    options->to_ns = *to;
    return absl::OkStatus();
  }
  for (const char* flag : {"from", "to"}) {
    if (!values.Has(flag)) continue;
    absl::StatusOr<uint64_t> ns = TraceNsFromMs(absl::StrCat("--", flag), values.Text(flag));
    if (!ns.ok()) return ns.status();
    (std::string_view(flag) == "from" ? options->from_ns : options->to_ns) = *ns;
  }
  return absl::OkStatus();
}

absl::Status CheckTimelineOptions(const OptionValues& values) {
  TimelineOptions options;
  return ParseWindow(values, &options);
}

absl::StatusOr<AnalysisResult> RunTimeline(const AnalysisInputs& in, const OptionValues& values) {
  TimelineOptions options;
  if (absl::Status s = ParseWindow(values, &options); !s.ok()) return s;
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
      {"from", "", OptionKind::kText, "MS", "window start, ms from the trace's start", ""},
      {"to", "", OptionKind::kText, "MS", "window end, ms from the trace's start", ""},
      {"window", "", OptionKind::kText, "START:END", "the window in ms, as --from and --to", ""},
      {"device", "d", OptionKind::kDevice, "N", "GPU streams of device N only", ""},
      ShortNamesOption()};
  row.about =
      "One row per host thread (API calls, NVTX ranges stacked by depth) and per GPU "
      "stream\n(kernels, copies, memsets). Without a window: three steps (a recurring "
      "top-level NVTX\nrange) from the second, else the first 200 GPU operations; see "
      "docs/cli.md.\n";
  row.check = CheckTimelineOptions;
  row.run = RunTimeline;
  return row;
}

}  // namespace warpscope
