// PM sample attribution and achieved occupancy on synthetic samples: partial overlaps,
// concurrent kernels, gaps, samples longer than kernels, kernels without samples.
#include "analyzers/lib/pm_attribution.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

KernelEvent Kernel(uint64_t start, uint64_t end, uint32_t device = 0) {
  KernelEvent k;
  k.name = "k";
  k.start_ns = start;
  k.duration_ns = end - start;
  k.device_id = device;
  return k;
}

// Metric set 1 on device 0 (set 2 on device 1): warps/SM, active cycles, GPU-wide warps.
struct Fixture {
  std::vector<KernelEvent> kernels;
  std::vector<PmSample> samples;
  std::vector<PmMetricSet> sets;
  std::vector<DeviceInfo> devices;

  Fixture() {
    for (uint32_t d = 0; d < 2; ++d) {
      PmMetricSet s;
      s.id = d + 1;
      s.device_id = d;
      s.metric_names = {"sm__warps_active.avg.per_cycle_active", "sm__cycles_active.avg",
                        "sm__warps_active.sum.per_cycle_elapsed"};
      s.interval_ns = 1000;
      sets.push_back(s);
      DeviceInfo info;
      info.id = d;
      info.sm_count = 132;
      info.max_warps_per_sm = 64;
      devices.push_back(info);
    }
  }
  void Sample(uint64_t start, uint64_t end, double warps, double cycles = 1000,
              uint32_t device = 0) {
    PmSample s;
    s.metric_set_id = device + 1;
    s.start_ns = start;
    s.duration_ns = end - start;
    s.values = {warps, cycles, warps * 132};
    samples.push_back(s);
  }
  // Samples [from, to) every 1000 ns with the same value.
  void Samples(uint64_t from, uint64_t to, double warps) {
    for (uint64_t t = from; t < to; t += 1000) Sample(t, t + 1000, warps);
  }
  PmInputs inputs() const { return PmInputs{kernels, samples, sets, devices}; }

  AchievedOccupancy Achieved(size_t k) {
    extracted = ExtractActiveWarpSamples(inputs());
    attribution = AttributeSamples(kernels, extracted);
    return ComputeAchievedOccupancy(kernels[k], attribution.kernel_samples[k], extracted,
                                    attribution, 64);
  }
  ActiveWarpSamples extracted;
  PmAttribution attribution;
};

TEST(PmAttributionTest, KernelWithinSamplesPartialEdges) {
  Fixture f;
  f.kernels = {Kernel(1500, 10500)};
  f.Samples(0, 12000, 32);
  AchievedOccupancy a = f.Achieved(0);
  EXPECT_EQ(a.samples, 10u);  // [1000,2000) ... [10000,11000)
  EXPECT_EQ(a.shared_samples, 0u);
  EXPECT_DOUBLE_EQ(a.mean_warps_per_sm, 32);
  EXPECT_DOUBLE_EQ(a.achieved, 0.5);
  EXPECT_DOUBLE_EQ(a.coverage, 1.0);
  EXPECT_TRUE(a.reason.empty());
  EXPECT_EQ(f.attribution.kernel_samples[0].front().overlap_ns, 500u);
  EXPECT_EQ(f.attribution.kernel_samples[0].back().overlap_ns, 500u);
}

TEST(PmAttributionTest, WeightsByActiveCycles) {
  Fixture f;
  f.kernels = {Kernel(0, 2000)};
  f.Sample(0, 1000, 60, 1000);
  f.Sample(1000, 2000, 10, 100);  // SMs mostly idle: little weight
  AchievedOccupancy a = f.Achieved(0);
  EXPECT_NEAR(a.mean_warps_per_sm, (60.0 * 1000 + 10.0 * 100) / 1100, 1e-9);
}

TEST(PmAttributionTest, BackToBackKernelsSplitASampleByOverlap) {
  Fixture f;
  f.kernels = {Kernel(0, 500), Kernel(500, 1000)};
  f.Sample(0, 1000, 40);
  AchievedOccupancy a = f.Achieved(0);
  EXPECT_EQ(a.samples, 1u);
  EXPECT_EQ(a.shared_samples, 1u);
  EXPECT_DOUBLE_EQ(a.shared_time_fraction, 1.0);
  EXPECT_DOUBLE_EQ(a.mean_warps_per_sm, 40);
  EXPECT_DOUBLE_EQ(a.weight, 500);  // half of the sample's active cycles
  EXPECT_EQ(f.attribution.sample_kernel_count[0], 2u);
  EXPECT_EQ(f.attribution.sample_busy_ns[0], 1000u);
}

TEST(PmAttributionTest, ConcurrentKernelsAreFlagged) {
  Fixture f;
  f.kernels = {Kernel(0, 10000), Kernel(2000, 4000)};
  for (uint64_t t = 0; t < 10000; t += 1000) f.Sample(t, t + 1000, t >= 2000 && t < 4000 ? 50 : 20);
  AchievedOccupancy a = f.Achieved(0);
  EXPECT_EQ(a.samples, 10u);
  EXPECT_EQ(a.shared_samples, 2u);
  EXPECT_DOUBLE_EQ(a.shared_time_fraction, 0.2);
  EXPECT_DOUBLE_EQ(a.mean_warps_per_sm, (8 * 20.0 + 2 * 50.0) / 10);
  AchievedOccupancy b = f.Achieved(1);
  EXPECT_EQ(b.samples, 2u);
  EXPECT_EQ(b.shared_samples, 2u);
  EXPECT_DOUBLE_EQ(b.shared_time_fraction, 1.0);
}

TEST(PmAttributionTest, GapsLowerCoverage) {
  Fixture f;
  f.kernels = {Kernel(0, 10000)};
  f.Samples(0, 4000, 30);
  f.Samples(6000, 10000, 30);  // two samples lost
  AchievedOccupancy a = f.Achieved(0);
  EXPECT_EQ(a.samples, 8u);
  EXPECT_DOUBLE_EQ(a.coverage, 0.8);
  EXPECT_DOUBLE_EQ(a.achieved, 30.0 / 64);
}

TEST(PmAttributionTest, SampleLongerThanKernel) {
  Fixture f;
  f.kernels = {Kernel(4000, 5000)};
  f.Sample(0, 10000, 48, 1000);
  AchievedOccupancy a = f.Achieved(0);
  EXPECT_EQ(a.samples, 1u);
  EXPECT_EQ(a.shared_samples, 0u);
  EXPECT_DOUBLE_EQ(a.achieved, 0.75);
  EXPECT_DOUBLE_EQ(a.coverage, 1.0);
}

TEST(PmAttributionTest, NoSamplesSaysWhy) {
  Fixture f;
  f.kernels = {Kernel(20500, 20900), Kernel(50000, 90000), Kernel(0, 5000, /*device=*/1)};
  f.Samples(0, 20000, 30);
  f.Samples(21000, 30000, 30);  // the 400 ns kernel falls into a gap
  AchievedOccupancy shorter = f.Achieved(0);
  EXPECT_TRUE(std::isnan(shorter.achieved));
  EXPECT_THAT(shorter.reason,
              HasSubstr("no PM samples: kernel shorter than the sampling interval"));
  AchievedOccupancy outside = f.Achieved(1);
  EXPECT_THAT(outside.reason, HasSubstr("no PM samples overlap this kernel"));
  AchievedOccupancy other_device = f.Achieved(2);
  EXPECT_THAT(other_device.reason, HasSubstr("no PM samples on device 1"));
}

TEST(PmAttributionTest, SamplesStayOnTheirDevice) {
  Fixture f;
  f.kernels = {Kernel(0, 2000, 0), Kernel(0, 2000, 1)};
  f.Sample(0, 1000, 10, 1000, 0);
  f.Sample(1000, 2000, 10, 1000, 0);
  f.Sample(0, 2000, 50, 1000, 1);
  EXPECT_DOUBLE_EQ(f.Achieved(0).mean_warps_per_sm, 10);
  EXPECT_EQ(f.Achieved(1).samples, 1u);
  EXPECT_DOUBLE_EQ(f.Achieved(1).mean_warps_per_sm, 50);
}

TEST(PmAttributionTest, DerivesGpuWarpsWithoutTheSumMetric) {
  Fixture f;
  f.sets[0].metric_names = {"sm__warps_active.avg.per_cycle_active", "sm__cycles_active.avg",
                            "gr__cycles_elapsed.max"};
  PmSample s;
  s.metric_set_id = 1;
  s.start_ns = 0;
  s.duration_ns = 1000;
  s.values = {40, 500, 1000};  // SMs active half of the elapsed cycles
  f.samples = {s};
  ActiveWarpSamples x = ExtractActiveWarpSamples(f.inputs());
  ASSERT_EQ(x.samples.size(), 1u);
  EXPECT_DOUBLE_EQ(x.samples[0].gpu_warps, 40.0 * 132 * 0.5);
  EXPECT_TRUE(x.has_gpu_warps);
}

TEST(PmAttributionTest, MalformedSamplesAreSkippedAndCounted) {
  Fixture f;
  f.Sample(0, 1000, 10);
  f.samples.back().values.pop_back();
  f.Sample(1000, 2000, 10);
  f.samples.back().metric_set_id = 99;
  ActiveWarpSamples x = ExtractActiveWarpSamples(f.inputs());
  EXPECT_EQ(x.samples.size(), 0u);
  EXPECT_EQ(x.skipped, 2u);
}

}  // namespace
}  // namespace warpscope

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PmDataLossNoteTest, NamesWhatWasLostAndNothingWhenNothingWas) {
  std::vector<StatCounter> stats;
  stats.push_back({"pm_sampling.samples", 29504, v1::SEVERITY_INFO, ""});
  stats.push_back({"pm_sampling.samples_discarded_too_long", 1, v1::SEVERITY_INFO, ""});
  EXPECT_EQ(PmDataLossNote(stats), "");
  stats.push_back({"pm_sampling.gap_ns", 646199867, v1::SEVERITY_DATA_LOSS, ""});
  stats.push_back({"pm_sampling.overflows", 2, v1::SEVERITY_DATA_LOSS, ""});
  stats.push_back({"pm_sampling.decode_errors", 0, v1::SEVERITY_ERROR, ""});
  const std::string note = PmDataLossNote(stats);
  EXPECT_THAT(note, HasSubstr("PM samples are incomplete"));
  EXPECT_THAT(note, HasSubstr("646.2 ms without samples"));
  EXPECT_THAT(note, HasSubstr("2 hardware buffer overflow(s)"));
  EXPECT_THAT(note, Not(HasSubstr("decode error")));  // zero counters say nothing
}

}  // namespace
}  // namespace warpscope
