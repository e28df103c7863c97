// Where a kernel's launch goes when it was not recorded (analyzers/measures/launch_times.h).
#include "analyzers/measures/launch_times.h"

#include "gtest/gtest.h"

namespace warpscope {
namespace {

TEST(StreamLaunchPlacer, AtTheLaunchOfTheLatestKnownKernelBeforeItOnItsStream) {
  // One stream's work in order of start: a kernel launched at 1500 started at 2000, one
  // launched at 5500 at 6000.
  StreamLaunchPlacer stream;
  // Before any known launch on its stream: its own start.
  EXPECT_EQ(stream.Place(1000).ns, 1000u);
  EXPECT_TRUE(stream.Place(1000).at_start);
  stream.Known(1500);
  EXPECT_EQ(stream.Place(3500).ns, 1500u);  // after the kernel of 2000
  EXPECT_FALSE(stream.Place(3500).at_start);
  stream.Known(5500);
  EXPECT_EQ(stream.Place(6000).ns, 5500u);  // one that starts with it: its launch too
  EXPECT_EQ(stream.Place(9000).ns, 5500u);  // after the kernel of 6000
  // Another stream (the same stream id on another device, say) starts afresh.
  EXPECT_EQ(StreamLaunchPlacer().Place(4000).ns, 4000u);
  EXPECT_TRUE(StreamLaunchPlacer().Place(4000).at_start);
}

}  // namespace
}  // namespace warpscope
