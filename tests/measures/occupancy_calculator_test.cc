// Cross-checks the cuda_occupancy.h wrapper against hand-computed H100/H200 (sm_90) cases and
// an independent re-implementation of the sm_90 rules, and checks the advice text.
#include "analyzers/measures/occupancy_calculator.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixtures/synthetic_trace.h"

namespace warpscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// What CUPTI's Device record reports for an H200: the fixture's device without the opt-in and
// reserved shared memory (CUPTI lacks them, so the architecture defaults must fill them in).
DeviceInfo H200() {
  DeviceInfo d = fixtures::H200Device(0);
  d.max_shared_memory_per_block_optin = 0;
  d.reserved_shared_memory_per_block = 0;
  d.register_allocation_unit = 0;
  d.shared_memory_allocation_unit = 0;
  return d;
}

LaunchConfig Launch(uint32_t threads, uint32_t regs, uint32_t dynamic_smem = 0,
                    uint32_t static_smem = 0, uint32_t grid = 100000) {
  LaunchConfig l;
  l.id = 1;
  l.grid_x = grid;
  l.grid_y = l.grid_z = 1;
  l.block_x = threads;
  l.block_y = l.block_z = 1;
  l.registers_per_thread = regs;
  l.dynamic_shared_memory = dynamic_smem;
  l.static_shared_memory = static_smem;
  return l;
}

// Independent model of the sm_90 rules (CUDA occupancy calculator spreadsheet): registers are
// allocated per warp in units of 256 within 4 sub-partitions of 16 Ki registers; shared memory
// per block is rounded up to 128 bytes after adding the 1 KiB system reservation; 64 warps
// and 32 blocks per SM.
int HandBlocks(int threads, int regs, int smem) {
  const int warps = (threads + 31) / 32;
  int by_regs = 1 << 30;
  if (regs > 0) {
    const int per_warp = (regs * 32 + 255) / 256 * 256;
    by_regs = (16384 / per_warp) * 4 / warps;
  }
  const int alloc = (smem + 1024 + 127) / 128 * 128;
  const int by_smem = 233472 / alloc;
  return std::min({by_regs, by_smem, 64 / warps, 32});
}

TEST(OccupancyTest, HandComputedH200Cases) {
  struct Case {
    uint32_t threads, regs, smem;
    int blocks;
    double occupancy;
    uint32_t limiter;
  } cases[] = {
      {256, 128, 0, 2, 0.25, kLimitRegisters},
      {1024, 32, 0, 2, 1.0, kLimitRegisters | kLimitWarps},
      {128, 32, 100 * 1024, 2, 0.125, kLimitSharedMemory},
      {32, 16, 0, 32, 0.5, kLimitBlocks},
      {768, 32, 0, 2, 0.75, kLimitWarps | kLimitRegisters},  // a tie
      {256, 80, 0, 3, 0.375, kLimitRegisters},
      {256, 88, 0, 2, 0.25, kLimitRegisters},
      {128, 32, 48 * 1024, 4, 0.25, kLimitSharedMemory},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message()
                 << c.threads << " threads, " << c.regs << " regs, " << c.smem << " B smem");
    auto t = ComputeTheoreticalOccupancy(H200(), Launch(c.threads, c.regs, c.smem));
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->blocks_per_sm, c.blocks);
    EXPECT_DOUBLE_EQ(t->occupancy, c.occupancy);
    EXPECT_EQ(t->limiters & ~kLimitBarriers, c.limiter) << LimiterNames(t->limiters);
    EXPECT_EQ(t->active_warps_per_sm, c.blocks * static_cast<int>((c.threads + 31) / 32));
    EXPECT_EQ(t->max_warps_per_sm, 64);
  }
}

TEST(OccupancyTest, AgreesWithIndependentModelOverAGrid) {
  for (int threads : {32, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 1024}) {
    for (int regs : {16, 24, 32, 40, 48, 56, 64, 72, 96, 128, 168, 200, 255}) {
      for (int smem : {0, 1000, 4096, 16384, 40000, 65536, 100000, 150000, 200000}) {
        if (regs * 32 * ((threads + 31) / 32) > 65536) continue;  // cannot launch
        if (smem + 1024 > 232448 + 1024) continue;
        auto t = ComputeTheoreticalOccupancy(H200(), Launch(threads, regs, smem));
        ASSERT_TRUE(t.ok()) << t.status();
        EXPECT_EQ(t->blocks_per_sm, HandBlocks(threads, regs, smem))
            << threads << " threads, " << regs << " regs, " << smem << " B";
      }
    }
  }
}

TEST(OccupancyTest, StaticAndDynamicSharedMemoryAddUp) {
  auto a = ComputeTheoreticalOccupancy(H200(), Launch(128, 32, 60 * 1024, 40 * 1024));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->blocks_per_sm, 2);  // 100 KiB + 1 KiB reserved per block
  EXPECT_EQ(a->shared_memory_per_block, 100u * 1024);
  EXPECT_EQ(a->allocated_shared_memory_per_block, 101u * 1024);
}

TEST(OccupancyTest, CarveoutRequestLimitsSharedMemory) {
  LaunchConfig l = Launch(128, 32, 40 * 1024);
  auto full = ComputeTheoreticalOccupancy(H200(), l);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->blocks_per_sm, 5);        // 228 KiB / 41 KiB
  l.shared_memory_carveout_requested = 50;  // 114 KiB -> rounded up to the 132 KiB config
  auto half = ComputeTheoreticalOccupancy(H200(), l);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->blocks_per_sm, 3);
  auto advice = AdviseOccupancy(H200(), l, *half);
  ASSERT_FALSE(advice.empty());
  EXPECT_THAT(advice[0].text, HasSubstr("carve-out is 50%"));
}

TEST(OccupancyTest, ClusterLaunchUsesPerSmLimits) {
  // cuda_occupancy.h has no cluster model: the per-SM figure is the same as without one.
  LaunchConfig l = Launch(256, 64);
  l.cluster_x = 2;
  l.cluster_y = l.cluster_z = 1;
  auto t = ComputeTheoreticalOccupancy(H200(), l);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->blocks_per_sm, 4);
}

TEST(OccupancyTest, WavesCountTheGrid) {
  auto t = ComputeTheoreticalOccupancy(H200(), Launch(256, 128, 0, 0, 132));
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t->waves, 0.5);  // 132 blocks, 2 per SM x 132 SMs
}

// The cap on what PM samples may attribute to one launch.
TEST(OccupancyTest, ResidentWarpLimit) {
  const DeviceInfo h200 = H200();
  // 64 registers/thread: 4 blocks of 256 threads per SM, 32 warps; 4,224 on 132 SMs.
  const LaunchConfig regs64 = Launch(256, 64);
  ResidentWarpLimit limit = ResidentWarpLimitOf(&h200, &regs64);
  EXPECT_TRUE(limit.theoretical);
  EXPECT_DOUBLE_EQ(limit.per_sm, 32);
  EXPECT_DOUBLE_EQ(limit.gpu, 4224);
  // A grid of 10 blocks cannot keep more than its 80 warps resident, whatever fits per SM.
  const LaunchConfig small = Launch(256, 64, 0, 0, 10);
  limit = ResidentWarpLimitOf(&h200, &small);
  EXPECT_DOUBLE_EQ(limit.per_sm, 32);
  EXPECT_DOUBLE_EQ(limit.gpu, 80);
  // Unknown launch configuration: the device's capacity, not called theoretical.
  limit = ResidentWarpLimitOf(&h200, nullptr);
  EXPECT_FALSE(limit.theoretical);
  EXPECT_DOUBLE_EQ(limit.per_sm, 64);
  EXPECT_DOUBLE_EQ(limit.gpu, 8448);
  // No device, or one out of range: no cap at all.
  EXPECT_DOUBLE_EQ(ResidentWarpLimitOf(nullptr, &regs64).gpu, 0);
  DeviceInfo corrupt = h200;
  corrupt.max_warps_per_sm = 2147483647;
  EXPECT_DOUBLE_EQ(ResidentWarpLimitOf(&corrupt, &regs64).per_sm, 0);
}

TEST(OccupancyTest, FallsBackToArchitectureDefaults) {
  DeviceInfo d;
  d.compute_capability_major = 9;
  d.sm_count = 132;
  auto t = ComputeTheoreticalOccupancy(d, Launch(128, 32, 100 * 1024));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->blocks_per_sm, 2);
}

TEST(OccupancyTest, RefusesMissingInputs) {
  DeviceInfo d;  // no compute capability
  EXPECT_FALSE(ComputeTheoreticalOccupancy(d, Launch(128, 32)).ok());
  EXPECT_FALSE(ComputeTheoreticalOccupancy(H200(), Launch(0, 32)).ok());
  d.compute_capability_major = 4;
  EXPECT_FALSE(ComputeTheoreticalOccupancy(d, Launch(128, 32)).ok());
}

// The advice for `l` on the H200; empty, with a failure, when its occupancy has no answer.
std::vector<OccupancyAdvice> AdviceOnH200(const LaunchConfig& l) {
  auto t = ComputeTheoreticalOccupancy(H200(), l);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return {};
  return AdviseOccupancy(H200(), l, *t);
}

// The same, its texts only.
std::vector<std::string> AdviceTextsOnH200(const LaunchConfig& l) {
  std::vector<std::string> texts;
  for (const OccupancyAdvice& a : AdviceOnH200(l)) texts.push_back(a.text);
  return texts;
}

TEST(OccupancyAdviceTest, RegisterLimitedSaysHowManyRegistersFit) {
  const std::vector<OccupancyAdvice> advice = AdviceOnH200(Launch(256, 128));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].limiter, kLimitRegisters);
  EXPECT_EQ(advice[0].text,
            "128 registers/thread limits the SM to 2 blocks of 256 threads (16 warps, 25%); at "
            "<= 80 registers 3 blocks fit (24 warps, 37.5%), at <= 32 registers 8 blocks fit "
            "(64 warps, 100%) (cap registers with __launch_bounds__ or -maxrregcount; check for "
            "spills)");
}

TEST(OccupancyAdviceTest, SharedMemoryLimited) {
  EXPECT_THAT(AdviceTextsOnH200(Launch(128, 32, 100 * 1024)),
              ElementsAre("100 KiB of shared memory per block (101 KiB allocated incl. 1 KiB "
                          "reserved) limits the SM to 2 blocks of 128 threads (8 warps, 12.5%); "
                          "at <= 75 KiB per block 3 blocks fit (12 warps, 18.8%)"));
}

TEST(OccupancyAdviceTest, BlockLimitSuggestsLargerBlocks) {
  EXPECT_THAT(AdviceTextsOnH200(Launch(32, 16)),
              ElementsAre("the SM holds at most 32 blocks; with 32-thread blocks that is 32 "
                          "warps (50%); blocks of 64 threads would give 64 warps (100%) with the "
                          "same registers and shared memory per block"));
}

TEST(OccupancyAdviceTest, OddBlockSize) {
  EXPECT_THAT(AdviceTextsOnH200(Launch(768, 32)),
              ElementsAre("32 registers/thread ties with another limit at 2 blocks of 768 "
                          "threads (48 warps, 75%); lowering registers alone does not raise "
                          "occupancy",
                          HasSubstr("blocks of 768 threads: 2 fit in the SM's 64 warp slots "
                                    "(48 warps, 75%); blocks of 512 threads would give 64 "
                                    "warps (100%)")));
}

TEST(OccupancyAdviceTest, FullOccupancyNeedsNoAdviceButSmallGridIsNoted) {
  EXPECT_THAT(AdviceTextsOnH200(Launch(1024, 32)), IsEmpty());
  EXPECT_THAT(AdviceTextsOnH200(Launch(1024, 32, 0, 0, 66)),
              ElementsAre("the grid (66 blocks) fills 25% of one wave (2 blocks/SM x 132 SMs): "
                          "achieved occupancy stays below the theoretical one"));
}

}  // namespace
}  // namespace warpscope
