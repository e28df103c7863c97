// Which part of a trace `warpscope advise` reads within its event budget (advise_sample.h).
#include "analyzers/analyses/advise/advise_sample.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_format.h"
#include "analyzers/measures/steps.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

constexpr size_t kStretches = 65536;

// Counts a trace's timed events by the stretch of its span they start in.
class StartCounter : public TraceEventSink {
 public:
  explicit StartCounter(const TimeSpan& span)
      : begin_(span.begin_ns), width_((span.end_ns - span.begin_ns) / kStretches + 1),
        counts_(kStretches, 0) {}
  using TraceEventSink::Add;
  void Add(const KernelEvent& e) override { Count(e.start_ns); }
  void Add(const MemcpyEvent& e) override { Count(e.start_ns); }
  void Add(const MemsetEvent& e) override { Count(e.start_ns); }
  void Add(const SyncEvent& e) override { Count(e.start_ns); }
  void Add(const ApiCallEvent& e) override { Count(e.start_ns); }
  void Add(const GraphLaunchEvent& e) override { Count(e.start_ns); }
  void Add(const OverheadEvent& e) override { Count(e.start_ns); }
  void Add(const NvtxRange& e) override { Count(e.start_ns); }
  void Add(const NvtxMark& e) override { Count(e.timestamp_ns); }
  void Add(const NcclCall& e) override { Count(e.start_ns); }
  void Add(const ApiStack& e) override { Count(e.timestamp_ns); }
  void Add(const MemoryEvent& e) override { Count(e.timestamp_ns); }

  size_t StretchOf(uint64_t t) const {
    return t <= begin_ ? 0 : std::min<size_t>((t - begin_) / width_, kStretches - 1);
  }
  uint64_t StretchEnd(size_t i) const { return begin_ + (i + 1) * width_; }
  // Events that start before `t` or in its stretch (an upper bound on those before it).
  uint64_t StartedBy(uint64_t t) const { return counts_[StretchOf(t)]; }
  // After Accumulate: the events of stretches 0..i.
  uint64_t Through(size_t i) const { return counts_[i]; }
  void Accumulate() {
    for (size_t i = 1; i < counts_.size(); ++i) counts_[i] += counts_[i - 1];
  }

 private:
  void Count(uint64_t t) { ++counts_[StretchOf(t)]; }
  uint64_t begin_;
  uint64_t width_;
  std::vector<uint64_t> counts_;
};

uint64_t MedianNs(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// What the steps of the part asked for (`asked`: --from/--to/--step/--window, else the whole
// trace) that `sample`'s slice leaves out were like (AdviseSample's step fields).
void DescribeUnreadSteps(const StepSet& steps, const TimeSlice& asked, AdviseSample* sample) {
  std::vector<uint64_t> all, read, unread;
  std::vector<UnreadStep> slow;
  auto in_asked = [&](const Step& s) { return asked.Overlaps(s.start_ns, s.end_ns); };
  for (const Step& s : steps.steps) {
    if (in_asked(s)) all.push_back(s.duration_ns());
  }
  const uint64_t median = MedianNs(all);
  for (size_t i = 0; i < steps.steps.size(); ++i) {
    const Step& s = steps.steps[i];
    if (!in_asked(s)) continue;
    if (s.end_ns <= sample->slice->end_ns && s.start_ns >= sample->slice->begin_ns) {
      read.push_back(s.duration_ns());
      continue;
    }
    unread.push_back(s.duration_ns());
    if (median > 0 && static_cast<double>(s.duration_ns()) >=
                          kSlowUnreadFactor * static_cast<double>(median)) {
      slow.push_back({s.number.value_or(i), s.duration_ns()});
    }
  }
  sample->median_read_ns = MedianNs(read);
  sample->median_unread_ns = MedianNs(unread);
  sample->slow_unread = slow.size();
  std::stable_sort(slow.begin(), slow.end(), [](const UnreadStep& a, const UnreadStep& b) {
    return a.duration_ns > b.duration_ns;
  });
  if (slow.size() > kSlowUnreadNamed) slow.resize(kSlowUnreadNamed);
  sample->slowest_unread = std::move(slow);
}

uint64_t TimedEvents(const TraceModel& model) {
  uint64_t n = 0;
  for (uint64_t c : model.event_counts) n += c;
  return n;
}

}  // namespace

TraceModelOptions AdviseRangesLoadOptions() {
  TraceModelOptions load;
  load.keep_pc_sample_records = false;
  load.keep_events = EventKindBit(EventKind::kNvtxRange);
  return load;
}

absl::StatusOr<AdviseSample> PlanAdviseSample(const TraceModel& ranges, uint64_t max_events,
                                              std::string_view step) {
  AdviseSample sample;
  sample.events = TimedEvents(ranges);
  const StepSet steps = FindSteps(ranges.nvtx_ranges, step);
  sample.steps = steps.steps.size();
  if (sample.events <= max_events) {
    sample.events_read = sample.events;
    sample.steps_read = sample.steps;
    return sample;
  }
  // Within the part of the trace asked for (--from/--to/--step/--window), if any.
  StartCounter counter(ranges.span);
  TraceModelOptions again;
  again.slice = ranges.slice;
  again.keep_events = 0;
  again.keep_pc_sample_records = false;
  again.sink = &counter;
  again.sink_events = kAllEventKinds;
  if (absl::Status s = TraceModel::Load(ranges.source_name, again).status(); !s.ok()) return s;
  counter.Accumulate();
  // The most whole steps from the start whose events (those that start before the next
  // step's start) fit.
  size_t whole = 0;
  while (whole < steps.steps.size() &&
         counter.StartedBy(steps.steps[whole].end_ns - 1) <= max_events) {
    ++whole;
  }
  TimeSlice slice = ranges.slice.value_or(TimeSlice{});
  if (whole >= 2) {
    slice.end_ns = std::min(slice.end_ns, steps.steps[whole - 1].end_ns);
    sample.steps_read = whole;
  } else {
    size_t last = 0;  // at least one stretch, however many events it holds
    while (last + 1 < kStretches && counter.Through(last + 1) <= max_events) ++last;
    slice.end_ns = std::min(slice.end_ns, counter.StretchEnd(last));
    sample.steps_read = 0;
    for (const Step& s : steps.steps) sample.steps_read += s.end_ns <= slice.end_ns ? 1 : 0;
  }
  sample.slice = slice;
  DescribeUnreadSteps(steps, ranges.slice.value_or(TimeSlice{}), &sample);
  return sample;
}

absl::StatusOr<TraceModel> LoadAdviseSample(const TraceModel& ranges, AdviseSample* sample) {
  TraceModelOptions load;
  load.slice = sample->slice.has_value() ? sample->slice : ranges.slice;
  absl::StatusOr<TraceModel> model = TraceModel::Load(ranges.source_name, load);
  if (model.ok()) sample->events_read = TimedEvents(*model);
  return model;
}

std::string AdviseSampleNote(const AdviseSample& sample, const TraceModel& ranges,
                             uint64_t max_events) {
  if (!sample.slice.has_value()) return "";
  const std::string part =
      sample.steps_read >= 2
          ? absl::StrFormat("the first %d of its %d steps", sample.steps_read, sample.steps)
          : absl::StrFormat("its first %s of %s",
                            FormatDuration(static_cast<double>(sample.slice->end_ns -
                                                               ranges.span.begin_ns)),
                            FormatDuration(static_cast<double>(ranges.span.duration_ns())));
  std::string note = absl::StrFormat(
      "the trace has %d timed events, more than --max-events %d: advise read %s (%d events), "
      "and its figures and findings are of that part",
      sample.events, max_events, part, sample.events_read);
  if (sample.median_unread_ns > 0 && sample.median_read_ns > 0) {
    absl::StrAppendFormat(
        &note, "; the steps not read took a median of %s a step, those read %s",
        FormatDuration(static_cast<double>(sample.median_unread_ns)),
        FormatDuration(static_cast<double>(sample.median_read_ns)));
  }
  if (!sample.slowest_unread.empty()) {
    std::string named;
    for (const UnreadStep& s : sample.slowest_unread) {
      absl::StrAppendFormat(&named, "%sstep %d (%s)", named.empty() ? "" : ", ", s.number,
                            FormatDuration(static_cast<double>(s.duration_ns)));
    }
    absl::StrAppendFormat(&note,
                          "; %d of them took %g times the median step or more, the slowest %s: "
                          "--step %d reads one",
                          sample.slow_unread, kSlowUnreadFactor, named,
                          sample.slowest_unread.front().number);
  }
  return note;
}

}  // namespace warpscope
