// Memory growth over progress (analyzers/measures/memory_growth.h) on series made here: flat
// with noise, a leak from the first point, a leak that begins mid-run, the caching
// allocator's stairs, a warm-up rise that was not left out, a long series (thinned), and the
// instants of progress of a trace without steps.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "analyzers/measures/memory_growth.h"
#include "analyzers/model/trace_model.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kBase = 500 * kMiB;

// A deterministic wobble of up to +-2 MiB, so that no series is exactly straight.
uint64_t Wobble(size_t i) { return (i * 7919 % 5) * kMiB - 2 * kMiB; }

TEST(MemoryGrowth, FlatWithNoiseIsNoLeak) {
  std::vector<uint64_t> v;
  for (size_t i = 0; i < 40; ++i) v.push_back(kBase + Wobble(i));
  const GrowthJudgement g = JudgeGrowth(v);
  ASSERT_TRUE(g.slope);
  EXPECT_FALSE(g.leak);
  EXPECT_LE(g.slope->low, 0);
}

TEST(MemoryGrowth, LeakFromTheFirstPoint) {
  std::vector<uint64_t> v;
  for (size_t i = 0; i < 20; ++i) v.push_back(kBase + 16 * kMiB * i + Wobble(i));
  const GrowthJudgement g = JudgeGrowth(v);
  EXPECT_TRUE(g.leak);
  EXPECT_EQ(g.onset, 0u);
  EXPECT_NEAR(g.slope->per_step, 16.0 * kMiB, 0.5 * kMiB);
  EXPECT_LT(g.slope->low, g.slope->per_step);
  EXPECT_GT(g.slope->high, g.slope->per_step);
}

TEST(MemoryGrowth, LeakThatBeginsMidRunIsMeasuredFromItsOnset) {
  // Flat for 10 points, then 32 MiB a point for 30: a slope over all 40 points would read
  // less than 32 MiB; the rise alone reads 32.
  std::vector<uint64_t> v;
  for (size_t i = 0; i < 40; ++i) {
    v.push_back(kBase + (i < 10 ? 0 : 32 * kMiB * (i - 9)) + Wobble(i));
  }
  const GrowthJudgement g = JudgeGrowth(v);
  EXPECT_TRUE(g.leak);
  EXPECT_GE(g.onset, 8u);
  EXPECT_LE(g.onset, 10u);
  EXPECT_NEAR(g.slope->per_step, 32.0 * kMiB, 1.0 * kMiB);
}

TEST(MemoryGrowth, CachingAllocatorStairsAreALeakAtTheirMeanRate) {
  // A 20 MiB segment every fifth point: 4 MiB a point on average.
  std::vector<uint64_t> v;
  for (size_t i = 0; i < 40; ++i) v.push_back(kBase + 20 * kMiB * (i / 5));
  const GrowthJudgement g = JudgeGrowth(v);
  EXPECT_TRUE(g.leak);
  EXPECT_NEAR(g.slope->per_step, 4.0 * kMiB, 1.0 * kMiB);
}

TEST(MemoryGrowth, AWarmUpRiseThenFlatIsNoLeak) {
  std::vector<uint64_t> v;
  for (size_t i = 0; i < 30; ++i) v.push_back(kBase + (i < 3 ? 100 * kMiB * i : 300 * kMiB));
  const GrowthJudgement g = JudgeGrowth(v);
  EXPECT_FALSE(g.leak);
}

TEST(MemoryGrowth, LongSeriesAreThinnedAndTheSlopeScaledBack) {
  std::vector<uint64_t> v;
  for (size_t i = 0; i < 30000; ++i) v.push_back(kBase + 1024 * i);
  const GrowthJudgement g = JudgeGrowth(v);
  EXPECT_TRUE(g.leak);
  EXPECT_NEAR(g.slope->per_step, 1024.0, 1.0);
}

TEST(MemoryGrowth, TooFewPointsGiveNoJudgement) {
  const GrowthJudgement g = JudgeGrowth({kBase, kBase + 100 * kMiB});
  EXPECT_FALSE(g.slope);
  EXPECT_FALSE(g.leak);
}

std::vector<uint64_t> WithKernels(size_t n) {
  std::vector<uint64_t> kernels;
  for (size_t i = 0; i < n; ++i) {
    KernelEvent k;
    k.start_ns = 1000 * (n - i);  // not in time order in the model
    k.duration_ns = 10;
    kernels.push_back(k.end_ns());
  }
  return kernels;
}

TEST(MemoryGrowth, ProgressInstantsAreEvenlySpacedKernelEnds) {
  const std::vector<uint64_t> kernels = WithKernels(1000);
  double per_point = 0;
  const std::vector<uint64_t> at = KernelProgressInstants(kernels, 100, 0.1, &per_point);
  ASSERT_EQ(at.size(), 100u);
  EXPECT_EQ(at.front(), 1000u * 101 + 10);  // the 101st kernel in time order
  EXPECT_EQ(at.back(), 1000u * 1000 + 10);
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end()));
  EXPECT_NEAR(per_point, 899.0 / 99, 1e-9);
}

TEST(MemoryGrowth, TheKernelSampleStaysBoundedAndEvenlySpaced) {
  KernelEndSample sample(8);
  for (uint64_t i = 0; i < 1000; ++i) sample.Add(i);
  EXPECT_LT(sample.ends().size(), 16u);
  EXPECT_EQ(sample.stride(), 128u);
  for (size_t i = 0; i < sample.ends().size(); ++i) EXPECT_EQ(sample.ends()[i], i * 128);
}

TEST(MemoryGrowth, ProgressNeedsEnoughKernels) {
  EXPECT_TRUE(KernelProgressInstants(WithKernels(20), 100, 0.1, nullptr).empty());
  EXPECT_EQ(KernelProgressInstants(WithKernels(40), 100, 0.1, nullptr).size(), 12u);
}

}  // namespace
}  // namespace warpscope
