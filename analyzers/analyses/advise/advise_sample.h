// `warpscope advise` in bounded memory: the rules look up any event of the trace at any time
// (advise_timeline.h), so a trace with more timed events than the budget (--max-events) is
// read in part: its first steps, as many whole steps as the budget holds (the start-up,
// the warm-up and the first steady steps), and a note says how much was read, and what the
// steps left unread were like: their median against the read steps', and the slowest of them
// (every step's time is known from the NVTX ranges, read whole), so that a problem that only
// shows later in the run is pointed at with the `--step` that reads it.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_SAMPLE_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_SAMPLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// The default budget: some 4 M events, a few hundred MB of tables and indexes (docs/advise.md).
inline constexpr uint64_t kAdviseMaxEvents = 4'000'000;

// A step left unread, by the number `--step` takes.
struct UnreadStep {
  uint64_t number = 0;
  uint64_t duration_ns = 0;
};

// Unread steps this many times the median step or longer are named in the note (at most
// kSlowUnreadNamed, the slowest first).
inline constexpr double kSlowUnreadFactor = 2.0;
inline constexpr size_t kSlowUnreadNamed = 3;

struct AdviseSample {
  std::optional<TimeSlice> slice;  // unset: the whole trace
  uint64_t events = 0;             // timed events of the trace
  uint64_t events_read = 0;        // of them, those that start in the slice
  size_t steps = 0;                // the trace's steps (steps.h)
  size_t steps_read = 0;           // of them, those wholly in the slice
  // With a slice and steps: the median step read and the median step left unread (0 when
  // none), the unread steps of kSlowUnreadFactor times the median step or more, and the
  // slowest kSlowUnreadNamed of them.
  uint64_t median_read_ns = 0;
  uint64_t median_unread_ns = 0;
  size_t slow_unread = 0;
  std::vector<UnreadStep> slowest_unread;
};

// What `advise` loads first: the NVTX ranges (to find the steps) and every event counted.
TraceModelOptions AdviseRangesLoadOptions();

// The part of `ranges`' trace that advise reads within `max_events` timed events: the whole
// trace when it has no more; else the longest run of whole steps from the trace's start
// (found by `step`, as AdviseOptions::step) whose events fit, or, with fewer than two such
// steps, the longest stretch from the start that fits. Reads the file once more to count its
// events by time (in 65536 stretches of its span; a stretch counts whole). Errors: those of
// reading the file again.
absl::StatusOr<AdviseSample> PlanAdviseSample(const TraceModel& ranges, uint64_t max_events,
                                              std::string_view step);

// The trace's events of `sample` (the whole trace, or its slice), every table kept; sets
// sample->events_read to the events loaded.
absl::StatusOr<TraceModel> LoadAdviseSample(const TraceModel& ranges, AdviseSample* sample);

// What part was read, for the report's notes; "" when the whole trace was.
std::string AdviseSampleNote(const AdviseSample& sample, const TraceModel& ranges,
                             uint64_t max_events);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_ADVISE_ADVISE_SAMPLE_H_
