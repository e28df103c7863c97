// The union of GPU work intervals that `summary` and `advise` share: covered time, first and
// last instant, each gap with the intervals on either side, and the merged stretches.
#include "analyzers/model/interval_union.h"

#include <vector>

#include "gtest/gtest.h"

namespace warpscope {
namespace {

TEST(IntervalUnion, NoIntervalsCoverNothing) {
  const IntervalUnion u = UnionOfSorted({});
  EXPECT_EQ(u.begin_ns, 0u);
  EXPECT_EQ(u.end_ns, 0u);
  EXPECT_EQ(u.covered_ns, 0u);
  EXPECT_TRUE(u.gaps.empty());
}

TEST(IntervalUnion, OverlappingAndTouchingIntervalsLeaveNoGap) {
  // [10, 30) and [20, 25) overlap, [30, 40) touches: one stretch from 10 to 40.
  const IntervalUnion u = UnionOfSorted({{10, 30}, {20, 25}, {30, 40}});
  EXPECT_EQ(u.begin_ns, 10u);
  EXPECT_EQ(u.end_ns, 40u);
  EXPECT_EQ(u.covered_ns, 30u);
  EXPECT_EQ(u.span_ns(), 30u);
  EXPECT_TRUE(u.gaps.empty());
}

TEST(IntervalUnion, GapsNameTheIntervalEndingLastAndTheNextToStart) {
  // 0: [100, 200)  1: [110, 150) inside 0  2: [120, 200) ends with 0 (0 stays the one before)
  // gap [200, 260)  3: [260, 300)  4: [280, 500)  gap [500, 900)  5: [900, 901)
  const std::vector<TimeInterval> work = {{100, 200}, {110, 150}, {120, 200},
                                          {260, 300}, {280, 500}, {900, 901}};
  const IntervalUnion u = UnionOfSorted(work);
  EXPECT_EQ(u.begin_ns, 100u);
  EXPECT_EQ(u.end_ns, 901u);
  EXPECT_EQ(u.covered_ns, 100u + 240u + 1u);
  EXPECT_EQ(u.span_ns() - u.covered_ns, 60u + 400u);
  ASSERT_EQ(u.gaps.size(), 2u);
  EXPECT_EQ(u.gaps[0].begin_ns, 200u);
  EXPECT_EQ(u.gaps[0].end_ns, 260u);
  EXPECT_EQ(u.gaps[0].length(), 60u);
  EXPECT_EQ(u.gaps[0].before, 0u);
  EXPECT_EQ(u.gaps[0].after, 3u);
  EXPECT_EQ(u.gaps[1].begin_ns, 500u);
  EXPECT_EQ(u.gaps[1].end_ns, 900u);
  EXPECT_EQ(u.gaps[1].before, 4u);
  EXPECT_EQ(u.gaps[1].after, 5u);
}

TEST(IntervalUnion, AnIntervalInsideAnEarlierOneEndsNothing) {
  // The long first interval covers the short ones after it: the union ends with it.
  const IntervalUnion u = UnionOfSorted({{0, 1000}, {10, 20}, {30, 40}, {1500, 1600}});
  EXPECT_EQ(u.end_ns, 1600u);
  EXPECT_EQ(u.covered_ns, 1100u);
  ASSERT_EQ(u.gaps.size(), 1u);
  EXPECT_EQ(u.gaps[0].begin_ns, 1000u);
  EXPECT_EQ(u.gaps[0].before, 0u);
  EXPECT_EQ(u.gaps[0].after, 3u);
}

TEST(IntervalUnion, EmptyIntervalsCountAsInstants) {
  // A zero-length interval starts a stretch of its own but covers no time.
  const IntervalUnion u = UnionOfSorted({{5, 5}, {8, 10}});
  EXPECT_EQ(u.begin_ns, 5u);
  EXPECT_EQ(u.end_ns, 10u);
  EXPECT_EQ(u.covered_ns, 2u);
  ASSERT_EQ(u.gaps.size(), 1u);
  EXPECT_EQ(u.gaps[0].length(), 3u);
}

TEST(IntervalUnion, UnionOfTakesIntervalsInAnyOrder) {
  // Out of order: [60, 70) comes first but starts last; [10, 15) lies inside [0, 20).
  const IntervalUnion u = UnionOf({{60, 70}, {0, 20}, {10, 15}, {50, 55}});
  EXPECT_EQ(u.begin_ns, 0u);
  EXPECT_EQ(u.end_ns, 70u);
  EXPECT_EQ(u.covered_ns, 20u + 5u + 10u);
  ASSERT_EQ(u.gaps.size(), 2u);
  EXPECT_EQ(u.gaps[0].begin_ns, 20u);
  EXPECT_EQ(u.gaps[0].end_ns, 50u);
  EXPECT_EQ(u.gaps[0].after, 2u);  // an index into the sorted intervals
  EXPECT_EQ(u.gaps[1].begin_ns, 55u);
  EXPECT_EQ(u.gaps[1].end_ns, 60u);
  EXPECT_TRUE(UnionOf({}).gaps.empty());
}

TEST(IntervalUnion, MergedIntervalsAreTheStretchesBetweenTheGaps) {
  // Out of order; [40, 50) touches [30, 40); [12, 14) lies inside [10, 20).
  const std::vector<TimeInterval> merged =
      MergedIntervals({{30, 40}, {12, 14}, {60, 61}, {10, 20}, {40, 50}});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].begin_ns, 10u);
  EXPECT_EQ(merged[0].end_ns, 20u);
  EXPECT_EQ(merged[1].begin_ns, 30u);
  EXPECT_EQ(merged[1].end_ns, 50u);
  EXPECT_EQ(merged[2].begin_ns, 60u);
  EXPECT_EQ(merged[2].end_ns, 61u);
  EXPECT_TRUE(MergedIntervals({}).empty());
}

}  // namespace
}  // namespace warpscope
