// Slices applied while loading (TraceModelOptions::slice, analyses/slice.h), on a bundled
// trace of 300 steps: the sliced model holds exactly the events of the whole model that
// overlap the slice, in file order, with every definition; ForEachEvent reads the same ones
// again; --step N-M is the steps' span as the step rule finds them; an empty slice and a
// missing step are one error naming what the trace has.
#include <string>
#include <vector>

#include "analyzers/analyses/slice.h"
#include "analyzers/measures/steps.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;

std::string Pipeline() {
  return testing::SourceDir() + "/examples/traces/cuda13.0_sm90/pipeline_pm.wst";
}

TraceModel LoadOrDie(const std::string& path, const TraceModelOptions& options = {}) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path, options);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

// The events of `table` that overlap `slice`, by their start and end.
template <typename Event, typename Span>
std::vector<uint64_t> StartsIn(const std::vector<Event>& table, const TimeSlice& slice,
                               Span span) {
  std::vector<uint64_t> starts;
  for (const Event& e : table) {
    const auto [begin, end] = span(e);
    if (slice.Overlaps(begin, end)) starts.push_back(begin);
  }
  return starts;
}

template <typename Event>
std::vector<uint64_t> Starts(const std::vector<Event>& table, const TimeSlice& slice) {
  return StartsIn(table, slice, [](const Event& e) {
    return std::pair<uint64_t, uint64_t>(e.start_ns, e.start_ns + e.duration_ns);
  });
}

SliceRequest Steps(uint64_t first, uint64_t last) {
  SliceRequest r;
  r.first_step = first;
  r.last_step = last;
  r.flags = "--step";
  return r;
}

TEST(TraceSliceTest, KeepsExactlyTheEventsThatOverlapWithEveryDefinition) {
  const TraceModel whole = LoadOrDie(Pipeline());
  const StepSet steps = FindSteps(whole.nvtx_ranges);
  ASSERT_GE(steps.steps.size(), 20u);
  const TimeSlice slice{steps.steps[10].start_ns, steps.steps[19].end_ns};

  absl::StatusOr<TraceModel> sliced = LoadSlicedTrace(Pipeline(), {}, Steps(10, 19));
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  ASSERT_TRUE(sliced->slice.has_value());
  EXPECT_EQ(sliced->slice->begin_ns, slice.begin_ns);
  EXPECT_EQ(sliced->slice->end_ns, slice.end_ns);

  EXPECT_EQ(Starts(sliced->kernels, TimeSlice{}), Starts(whole.kernels, slice));
  EXPECT_EQ(Starts(sliced->memcpys, TimeSlice{}), Starts(whole.memcpys, slice));
  EXPECT_EQ(Starts(sliced->api_calls, TimeSlice{}), Starts(whole.api_calls, slice));
  EXPECT_EQ(Starts(sliced->nvtx_ranges, TimeSlice{}), Starts(whole.nvtx_ranges, slice));
  EXPECT_EQ(Starts(sliced->syncs, TimeSlice{}), Starts(whole.syncs, slice));
  EXPECT_LT(sliced->kernels.size(), whole.kernels.size() / 10);
  EXPECT_GT(sliced->kernels.size(), 0u);
  EXPECT_EQ(sliced->EventCount(EventKind::kKernel), sliced->kernels.size());
  // Definitions whole; the span is the slice's events', the whole span the file's.
  EXPECT_EQ(sliced->threads.size(), whole.threads.size());
  EXPECT_EQ(sliced->devices.size(), whole.devices.size());
  EXPECT_EQ(sliced->whole_span.begin_ns, whole.span.begin_ns);
  EXPECT_EQ(sliced->whole_span.end_ns, whole.span.end_ns);
  EXPECT_GT(sliced->span.begin_ns, whole.span.begin_ns);
  // The ten step ranges, whole; the one after starts at the slice's end and is left out.
  const StepSet in_slice = FindSteps(sliced->nvtx_ranges);
  EXPECT_EQ(in_slice.steps.size(), 10u);
}

TEST(TraceSliceTest, ForEachEventReadsTheSliceAgain) {
  TraceModelOptions options;
  options.keep_events = 0;
  SliceRequest r;
  r.from_ns = 360'000'000;
  r.to_ns = 370'000'000;
  r.flags = "--from 360 --to 370";
  absl::StatusOr<TraceModel> sliced = LoadSlicedTrace(Pipeline(), options, r);
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  EXPECT_TRUE(sliced->kernels.empty());
  size_t kernels = 0;
  ASSERT_TRUE(ForEachEvent<KernelEvent>(*sliced, [&](const KernelEvent& k) {
                EXPECT_TRUE(*r.from_ns < k.start_ns + k.duration_ns && k.start_ns < *r.to_ns);
                ++kernels;
              }).ok());
  EXPECT_EQ(kernels, sliced->EventCount(EventKind::kKernel));
  EXPECT_GT(kernels, 0u);
  const TraceModel whole = LoadOrDie(Pipeline());
  EXPECT_LT(kernels, whole.kernels.size());
}

TEST(TraceSliceTest, AnEmptySliceNamesWhatTheTraceHas) {
  absl::StatusOr<TraceModel> none = LoadSlicedTrace(Pipeline(), {}, Steps(400, 410));
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("300 steps"));
  EXPECT_THAT(none.status().message(), HasSubstr("numbered 0 to 299"));

  SliceRequest late;
  late.from_ns = uint64_t{1} << 50;
  late.flags = "--from 1e12";
  absl::StatusOr<TraceModel> after = LoadSlicedTrace(Pipeline(), {}, late);
  ASSERT_FALSE(after.ok());
  EXPECT_THAT(after.status().message(), HasSubstr("selects no event"));
  EXPECT_THAT(after.status().message(), HasSubstr("its events run from"));

  SliceRequest window;
  window.window = 2;
  window.flags = "--window 2";
  absl::StatusOr<TraceModel> no_window = LoadSlicedTrace(Pipeline(), {}, window);
  ASSERT_FALSE(no_window.ok());
  EXPECT_THAT(no_window.status().message(), HasSubstr("has capture windows 1"));
}

}  // namespace
}  // namespace warpscope
