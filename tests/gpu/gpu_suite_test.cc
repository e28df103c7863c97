// Runs the GPU checks of tests/gpu/gpu_suite.sh (tests only, no benchmark) and fails when any
// fails; skips on a machine without an NVIDIA GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace {

TEST(GpuSuite, AllChecksPass) {
  if (access("/dev/nvidiactl", F_OK) != 0 && access("/dev/nvidia0", F_OK) != 0) {
    GTEST_SKIP() << "no NVIDIA GPU on this machine";
  }
  const char* src = std::getenv("WARPSCOPE_SOURCE_DIR");
  const char* build = std::getenv("WARPSCOPE_BUILD_DIR");
  ASSERT_NE(src, nullptr);
  ASSERT_NE(build, nullptr);
  std::string cmd = std::string("WS_BUILD=") + build + " bash " + src +
                    "/tests/gpu/gpu_suite.sh --tests-only";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace
