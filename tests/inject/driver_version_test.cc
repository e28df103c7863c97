// The kernel module's version read from /proc/driver/nvidia/version, for the trace header.
#include "libinject/driver_version.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace warpscope {
namespace {

TEST(DriverVersionTest, ProprietaryAndOpenKernelModules) {
  EXPECT_EQ(DisplayDriverVersionFrom(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct  2 "
                "18:30:11 UTC 2026\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
            "580.159.04");
  EXPECT_EQ(DisplayDriverVersionFrom("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                     "570.86.15  Release Build  (dvs-builder@U16-I3-B13-3)\n"),
            "570.86.15");
  EXPECT_EQ(DisplayDriverVersionFrom("NVRM version: NVIDIA UNIX aarch64 Kernel Module\t"
                                     "550.54.14\tTue Feb 13 2024\n"),
            "550.54.14");
}

TEST(DriverVersionTest, TextWithoutAVersionGivesEmpty) {
  EXPECT_EQ(DisplayDriverVersionFrom(""), "");
  EXPECT_EQ(DisplayDriverVersionFrom("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n"), "");
  // The version must be on the NVRM line, not on the compiler's.
  EXPECT_EQ(DisplayDriverVersionFrom("GCC version:  gcc version 12.2.0\n"), "");
  EXPECT_EQ(DisplayDriverVersionFrom("garbage 1.2.3 Module 4.5"), "");
}

// Where this machine has the NVIDIA driver loaded, its file parses to what nvidia-smi shows:
// digits and dots.
TEST(DriverVersionTest, ThisMachinesFileWhenPresent) {
  std::ifstream in("/proc/driver/nvidia/version");
  if (!in) GTEST_SKIP() << "no NVIDIA kernel module on this machine";
  std::stringstream text;
  text << in.rdbuf();
  const std::string version = DisplayDriverVersionFrom(text.str());
  ASSERT_FALSE(version.empty()) << text.str();
  EXPECT_EQ(version.find_first_not_of("0123456789."), std::string::npos) << version;
}

}  // namespace
}  // namespace warpscope
