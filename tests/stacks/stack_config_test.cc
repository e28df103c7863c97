// The WARPSCOPE_STACK* settings and which CUDA functions are syncs, copies and launches.
#include "collectors/stacks/stack_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace warpscope {
namespace {

TEST(StackCallKindTest, NamesAsCuptiGivesThem) {
  EXPECT_EQ(StackCallKindOf("cudaStreamSynchronize_v3020"), StackCallKind::kSync);
  EXPECT_EQ(StackCallKindOf("cudaDeviceSynchronize_v3020"), StackCallKind::kSync);
  EXPECT_EQ(StackCallKindOf("cudaEventSynchronize_v3020"), StackCallKind::kSync);
  EXPECT_EQ(StackCallKindOf("cuCtxSynchronize"), StackCallKind::kSync);
  EXPECT_EQ(StackCallKindOf("cuStreamSynchronize_ptsz"), StackCallKind::kSync);
  EXPECT_EQ(StackCallKindOf("cudaMemcpyAsync_v3020"), StackCallKind::kCopy);
  EXPECT_EQ(StackCallKindOf("cuMemcpyDtoH_v2"), StackCallKind::kCopy);
  EXPECT_EQ(StackCallKindOf("cudaMemsetAsync_v3020"), StackCallKind::kCopy);
  EXPECT_EQ(StackCallKindOf("cudaLaunchKernel_v7000"), StackCallKind::kLaunch);
  EXPECT_EQ(StackCallKindOf("cuLaunchKernelEx"), StackCallKind::kLaunch);
  EXPECT_EQ(StackCallKindOf("cudaGraphLaunch_v10000"), StackCallKind::kLaunch);
  // Every launch path: CUDA 13's <<<>>>, the extended and cooperative calls, the old ones.
  for (const char* launch :
       {"__cudaLaunchKernel_v13000", "__cudaLaunchKernel_ptsz_v13000", "cudaLaunchKernelExC_v11060",
        "cudaLaunchCooperativeKernel_ptsz_v9000", "cudaLaunch_v3020", "cudaLaunch_ptsz_v7000",
        "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx_ptsz",
        "cuLaunchCooperativeKernelMultiDevice", "cuGraphLaunch_ptsz", "cuLaunch", "cuLaunchGrid",
        "cuLaunchGridAsync"}) {
    EXPECT_EQ(StackCallKindOf(launch), StackCallKind::kLaunch) << launch;
  }
  // A host function runs no kernel.
  EXPECT_EQ(StackCallKindOf("cudaLaunchHostFunc_v10000"), StackCallKind::kOther);
  EXPECT_EQ(StackCallKindOf("cuLaunchHostFunc"), StackCallKind::kOther);
  // Not blocking, not work: no stack.
  EXPECT_EQ(StackCallKindOf("cudaStreamWaitEvent_v3020"), StackCallKind::kOther);
  EXPECT_EQ(StackCallKindOf("cudaEventRecord_v3020"), StackCallKind::kOther);
  EXPECT_EQ(StackCallKindOf("cudaStreamQuery_v3020"), StackCallKind::kOther);
  EXPECT_EQ(StackCallKindOf("cudaMemGetInfo_v3020"), StackCallKind::kOther);
  EXPECT_EQ(StackCallKindOf("cuMemAddressReserve"), StackCallKind::kOther);
  EXPECT_EQ(StackCallKindOf("cuMemMapArrayAsync"), StackCallKind::kOther);
}

TEST(StackCallKindTest, AllocationsAndFrees) {
  for (const char* alloc : {"cudaMalloc_v3020",
                            "cudaMallocAsync_v11020",
                            "cudaMallocFromPoolAsync_ptsz_v11020",
                            "cudaMallocManaged_v6000",
                            "cudaMallocHost_v3020",
                            "cudaMallocPitch_v3020",
                            "cudaHostAlloc_v3020",
                            "cudaFree_v3020",
                            "cudaFreeAsync_v11020",
                            "cudaFreeHost_v3020",
                            "cudaMemPoolCreate_v11020",
                            "cudaMemPoolTrimTo_v11020",
                            "cuMemAlloc_v2",
                            "cuMemAllocManaged",
                            "cuMemAllocAsync_ptsz",
                            "cuMemAllocFromPoolAsync",
                            "cuMemFree_v2",
                            "cuMemFreeAsync",
                            "cuMemHostAlloc",
                            "cuMemFreeHost",
                            "cuMemCreate",
                            "cuMemRelease",
                            "cuMemMap",
                            "cuMemUnmap",
                            "cuMemPoolDestroy"}) {
    EXPECT_EQ(StackCallKindOf(alloc), StackCallKind::kAlloc) << alloc;
  }
}

StackConfig Load(std::map<std::string, std::string> env, bool* ok, SettingError* error) {
  StackConfig config;
  *ok = LoadStackConfig(
      [&](std::string_view v) {
        auto it = env.find(std::string(v));
        return it == env.end() ? std::string() : it->second;
      },
      &config, error);
  return config;
}

TEST(StackConfigTest, DefaultsTakeEveryKindAt32Frames) {
  bool ok = false;
  SettingError error;
  const StackConfig c = Load({}, &ok, &error);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(c.syncs && c.copies && c.launches && c.allocs);
  EXPECT_EQ(c.depth, 32);
  EXPECT_EQ(c.launch_every, 0u);  // by the kind of stack: every launch with Python
  // The table's defaults are the struct's.
  StackConfig parsed;
  ASSERT_TRUE(ParseStackCalls(Setting(SettingId::kStacks).default_value, &parsed));
  EXPECT_EQ(parsed.launches, c.launches);
  EXPECT_EQ(parsed.allocs, c.allocs);
  EXPECT_EQ(Setting(SettingId::kStackDepth).default_value, "32");
  EXPECT_EQ(Setting(SettingId::kStackLaunchEvery).default_value, "0");
}

TEST(StackConfigTest, ListsNoneAndRefusals) {
  bool ok = false;
  SettingError error;
  StackConfig c = Load({{"WARPSCOPE_STACKS", "syncs"}, {"WARPSCOPE_STACK_DEPTH", "8"},
                        {"WARPSCOPE_STACK_LAUNCH_EVERY", "16"}},
                       &ok, &error);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(c.syncs);
  EXPECT_FALSE(c.copies || c.launches || c.allocs);
  EXPECT_TRUE(c.Wants(StackCallKind::kSync));
  EXPECT_FALSE(c.Wants(StackCallKind::kLaunch));
  EXPECT_EQ(c.depth, 8);
  EXPECT_EQ(c.launch_every, 16u);

  c = Load({{"WARPSCOPE_STACKS", "none"}}, &ok, &error);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(c.any());

  for (const char* bad : {"sync", "syncs,", "", "syncs,,copies", "all"}) {
    StackConfig scratch;
    EXPECT_FALSE(ParseStackCalls(bad, &scratch)) << bad;
  }
  c = Load({{"WARPSCOPE_STACKS", "syncs,kernels"}}, &ok, &error);
  EXPECT_FALSE(ok);
  EXPECT_THAT(error.ForVariable(), ::testing::StartsWith("WARPSCOPE_STACKS='syncs,kernels' is not"));
  c = Load({{"WARPSCOPE_STACK_DEPTH", "500"}}, &ok, &error);
  EXPECT_FALSE(ok);
  EXPECT_THAT(error.ForVariable(), ::testing::HasSubstr("1 to 128"));
}

}  // namespace
}  // namespace warpscope
