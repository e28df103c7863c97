// The slice options and the sliced load (slice.h).
#include "analyzers/analyses/slice.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "analyzers/measures/ns_from_double.h"
#include "analyzers/measures/steps.h"
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

// --window START:END (ms) or K (a capture window).
absl::Status ParseWindow(const std::string& text, SliceRequest* r) {
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() == 1) {
    uint32_t k = 0;
    if (!absl::SimpleAtoi(text, &k)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--window ", QuoteValue(text),
          ": expected K, a capture window's number (warpscope info lists them), or START:END "
          "in ms from the trace's start, such as 10:25"));
    }
    r->window = k;
    return absl::OkStatus();
  }
  if (parts.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--window ", QuoteValue(text),
                     ": expected K or START:END in ms from the trace's start, such as 10:25"));
  }
  absl::StatusOr<uint64_t> from = TraceNsFromMs("--window", parts[0]);
  if (!from.ok()) return from.status();
  absl::StatusOr<uint64_t> to = TraceNsFromMs("--window", parts[1]);
  if (!to.ok()) return to.status();
  r->from_ns = *from;
  r->to_ns = *to;
  return absl::OkStatus();
}

// --step N or N-M.
absl::Status ParseSteps(const std::string& text, SliceRequest* r) {
  const std::vector<std::string> parts = absl::StrSplit(text, '-');
  uint64_t first = 0, last = 0;
  if (parts.size() > 2 || !absl::SimpleAtoi(parts[0], &first) ||
      !absl::SimpleAtoi(parts.back(), &last)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--step ", QuoteValue(text),
        ": expected a step N or steps N-M, numbered as warpscope job lists them (the NVTX "
        "range that marks steps is named with --step-range)"));
  }
  if (last < first) {
    return absl::InvalidArgumentError(
        absl::StrCat("--step ", QuoteValue(text), ": the last step comes before the first"));
  }
  r->first_step = first;
  r->last_step = last;
  return absl::OkStatus();
}

std::string Ms(uint64_t ns) { return absl::StrFormat("%.3f ms", static_cast<double>(ns) / 1e6); }

// The step numbers of a set as warpscope job prints them: the range's number, else its index.
uint64_t StepNumber(const StepSet& set, size_t i) { return set.steps[i].number.value_or(i); }

absl::StatusOr<TimeSlice> StepSlice(const std::string& path, const SliceRequest& r) {
  TraceModelOptions first;
  first.keep_events = EventKindBit(EventKind::kNvtxRange);
  first.keep_pc_sample_records = false;
  first.skip_other_events = true;
  absl::StatusOr<TraceModel> model = TraceModel::Load(path, first);
  if (!model.ok()) return model.status();
  const StepSet set = FindSteps(model->nvtx_ranges, r.step_range);
  if (set.steps.empty()) {
    return absl::NotFoundError(absl::StrCat(
        r.flags, ": ", path, " has no steps (", set.how.empty() ? "no repeated NVTX range" : set.how,
        "); name the range that marks them with --step-range, or slice by --from/--to"));
  }
  std::optional<TimeSlice> slice;
  for (size_t i = 0; i < set.steps.size(); ++i) {
    const uint64_t n = StepNumber(set, i);
    if (n < *r.first_step || n > *r.last_step) continue;
    if (!slice) slice = TimeSlice{set.steps[i].start_ns, set.steps[i].end_ns};
    slice->end_ns = set.steps[i].end_ns;
  }
  if (!slice) {
    return absl::NotFoundError(absl::StrCat(
        r.flags, " selects no step of ", path, ": its ", set.steps.size(), " steps (",
        set.family, ") are numbered ", StepNumber(set, 0), " to ",
        StepNumber(set, set.steps.size() - 1)));
  }
  return *slice;
}

absl::StatusOr<TimeSlice> WindowSlice(const std::string& path, const SliceRequest& r) {
  TraceModelOptions first;
  first.keep_events = 0;
  first.keep_pc_sample_records = false;
  first.skip_other_events = true;
  absl::StatusOr<TraceModel> model = TraceModel::Load(path, first);
  if (!model.ok()) return model.status();
  std::string ids;
  for (const CaptureWindowRange& w : model->capture_windows) {
    if (w.id == *r.window) return TimeSlice{w.begin_ns, w.end_ns.value_or(UINT64_MAX)};
    absl::StrAppend(&ids, ids.empty() ? "" : ", ", w.id);
  }
  return absl::NotFoundError(
      ids.empty() ? absl::StrCat(r.flags, ": ", path, " has no capture windows (it was "
                                 "recorded whole); slice it by --from/--to or --step")
                  : absl::StrCat(r.flags, ": ", path, " has capture windows ", ids));
}

}  // namespace

std::vector<AnalysisOption> SliceOptions() {
  return {
      {"from", "", OptionKind::kText, "MS", "read only from this time, ms from the trace's start",
       ""},
      {"to", "", OptionKind::kText, "MS", "read only up to this time, ms from the trace's start",
       ""},
      {"step", "", OptionKind::kText, "N[-M]",
       "read only step N (or steps N to M), numbered as warpscope job lists them", ""},
      {"window", "", OptionKind::kText, "K",
       "read only capture window K (or START:END, ms from the trace's start)", ""},
  };
}

absl::StatusOr<SliceRequest> ParseSlice(const OptionValues& values) {
  SliceRequest r;
  r.step_range = values.Text("step-range");
  int ways = 0;
  for (const char* flag : {"from", "to", "step", "window"}) {
    if (!values.Has(flag)) continue;
    absl::StrAppend(&r.flags, r.flags.empty() ? "" : " ", "--", flag, " ", values.Text(flag));
  }
  if (values.Has("from") || values.Has("to")) ++ways;
  if (values.Has("step")) ++ways;
  if (values.Has("window")) ++ways;
  if (ways > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(r.flags, ": give one of --from/--to, --step or --window"));
  }
  for (const char* flag : {"from", "to"}) {
    if (!values.Has(flag)) continue;
    absl::StatusOr<uint64_t> ns = TraceNsFromMs(absl::StrCat("--", flag), values.Text(flag));
    if (!ns.ok()) return ns.status();
    (std::string_view(flag) == "from" ? r.from_ns : r.to_ns) = *ns;
  }
  if (values.Has("step")) {
    if (absl::Status s = ParseSteps(values.Text("step"), &r); !s.ok()) return s;
  }
  if (values.Has("window")) {
    if (absl::Status s = ParseWindow(values.Text("window"), &r); !s.ok()) return s;
  }
  if (r.from_ns && r.to_ns && *r.to_ns <= *r.from_ns) {
    return absl::InvalidArgumentError(
        absl::StrCat(r.flags, ": the end is not after the start"));
  }
  return r;
}

absl::StatusOr<SliceRequest> SliceOfRun(const AnalysisRow& row, const AnalysisInputs& in,
                                        const OptionValues& values) {
  absl::StatusOr<SliceRequest> r = ParseSlice(values);
  if (r.ok() && !r->empty() && !LoadsTraces(row, in)) {
    return absl::InvalidArgumentError(
        absl::StrCat(r->flags, ": ", row.name, " of a job reads each rank's whole trace; slice "
                     "one trace at a time"));
  }
  return r;
}

absl::StatusOr<TraceModel> LoadSlicedTrace(const std::string& path, TraceModelOptions options,
                                           const SliceRequest& request) {
  if (request.empty()) return TraceModel::Load(path, options);
  absl::StatusOr<TimeSlice> slice =
      request.first_step ? StepSlice(path, request)
      : request.window   ? WindowSlice(path, request)
                         : absl::StatusOr<TimeSlice>(TimeSlice{request.from_ns.value_or(0),
                                                               request.to_ns.value_or(UINT64_MAX)});
  if (!slice.ok()) return slice.status();
  options.slice = *slice;
  absl::StatusOr<TraceModel> model = TraceModel::Load(path, options);
  if (!model.ok()) return model.status();
  uint64_t events = 0;
  for (uint64_t n : model->event_counts) events += n;
  if (events == 0) {
    const TimeSpan& whole = model->whole_span;
    return absl::NotFoundError(
        whole.empty ? absl::StrCat(request.flags, ": ", path, " has no timed events")
                    : absl::StrCat(request.flags, " selects no event of ", path,
                                   ": its events run from ", Ms(whole.begin_ns), " to ",
                                   Ms(whole.end_ns), " from the trace's start"));
  }
  return model;
}

}  // namespace warpscope
