// Where a kernel's launch goes when it was not recorded (analyzers/measures/launch_times.h).
#include "analyzers/measures/launch_times.h"

#include "gtest/gtest.h"

namespace warpscope {
namespace {

TEST(UnrecordedLaunchTimes, AtTheLaunchOfTheLatestKnownKernelBeforeItOnItsStream) {
  UnrecordedLaunchTimes times;
  // Added out of order, as a trace's records come: device 0, stream 7.
  times.AddKnown(0, 7, 6000, 5500);
  times.AddKnown(0, 7, 2000, 1500);
  EXPECT_EQ(times.Place(0, 7, 3500).ns, 1500u);  // after the kernel of 2000
  EXPECT_FALSE(times.Place(0, 7, 3500).at_start);
  EXPECT_EQ(times.Place(0, 7, 9000).ns, 5500u);  // after the kernel of 6000
  EXPECT_EQ(times.Place(0, 7, 6000).ns, 5500u);  // one that starts with it: its launch too
  // Before any known launch on its stream, and on streams without one: its own start.
  EXPECT_EQ(times.Place(0, 7, 1000).ns, 1000u);
  EXPECT_TRUE(times.Place(0, 7, 1000).at_start);
  EXPECT_EQ(times.Place(0, 9, 4000).ns, 4000u);
  EXPECT_EQ(times.Place(1, 7, 4000).ns, 4000u);  // the same stream id on another device
  // Known launches added after a Place are seen by the next.
  times.AddKnown(0, 9, 3000, 2800);
  EXPECT_EQ(times.Place(0, 9, 4000).ns, 2800u);
}

}  // namespace
}  // namespace warpscope
