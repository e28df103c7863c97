// `warpscope advise` within an event budget (advise_sample.h): a trace with more timed events
// than --max-events is read in part, its first whole steps within the budget (or, without
// steps, its first stretch of time), and a note says how much; a trace within it is read whole.
#include <string>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/advise/advise_sample.h"
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

// kSteps steps named step_<k>, each ten 100 us kernels and a synchronize; with `ranges` false
// the same work without NVTX ranges. Its path.
std::string WriteSteps(bool ranges) {
  absl::StatusOr<TraceModel> written = advise_testing::WrittenModel([&](SyntheticTraceBuilder& b) {
    for (int s = 0; s < kSteps; ++s) {
      if (ranges) b.PushRange("step_" + std::to_string(s));
      for (int k = 0; k < 10; ++k) b.LaunchKernel(NamedKernel("compute", 100'000));
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
