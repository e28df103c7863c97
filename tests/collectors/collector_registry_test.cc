// The core's one list of collectors: every collector in the order the session starts them and
// passes each hook to them, with its stage and its switch.
#include "libinject/collector_registry.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;

TEST(CollectorRegistry, SubscriptionThenLaunchLogThenActivityThenNvtxThenNcclThenSampling) {
  std::vector<std::string> names;
  for (const CollectorRegistration& r : Collectors()) names.emplace_back(r.name);
  EXPECT_THAT(names, ElementsAre("callbacks", "api_calls", "activity", "nvtx", "nccl",
                                 "pm_sampling", "pc_sampling"));
}

TEST(CollectorRegistry, StagesAndSwitches) {
  const auto regs = Collectors();
  ASSERT_EQ(regs.size(), 7u);
  EXPECT_EQ(regs[0].stage, CollectorStage::kBeforeTrace);
  EXPECT_EQ(regs[1].stage, CollectorStage::kRequired);
  EXPECT_EQ(regs[2].stage, CollectorStage::kRequired);
  // The launch log and NCCL's calls: required, so that they do not count as optional collectors
  // (those switch module callbacks on), and they never refuse.
  EXPECT_EQ(regs[3].stage, CollectorStage::kRequired);
  EXPECT_EQ(regs[4].stage, CollectorStage::kRequired);
  EXPECT_EQ(regs[5].stage, CollectorStage::kOptional);
  EXPECT_EQ(regs[6].stage, CollectorStage::kOptional);
  for (size_t i = 0; i < 5; ++i) EXPECT_STREQ(regs[i].enable_env, "") << regs[i].name;
  EXPECT_STREQ(regs[5].enable_env, "WARPSCOPE_PM_SAMPLING");
  EXPECT_STREQ(regs[6].enable_env, "WARPSCOPE_PC_SAMPLING");
  for (const CollectorRegistration& r : regs) {
    EXPECT_NE(r.factory, nullptr) << r.name;
    // Only PC sampling needs kernel records before it starts.
    EXPECT_EQ(r.kernel_records_throughout, std::string(r.name) == "pc_sampling") << r.name;
  }
}

}  // namespace
}  // namespace warpscope
