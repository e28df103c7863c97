// `warpscope advise` within an event budget (advise_sample.h): a trace with more timed events
// than --max-events is read in part, its first whole steps within the budget (or, without
// steps, its first stretch of time), and a note says how much; a trace within it is read whole.
#include <functional>
#include <string>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/advise/advise_sample.h"
#include "analyzers/measures/steps.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/advise/advise_test_util.h"
#include "tests/fixtures/synthetic_trace.h"

namespace warpscope {
namespace {

using advise_testing::NamedKernel;
using fixtures::SyntheticTraceBuilder;
using ::testing::HasSubstr;

constexpr int kSteps = 40;

// kSteps steps named step_<k>, each `kernels(k)` (ten by default) 100 us kernels and a
// synchronize; with `ranges` false the same work without NVTX ranges. Its path.
std::string WriteSteps(bool ranges, const std::function<int(int)>& kernels = nullptr) {
  absl::StatusOr<TraceModel> written = advise_testing::WrittenModel([&](SyntheticTraceBuilder& b) {
    for (int s = 0; s < kSteps; ++s) {
      if (ranges) b.PushRange("step_" + std::to_string(s));
      const int n = kernels ? kernels(s) : 10;
      for (int k = 0; k < n; ++k) b.LaunchKernel(NamedKernel("compute", 100'000));
      b.DeviceSynchronize();
      if (ranges) b.PopRange();
    }
  });
  EXPECT_TRUE(written.ok()) << written.status();
  return written.ok() ? written->source_name : "";
}

TraceModel Ranges(const std::string& path) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path, AdviseRangesLoadOptions());
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// The events of `ranges`' whole trace, and its sample within a budget of that over `divisor`
// (read in part: the sample has a slice).
struct Budgeted {
  uint64_t budget = 0;
  AdviseSample sample;
};
Budgeted SampleWithin(const TraceModel& ranges, uint64_t divisor) {
  absl::StatusOr<AdviseSample> whole = PlanAdviseSample(ranges, UINT64_MAX, "");
  EXPECT_TRUE(whole.ok()) << whole.status();
  Budgeted b;
  b.budget = whole.ok() ? whole->events / divisor : 0;
  absl::StatusOr<AdviseSample> sample = PlanAdviseSample(ranges, b.budget, "");
  EXPECT_TRUE(sample.ok()) << sample.status();
  if (sample.ok()) b.sample = *std::move(sample);
  EXPECT_TRUE(b.sample.slice.has_value());
  return b;
}

TEST(AdviseSample, ATraceWithinTheBudgetIsReadWhole) {
  const TraceModel ranges = Ranges(WriteSteps(true));
  EXPECT_TRUE(ranges.kernels.empty());  // only the ranges were kept
  absl::StatusOr<AdviseSample> sample = PlanAdviseSample(ranges, 1'000'000, "");
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_FALSE(sample->slice.has_value());
  EXPECT_EQ(sample->steps, static_cast<size_t>(kSteps));
  absl::StatusOr<TraceModel> model = LoadAdviseSample(ranges, &*sample);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->kernels.size(), 10u * kSteps);
  EXPECT_EQ(sample->events_read, sample->events);
  EXPECT_EQ(AdviseSampleNote(*sample, ranges, 1'000'000), "");
}

TEST(AdviseSample, ALargerTraceIsReadInItsFirstWholeStepsWithinTheBudget) {
  const TraceModel ranges = Ranges(WriteSteps(true));
  absl::StatusOr<AdviseSample> whole = PlanAdviseSample(ranges, UINT64_MAX, "");
  ASSERT_TRUE(whole.ok());
  const uint64_t budget = whole->events / 4;
  absl::StatusOr<AdviseSample> sample = PlanAdviseSample(ranges, budget, "");
  ASSERT_TRUE(sample.ok()) << sample.status();
  ASSERT_TRUE(sample->slice.has_value());
  // A step is a 40th of the events: a quarter holds 9 whole steps, or 10 but for a stretch
  // counted whole at the edge.
  EXPECT_GE(sample->steps_read, 8u);
  EXPECT_LE(sample->steps_read, 10u);
  absl::StatusOr<TraceModel> model = LoadAdviseSample(ranges, &*sample);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_LE(sample->events_read, budget);
  EXPECT_GT(sample->events_read, budget * 3 / 4);
  EXPECT_EQ(model->kernels.size(), 10u * sample->steps_read);
  const AdviseReport report = BuildAdviseReport(*model, "t.wst", {});
  EXPECT_EQ(report.steps, sample->steps_read);
  EXPECT_THAT(AdviseSampleNote(*sample, ranges, budget),
              HasSubstr("advise read the first " + std::to_string(sample->steps_read) +
                        " of its 40 steps (" + std::to_string(sample->events_read) + " events)"));
}

// A slow step past the part read is named with the --step that reads it; steps as slow as the
// median are not.
TEST(AdviseSample, SlowStepsLeftUnreadAreNamed) {
  const TraceModel ranges = Ranges(WriteSteps(true, [](int s) {
    return s == 35 ? 40 : s == 31 ? 25 : 10;  // 4x and 2.5x the median step
  }));
  const Budgeted b = SampleWithin(ranges, 4);
  const AdviseSample* sample = &b.sample;
  const uint64_t budget = b.budget;
  ASSERT_LT(sample->steps_read, 31u);
  EXPECT_EQ(sample->slow_unread, 2u);
  ASSERT_EQ(sample->slowest_unread.size(), 2u);
  EXPECT_EQ(sample->slowest_unread[0].number, 35u);  // the slowest first
  EXPECT_EQ(sample->slowest_unread[1].number, 31u);
  EXPECT_GT(sample->slowest_unread[0].duration_ns, 3 * sample->median_read_ns);
  // The same 10 kernels a step, read or not.
  EXPECT_NEAR(static_cast<double>(sample->median_unread_ns),
              static_cast<double>(sample->median_read_ns), 0.02 * sample->median_read_ns);
  const std::string note = AdviseSampleNote(*sample, ranges, budget);
  EXPECT_THAT(note, HasSubstr("; 2 of them took 2 times the median step or more, the slowest "
                              "step 35 ("));
  EXPECT_THAT(note, HasSubstr("step 31 ("));
  EXPECT_THAT(note, HasSubstr("--step 35 reads one"));
}

// Steps that slow down later in the run show in the medians of the steps read and not read.
TEST(AdviseSample, ALaterSlowerPartShowsInTheMedians) {
  const TraceModel ranges = Ranges(WriteSteps(true, [](int s) { return s < 20 ? 10 : 15; }));
  const Budgeted b = SampleWithin(ranges, 4);
  const AdviseSample* sample = &b.sample;
  EXPECT_EQ(sample->slow_unread, 0u);  // 1.5x: not slow enough to be named
  EXPECT_GT(static_cast<double>(sample->median_unread_ns),
            1.4 * static_cast<double>(sample->median_read_ns));
  const std::string note = AdviseSampleNote(*sample, ranges, b.budget);
  EXPECT_THAT(note, HasSubstr("; the steps not read took a median of "));
  EXPECT_THAT(note, ::testing::Not(HasSubstr("reads one")));
}

// Asked for part of the trace (--step), the steps outside it are neither read nor unread.
TEST(AdviseSample, StepsOutsideThePartAskedForAreNotCounted) {
  absl::StatusOr<TraceModel> all = TraceModel::Load(
      WriteSteps(true, [](int s) { return s == 38 ? 40 : 10; }), AdviseRangesLoadOptions());
  ASSERT_TRUE(all.ok());
  const StepSet steps = FindSteps(all->nvtx_ranges, "");
  TraceModelOptions load = AdviseRangesLoadOptions();
  load.slice = TimeSlice{steps.steps[0].start_ns, steps.steps[19].end_ns};  // steps 0-19
  absl::StatusOr<TraceModel> ranges = TraceModel::Load(all->source_name, load);
  ASSERT_TRUE(ranges.ok()) << ranges.status();
  const Budgeted b = SampleWithin(*ranges, 2);
  const AdviseSample* sample = &b.sample;
  EXPECT_EQ(sample->slow_unread, 0u);  // step 38, outside the part asked for
  EXPECT_GT(sample->median_unread_ns, 0u);
}

TEST(AdviseSample, WithoutStepsTheFirstStretchOfTimeWithinTheBudgetIsRead) {
  const TraceModel ranges = Ranges(WriteSteps(false));
  absl::StatusOr<AdviseSample> whole = PlanAdviseSample(ranges, UINT64_MAX, "");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->steps, 0u);
  const uint64_t budget = whole->events / 2;
  absl::StatusOr<AdviseSample> sample = PlanAdviseSample(ranges, budget, "");
  ASSERT_TRUE(sample.ok()) << sample.status();
  ASSERT_TRUE(sample->slice.has_value());
  absl::StatusOr<TraceModel> model = LoadAdviseSample(ranges, &*sample);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_LE(sample->events_read, budget);
  EXPECT_GT(sample->events_read, budget * 9 / 10);
  EXPECT_THAT(AdviseSampleNote(*sample, ranges, budget), HasSubstr("advise read its first "));
}

}  // namespace
}  // namespace warpscope
