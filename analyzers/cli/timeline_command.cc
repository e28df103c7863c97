// `warpscope timeline TRACE --svg FILE`: a picture of a stretch of the trace
// (analyzers/analyses/timeline.h).
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analyzers/analyses/timeline.h"
#include "analyzers/cli/commands.h"
#include "analyzers/cli/flags.h"
#include "analyzers/measures/ns_from_double.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/output_path.h"
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

absl::Status ParseWindow(const FlagSet& flags, TimelineOptions* options) {
  if (flags.Has("window")) {
    if (flags.Has("from") || flags.Has("to")) {
      return absl::InvalidArgumentError("give --window START:END or --from/--to, not both");
    }
    const std::vector<std::string> parts = absl::StrSplit(flags.Get("window"), ':');
    if (parts.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("--window ", QuoteValue(flags.Get("window")),
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
    if (!flags.Has(flag)) continue;
    absl::StatusOr<uint64_t> ns = TraceNsFromMs(absl::StrCat("--", flag), flags.Get(flag));
    if (!ns.ok()) return ns.status();
    (std::string_view(flag) == "from" ? options->from_ns : options->to_ns) = *ns;
  }
  return absl::OkStatus();
}

}  // namespace

int RunTimelineCommand(const CommandArgs& args) {
  FlagSet flags("timeline", "TRACE.wst --svg FILE [flags]",
                {{"svg", "", true, "FILE", "the SVG file to write", ""},
                 {"from", "", true, "MS", "window start, ms from the trace's start", ""},
                 {"to", "", true, "MS", "window end, ms from the trace's start", ""},
                 {"window", "", true, "START:END", "the window in ms, as --from and --to", ""},
                 {"device", "d", true, "N", "GPU streams of device N only", ""},
                 ShortNamesFlag()});
  if (std::optional<int> exit = ParseCommandFlags(
          flags, args, TraceFiles::kOne,
          "One row per host thread (API calls, NVTX ranges stacked by depth) and per GPU "
          "stream\n(kernels, copies, memsets). Without a window: three steps (a recurring "
          "top-level NVTX\nrange) from the second, else the first 200 GPU operations; see "
          "docs/cli.md.\n")) {
    return *exit;
  }
  const std::string svg_path = flags.Get("svg");
  if (svg_path.empty()) {
    return UsageError(absl::InvalidArgumentError(
        "timeline needs --svg FILE, the picture to write; see warpscope timeline --help"));
  }
  TimelineOptions options;
  if (absl::Status s = ParseWindow(flags, &options); !s.ok()) return UsageError(s);
  absl::StatusOr<std::optional<uint32_t>> device = GetDeviceFlag(flags);
  if (!device.ok()) return UsageError(device.status());
  options.device = *device;
  if (absl::StatusOr<bool> ok = CheckOutputPath(svg_path, "--svg", "timeline.svg"); !ok.ok()) {
    return UsageError(ok.status());
  }
  absl::StatusOr<TraceModel> model = LoadTraceForCommand(flags.positionals()[0]);
  if (!model.ok()) return 1;
  absl::StatusOr<TimelinePicture> picture =
      RenderTimelineSvg(*model, options, KernelNamesOfFlag(flags, {&*model}));
  if (!picture.ok()) return UsageError(picture.status());
  if (absl::Status s = WriteOutputFile(svg_path, "--svg", picture->svg); !s.ok()) {
    return InputError(s);
  }
  std::fprintf(stderr, "warpscope: wrote %s (%s, %zu kernels)\n", svg_path.c_str(),
               picture->window.rule.c_str(), picture->kernels);
  return 0;
}

}  // namespace warpscope
