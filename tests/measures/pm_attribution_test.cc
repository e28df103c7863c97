// PM sample attribution and achieved occupancy on synthetic samples: partial overlaps,
// concurrent kernels, gaps, samples longer than kernels, kernels without samples.
#include "analyzers/measures/pm_attribution.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "analyzers/analyses/occupancy.h"
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

// Metric set 1 on device 0 (set 2 on device 1): warps/SM, active cycles, GPU-wide warps (which
// give the SM elapsed cycles, 1 per ns) and gr__cycles_elapsed.max. SM clock 1 GHz.
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
                        "sm__warps_active.sum.per_cycle_elapsed", "gr__cycles_elapsed.max"};
      s.interval_ns = 1000;
      sets.push_back(s);
      DeviceInfo info;
      info.id = d;
      info.sm_count = 132;
      info.max_warps_per_sm = 64;
      info.core_clock_khz = 1000000;  // 1 cycle per ns
      devices.push_back(info);
    }
  }
  void Sample(uint64_t start, uint64_t end, double warps, double cycles = 1000,
              uint32_t device = 0) {
    PmSample s;
    s.metric_set_id = device + 1;
    s.start_ns = start;
    s.duration_ns = end - start;
    const double elapsed = static_cast<double>(end - start);
    s.values = {warps, cycles, warps * 132 * cycles / elapsed, elapsed};
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
  // The two shared samples measured both kernels: only the eight of its own count.
  EXPECT_DOUBLE_EQ(a.mean_warps_per_sm, 20);
  EXPECT_FALSE(a.from_shared_samples);
  AchievedOccupancy b = f.Achieved(1);
  EXPECT_EQ(b.samples, 2u);
  EXPECT_EQ(b.shared_samples, 2u);
  EXPECT_DOUBLE_EQ(b.shared_time_fraction, 1.0);
  // No sample of its own: measured on the shared ones, and said so.
  EXPECT_TRUE(b.from_shared_samples);
  EXPECT_DOUBLE_EQ(b.mean_warps_per_sm, 50);
}

// A register-limited kernel (at most 32 warps per SM) ends 100 ns before a full kernel (64
// warps per SM) starts, inside its last sample. That sample's warps per active cycle is mostly
// the neighbour's; the kernel must not get them.
TEST(PmAttributionTest, HeavierNeighbourInTheLastSampleIsNotAttributed) {
  Fixture f;
  f.kernels = {Kernel(0, 4300), Kernel(4400, 9000)};
  f.Samples(0, 4000, 31);
  // [4000, 5000): 300 ns of the light kernel at 31, 100 ns idle, 600 ns of the heavy one at 64.
  f.Sample(4000, 5000, (300 * 31.0 + 600 * 64.0) / 900, 900);
  f.Samples(5000, 9000, 64);
  AchievedOccupancy a = f.Achieved(0);
  EXPECT_EQ(a.samples, 5u);
  EXPECT_EQ(a.shared_samples, 1u);
  EXPECT_DOUBLE_EQ(a.mean_warps_per_sm, 31);  // it was about 33.6 with the shared sample in
  EXPECT_EQ(a.above_limit, 0u);
  AchievedOccupancy b = f.Achieved(1);
  EXPECT_DOUBLE_EQ(b.mean_warps_per_sm, 64);
}

// A value above what the launch can hold per SM (another process on the GPU, or a sample the
// trace cannot tell apart) is capped at the limit and counted, never passed on.
TEST(PmAttributionTest, ValuesAboveTheTheoreticalLimitAreCappedAndCounted) {
  Fixture f;
  f.kernels = {Kernel(0, 4000)};
  f.Sample(0, 1000, 32);
  f.Sample(1000, 2000, 48);  // 16 warps per SM more than 32 can be this kernel's
  f.Sample(2000, 3000, 32);
  f.Sample(3000, 4000, 32);
  f.extracted = ExtractActiveWarpSamples(f.inputs());
  f.attribution = AttributeSamples(f.kernels, f.extracted);
  AchievedOccupancy a = ComputeAchievedOccupancy(f.kernels[0], f.attribution.kernel_samples[0],
                                                 f.extracted, f.attribution, 64, 32);
  EXPECT_EQ(a.above_limit, 1u);
  EXPECT_DOUBLE_EQ(a.mean_warps_per_sm, 32);
  EXPECT_DOUBLE_EQ(a.achieved, 0.5);
  AchievedOccupancy no_limit = f.Achieved(0);
  EXPECT_EQ(no_limit.above_limit, 0u);
  EXPECT_DOUBLE_EQ(no_limit.mean_warps_per_sm, 36);
}

// Nsight Compute's achieved occupancy is warps accumulated over active SM cycles. Built here SM
// by SM for a long-tail kernel (one wave of 8 blocks per SM; 1 block in 64 runs 10x longer)
// that starts and ends inside samples, with idle GPU time around it: the weighted mean of the
// per-sample "warps per active cycle" must equal that ratio exactly, edges included.
TEST(PmAttributionTest, LongTailWithIdleEdgesMatchesTheActiveCycleEstimator) {
  constexpr int kSms = 132, kBlocksPerSm = 8, kWarpsPerBlock = 8;
  constexpr uint64_t kStart = 3300, kNormal = 20000, kHeavy = 200000, kSample = 7000;
  // Blocks b = 0, 64, 128, ... are heavy; block b sits on SM b % 132 (round robin).
  std::vector<int> heavy_on_sm(kSms, 0);
  for (int b = 0; b < kSms * kBlocksPerSm; b += 64) ++heavy_on_sm[b % kSms];
  // Warps resident on one SM at time t (ns since kernel start).
  auto warps = [&](int sm, double t) -> double {
    if (t < 0 || t >= kHeavy) return 0;
    return (t < kNormal ? kBlocksPerSm : heavy_on_sm[sm]) * kWarpsPerBlock;
  };
  Fixture f;
  f.kernels = {Kernel(kStart, kStart + kHeavy)};
  double total_warp_cycles = 0, total_active_cycles = 0;
  for (uint64_t t0 = 0; t0 < kStart + kHeavy + 2 * kSample; t0 += kSample) {
    double warp_cycles = 0, active_cycles = 0;  // 1 cycle per ns
    for (int sm = 0; sm < kSms; ++sm) {
      // Piecewise constant with breaks at kStart, +kNormal, +kHeavy: integrate exactly.
      std::vector<double> cuts = {double(t0), double(t0 + kSample)};
      for (double c : {double(kStart), double(kStart + kNormal), double(kStart + kHeavy)}) {
        if (c > t0 && c < t0 + kSample) cuts.push_back(c);
      }
      std::sort(cuts.begin(), cuts.end());
      for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        const double w = warps(sm, (cuts[i] + cuts[i + 1]) / 2 - kStart);
        warp_cycles += w * (cuts[i + 1] - cuts[i]);
        if (w > 0) active_cycles += cuts[i + 1] - cuts[i];
      }
    }
    total_warp_cycles += warp_cycles;
    total_active_cycles += active_cycles;
    const double per_active = active_cycles > 0 ? warp_cycles / active_cycles : 0;
    f.Sample(t0, t0 + kSample, per_active, active_cycles / kSms);
  }
  const double ncu = total_warp_cycles / total_active_cycles / 64;
  AchievedOccupancy a = f.Achieved(0);
  EXPECT_NEAR(a.achieved, ncu, 1e-12);
  EXPECT_FALSE(a.time_weighted);
  EXPECT_LT(ncu, 0.6);  // the tail is really there: 1/8 of the warps on 17 SMs for 90%
  // Per elapsed cycle (..._pct_of_peak_sustained_elapsed): the same warps over the kernel's
  // elapsed cycles on every SM, idle ones included.
  const double ncu_elapsed = total_warp_cycles / (double(kHeavy) * kSms) / 64;
  EXPECT_NEAR(a.achieved_elapsed, ncu_elapsed, 1e-12);
  EXPECT_LT(a.achieved_elapsed, ncu - 0.2);

  // Without sm__cycles_active.avg the samples can only be weighted by time: the long tail
  // (few SMs busy) then counts like the full part and the figure reads low, flagged.
  f.sets[0].metric_names[1] = "not_the_active_cycles";
  AchievedOccupancy by_time = f.Achieved(0);
  EXPECT_TRUE(by_time.time_weighted);
  EXPECT_LT(by_time.achieved, ncu - 0.2);
}

// A kernel whose SMs are busy half of each elapsed cycle: per active cycle and per elapsed
// cycle differ by that idle share, in a launch and in its report row.
TEST(PmAttributionTest, IdleHalfTheTimeHalvesTheElapsedFigureOnly) {
  Fixture f;
  f.kernels = {Kernel(0, 4000)};
  for (uint64_t t = 0; t < 4000; t += 1000) f.Sample(t, t + 1000, 48, 500);
  AchievedOccupancy a = f.Achieved(0);
  EXPECT_DOUBLE_EQ(a.achieved, 0.75);
  EXPECT_DOUBLE_EQ(a.achieved_elapsed, 0.375);
  EXPECT_DOUBLE_EQ(a.elapsed_weight, 4000);
  EXPECT_DOUBLE_EQ(a.unseen_ns, 0);
  EXPECT_DOUBLE_EQ(a.unseen_active_cycles_max, 0);
  absl::StatusOr<OccupancyReport> report = BuildOccupancyReport(f.inputs(), {});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->rows.size(), 1u);
  const OccupancyRow& row = report->rows[0];
  EXPECT_DOUBLE_EQ(row.achieved, 0.75);
  EXPECT_DOUBLE_EQ(row.achieved_elapsed, 0.375);
  // Every cycle measured: the bounds are the figures.
  EXPECT_DOUBLE_EQ(row.achieved_low, 0.75);
  EXPECT_DOUBLE_EQ(row.achieved_high, 0.75);
  EXPECT_DOUBLE_EQ(row.achieved_elapsed_low, 0.375);
  EXPECT_DOUBLE_EQ(row.achieved_elapsed_high, 0.375);
  EXPECT_DOUBLE_EQ(row.unseen_share, 0);

  // Without the GPU-wide warps the SM elapsed cycles are the SM clock times the time
  // (gr__cycles_elapsed.max counts another clock), the clock that of a sample with every SM
  // busy: here one later, without the kernel. The same figures.
  f.sets[0].metric_names[2] = "not_the_gpu_warps";
  f.Sample(10000, 11000, 64, 1000);
  AchievedOccupancy without = f.Achieved(0);
  EXPECT_DOUBLE_EQ(without.achieved, 0.75);
  EXPECT_DOUBLE_EQ(without.achieved_elapsed, 0.375);
  // No sample with every SM busy: the clock the samples saw is half the SMs', and the elapsed
  // figure reads as high as it can, the active one (a limit docs/occupancy.md states).
  f.samples.pop_back();
  EXPECT_DOUBLE_EQ(f.Achieved(0).achieved_elapsed, 0.75);
}

// The time no sample of its own covers must be weighed by the active cycles it can have held,
// not by its share of the time. A long-tail kernel (10 SMs, 1 cycle per ns) starts 600 ns into
// a sample that a full neighbour shares: its full first 400 ns are unseen. Then 1000 ns full,
// then 1 SM with 8 warps for 9000 ns: by hand, 1000·64 + 900·8 = 71,200 warp cycles per SM over
// 1000 + 900 active cycles per SM: 37.47 warps per active cycle, 58.55%. Its own samples give
// 47.5%. The unseen 400 ns are 4% of its time but up to 21% of its active cycles: bounds from
// the time share, [45.6, 49.6]%, missed 58.55%; from the cycles they reach it (the unseen part
// was full, at the ceiling).
TEST(PmAttributionTest, BoundsWeighTheUnseenTimeByItsMostActiveCycles) {
  Fixture f;
  f.kernels = {Kernel(0, 600), Kernel(600, 10600)};
  f.kernels[0].name = "neighbour";
  f.kernels[1].name = "long_tail";
  f.Sample(0, 1000, 64, 1000);  // the neighbour's 600 ns and the kernel's first 400, all full
  f.Sample(1000, 2000, (600 * 64.0 + 40 * 8.0) / 640, 640);  // 600 ns full, then the tail
  for (uint64_t t = 2000; t < 10000; t += 1000) f.Sample(t, t + 1000, 8, 100);
  f.Sample(10000, 11000, 8, 60);  // the last 600 ns of the tail, then idle
  const double truth = (1000 * 64.0 + 900 * 8.0) / 1900 / 64;

  AchievedOccupancy a = f.Achieved(1);
  EXPECT_EQ(a.shared_samples, 1u);
  EXPECT_NEAR(a.achieved, 45600.0 / 1500 / 64, 1e-12);  // its own samples alone
  EXPECT_DOUBLE_EQ(a.unseen_ns, 400);
  EXPECT_DOUBLE_EQ(a.unseen_active_cycles_max, 400);  // the clock: 1 cycle per ns
  EXPECT_DOUBLE_EQ(a.seen_active_cycles, 1500);

  absl::StatusOr<OccupancyReport> report = BuildOccupancyReport(f.inputs(), {});
  ASSERT_TRUE(report.ok()) << report.status();
  const OccupancyRow* row = nullptr;
  for (const OccupancyRow& r : report->rows) {
    if (r.name == "long_tail") row = &r;
  }
  ASSERT_NE(row, nullptr);
  EXPECT_FALSE(row->unseen_by_time);
  EXPECT_NEAR(row->unseen_share, 400.0 / 1900, 1e-12);
  EXPECT_LE(row->achieved_low, truth);
  EXPECT_GE(row->achieved_high, truth - 1e-12);
  EXPECT_NEAR(row->achieved_high, truth, 1e-12);  // reached only if the unseen part was full
  const double time_share = 400.0 / 10000;
  EXPECT_LT(row->achieved * (1 - time_share) + time_share, truth - 0.08);  // the old high end
  // Per elapsed cycle the unseen part weighs its time (400 of 10,000 elapsed cycles): the kernel
  // held 71,200 warp cycles per SM over 10,000 elapsed ones, 11.1%.
  const double truth_elapsed = 71200.0 / 10000 / 64;
  EXPECT_NEAR(row->achieved_elapsed, 45600.0 / 9600 / 64, 1e-12);
  EXPECT_LE(row->achieved_elapsed_low, truth_elapsed);
  EXPECT_GE(row->achieved_elapsed_high, truth_elapsed - 1e-12);
}

// Two back-to-back launches of one long-tail kernel (one report row): the first one's tail and
// the second one's full start share a sample. Per launch, derived by hand (1 cycle per ns, 10
// SMs): 10 SMs hold 64 warps for 2000 ns, then 1 SM holds 8 warps for 8000 ns, so warps
// accumulated 10*2000*64 + 8000*8 = 1,344,000 over 20,000 + 8,000 active SM cycles: 48 warps
// per active cycle, 75%, for each launch and for both. Leaving the shared sample out (the
// launch's ramp-up and drain at the boundary) gave 236,400 / 5,050 = 46.8 warps (73.1%).
TEST(PmAttributionTest, BackToBackLaunchesOfOneRowKeepTheSharedSample) {
  Fixture f;
  f.kernels = {Kernel(500, 10500), Kernel(10500, 20500)};
  // Per 1000 ns sample: active cycles per SM (Σ over the 10 SMs / 10) and warps per active cycle.
  const double ramp = (10 * 500 * 64.0 + 500 * 8.0) / (10 * 500 + 500);  // full half + tail half
  f.Sample(0, 1000, 64, 500);  // the first launch's first 500 ns, all SMs full
  f.Sample(1000, 2000, 64, 1000);
  f.Sample(2000, 3000, ramp, 550);  // 500 ns full, then the tail
  for (uint64_t t = 3000; t < 10000; t += 1000) f.Sample(t, t + 1000, 8, 100);
  f.Sample(10000, 11000, ramp, 550);  // first launch's last 500 ns of tail, second one's start
  f.Sample(11000, 12000, 64, 1000);
  f.Sample(12000, 13000, ramp, 550);
  for (uint64_t t = 13000; t < 20000; t += 1000) f.Sample(t, t + 1000, 8, 100);
  f.Sample(20000, 21000, 8, 50);  // the second launch's last 500 ns

  absl::StatusOr<OccupancyReport> report = BuildOccupancyReport(f.inputs(), {});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->rows.size(), 1u);
  const OccupancyRow& row = report->rows[0];
  EXPECT_EQ(row.launches, 2u);
  EXPECT_EQ(row.shared_samples, 0u);
  EXPECT_NEAR(row.achieved, 0.75, 1e-12);

  // Kernels named differently are different rows: the shared sample is left out of both.
  f.kernels[1].name = "other";
  absl::StatusOr<OccupancyReport> two_rows = BuildOccupancyReport(f.inputs(), {});
  ASSERT_TRUE(two_rows.ok()) << two_rows.status();
  ASSERT_EQ(two_rows->rows.size(), 2u);
  for (const OccupancyRow& r : two_rows->rows) EXPECT_EQ(r.shared_samples, 1u);
  EXPECT_NEAR(two_rows->rows[0].achieved, 134000.0 / 2750 / 64, 1e-12);
  EXPECT_NEAR(two_rows->rows[1].achieved, 102400.0 / 2300 / 64, 1e-12);
}

// Without active cycles a sample counts with the kernel's time in it, not with its whole
// length: 100 ns of kernel in a 1000 ns edge sample weigh a tenth of a full sample.
TEST(PmAttributionTest, TimeWeightsAreTheOverlapNotTheSampleLength) {
  Fixture f;
  f.sets[0].metric_names[1] = "not_the_active_cycles";
  f.kernels = {Kernel(900, 3000)};
  f.Sample(0, 1000, 10);  // kernel's first 100 ns, ramping up
  f.Sample(1000, 2000, 40);
  f.Sample(2000, 3000, 40);
  AchievedOccupancy a = f.Achieved(0);
  EXPECT_TRUE(a.time_weighted);
  EXPECT_DOUBLE_EQ(a.mean_warps_per_sm, (100 * 10.0 + 2000 * 40.0) / 2100);
  EXPECT_DOUBLE_EQ(a.weight, 2100);
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
  // SM elapsed cycles: gr__cycles_elapsed.max counts another clock (1.66 GHz against the SMs'
  // 1.98 GHz on the H200 of pipeline_pm.wst), so they are the SM clock the samples saw (here
  // 0.5 per ns: no sample had every SM busy) times the time; the bounds' clock is the device
  // record's where that is faster.
  f.samples[0].values = {40, 500, 833};
  x = ExtractActiveWarpSamples(f.inputs());
  EXPECT_DOUBLE_EQ(x.samples[0].elapsed_cycles, 500);
  EXPECT_DOUBLE_EQ(x.ClockOnDevice(0), 1.0);
  // With the GPU-wide warps, from them: the SMs' own count (here 1200 ns of cycles at 1.2 GHz).
  f.sets[0].metric_names[2] = "sm__warps_active.sum.per_cycle_elapsed";
  f.samples[0].values = {40, 500, 40.0 * 132 * 500 / 1200};
  x = ExtractActiveWarpSamples(f.inputs());
  EXPECT_DOUBLE_EQ(x.samples[0].elapsed_cycles, 1200);
  EXPECT_DOUBLE_EQ(x.ClockOnDevice(0), 1.2);  // faster than the device record's 1 GHz
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
