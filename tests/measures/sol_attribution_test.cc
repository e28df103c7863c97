// Speed-of-light attribution on synthetic PM samples (sol_attribution.h): overlap weights,
// idle time inside a sample, samples spanning two kernels, kernels shorter than the interval,
// medians with their intervals, launches partly unseen.
#include "analyzers/measures/sol_attribution.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzers/model/cupti_host.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

size_t UnitIndex(std::string_view unit) {
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (kSolUnits[u].unit == unit) return u;
  }
  ADD_FAILURE() << "no unit " << unit;
  return 0;
}

// The sol set on device 0, interval 1000 ns. Each sample gives every unit the same percent
// (dram gets its own), and `bytes` of DRAM traffic.
struct Fixture {
  std::vector<KernelEvent> kernels;
  std::vector<PmSample> samples;
  std::vector<PmMetricSet> sets;
  std::vector<DeviceInfo> devices;

  explicit Fixture(uint64_t interval_ns = 1000) {
    PmMetricSet s;
    s.id = 1;
    s.metric_names = SolPmMetrics();
    s.interval_ns = interval_ns;
    sets.push_back(s);
  }
  void Kernel(const char* name, uint64_t start, uint64_t end) {
    KernelEvent k;
    k.name = name;
    k.start_ns = start;
    k.duration_ns = end - start;
    kernels.push_back(k);
  }
  void Sample(uint64_t start, uint64_t end, double pct, double dram_pct, double bytes) {
    PmSample s;
    s.metric_set_id = 1;
    s.start_ns = start;
    s.duration_ns = end - start;
    s.values.assign(SolPmMetrics().size(), 0.0);
    for (size_t i = 0; i < SolPmMetrics().size(); ++i) {
      const std::string& m = SolPmMetrics()[i];
      for (const SolUnitMetric& u : kSolUnits) {
        if (m == u.metric) s.values[i] = u.unit == "dram" ? dram_pct : pct;
      }
      if (m == kMetricDramBytesRead) s.values[i] = bytes * 0.75;
      if (m == kMetricDramBytesWrite) s.values[i] = bytes * 0.25;
      if (m == kMetricFmaPipeInstructions) s.values[i] = bytes / 64;
    }
    samples.push_back(s);
  }
  std::vector<SolKernel> Rows() const {
    return BuildSolKernels(kernels, ExtractSolSamples(PmInputs{kernels, samples, sets, devices}));
  }
  std::vector<SolLaunch> Launches() const {
    std::vector<uint32_t> groups;
    for (const KernelEvent& k : kernels) groups.push_back(k.name == "a" ? 0 : 1);
    return AttributeSolSamples(kernels, ExtractSolSamples(PmInputs{kernels, samples, sets, devices}),
                               groups);
  }
};

TEST(SolAttributionTest, AKernelFillingItsSamplesGetsTheirValues) {
  Fixture f;
  f.Kernel("a", 0, 4000);
  for (int i = 0; i < 4; ++i) f.Sample(i * 1000, (i + 1) * 1000, 20 + 10 * i, 80, 4000);
  const std::vector<SolKernel> rows = f.Rows();
  ASSERT_EQ(rows.size(), 1u);
  const SolKernel& r = rows[0];
  EXPECT_FALSE(r.pooled);
  EXPECT_DOUBLE_EQ(r.covered_fraction, 1.0);
  EXPECT_DOUBLE_EQ(r.own_fraction, 1.0);
  // One launch: its figure is the time-weighted mean of its samples, (20+30+40+50)/4.
  EXPECT_DOUBLE_EQ(r.value[UnitIndex("sm")], 35.0);
  EXPECT_DOUBLE_EQ(r.value[UnitIndex("dram")], 80.0);
  EXPECT_DOUBLE_EQ(r.low[UnitIndex("sm")], 35.0);  // nothing unseen
  EXPECT_DOUBLE_EQ(r.high[UnitIndex("sm")], 35.0);
  EXPECT_DOUBLE_EQ(r.dram_bytes_per_s, 4000.0 / 1000 * 1e9);  // 4000 B per 1000 ns
  EXPECT_DOUBLE_EQ(r.fma_flop_per_s, 4000.0 / 1000 * 1e9);    // bytes / 64 inst x 64 FLOP
}

TEST(SolAttributionTest, IdleTimeInASampleIsNoKernels) {
  Fixture f;
  // 250 ns of kernel in a 1000 ns sample that read 25% of peak: the kernel ran at 100%.
  f.Kernel("a", 500, 750);
  f.Sample(0, 1000, 25, 10, 1000);
  const std::vector<SolLaunch> launches = f.Launches();
  EXPECT_DOUBLE_EQ(launches[0].Figure(UnitIndex("l2")), 100.0);
  EXPECT_DOUBLE_EQ(launches[0].Figure(UnitIndex("dram")), 40.0);
  EXPECT_DOUBLE_EQ(launches[0].dram_bytes, 1000.0);  // every byte is the kernel's
  EXPECT_EQ(launches[0].capped, 0u);
}

TEST(SolAttributionTest, AValueAbovePeakIsCappedAndCounted) {
  Fixture f;
  f.Kernel("a", 0, 100);
  f.Sample(0, 1000, 50, 50, 0);  // 50% over 1000 ns cannot come from 100 ns of one kernel
  const std::vector<SolLaunch> launches = f.Launches();
  EXPECT_DOUBLE_EQ(launches[0].Figure(UnitIndex("sm")), 100.0);
  EXPECT_EQ(launches[0].capped, kSolUnitCount);
}

TEST(SolAttributionTest, ASampleSpanningTwoKernelsGivesEachItsOverlapShare) {
  Fixture f;
  // a: 300 ns, b: 500 ns, 200 ns idle, one sample: neither has a sample of its own.
  f.Kernel("a", 0, 300);
  f.Kernel("b", 300, 800);
  f.Sample(0, 1000, 40, 40, 800);
  const std::vector<SolLaunch> launches = f.Launches();
  for (const SolLaunch& l : launches) {
    EXPECT_TRUE(l.from_shared);
    EXPECT_DOUBLE_EQ(l.own_ns, 0);
    // 40% of 1000 ns over 800 busy ns: 50% for both (the sample cannot tell them apart).
    EXPECT_DOUBLE_EQ(l.Figure(UnitIndex("fma")), 50.0);
  }
  EXPECT_DOUBLE_EQ(launches[0].dram_bytes, 300.0);  // by overlap share: 3/8 and 5/8
  EXPECT_DOUBLE_EQ(launches[1].dram_bytes, 500.0);
  // The rows say the figure rests on no sample of their own: the interval is 0..100.
  const std::vector<SolKernel> rows = f.Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].shared_launches, 1u);
  EXPECT_DOUBLE_EQ(rows[0].low[UnitIndex("fma")], 0.0);
  EXPECT_DOUBLE_EQ(rows[0].high[UnitIndex("fma")], 100.0);
}

TEST(SolAttributionTest, OwnSamplesAreUsedAndSharedOnesLeftOut) {
  Fixture f;
  f.Kernel("a", 0, 2500);
  f.Kernel("b", 2500, 3000);
  f.Sample(0, 1000, 60, 0, 0);
  f.Sample(1000, 2000, 60, 0, 0);
  f.Sample(2000, 3000, 10, 0, 0);  // shared with b: left out of a
  const std::vector<SolLaunch> launches = f.Launches();
  EXPECT_DOUBLE_EQ(launches[0].Figure(UnitIndex("alu")), 60.0);
  EXPECT_DOUBLE_EQ(launches[0].own_ns, 2000.0);
  EXPECT_DOUBLE_EQ(launches[0].covered_ns, 2500.0);
  // The unseen fifth of a may have held 0..100%: [60 x 0.8, 60 x 0.8 + 20].
  const std::vector<SolKernel> rows = f.Rows();
  EXPECT_DOUBLE_EQ(rows[0].low[UnitIndex("alu")], 48.0);
  EXPECT_DOUBLE_EQ(rows[0].high[UnitIndex("alu")], 68.0);
}

TEST(SolAttributionTest, ShortKernelsArePooledOverTheirLaunchesNotDropped) {
  Fixture f;
  // 250 ns launches every 500 ns over 4000 ns; samples cover the first 3000 ns only.
  for (uint64_t t = 0; t < 4000; t += 500) f.Kernel("short", t, t + 250);
  for (uint64_t t = 0; t < 3000; t += 1000) f.Sample(t, t + 1000, 30, 15, 1000);
  const std::vector<SolKernel> rows = f.Rows();
  ASSERT_EQ(rows.size(), 1u);
  const SolKernel& r = rows[0];
  EXPECT_TRUE(r.pooled);
  EXPECT_EQ(r.launches, 8u);
  EXPECT_EQ(r.measured_launches, 6u);  // 0 .. 2500 overlap a sample, 3000 and 3500 do not
  // Half of each sample is idle: the launches ran at twice the sample's value.
  EXPECT_DOUBLE_EQ(r.value[UnitIndex("tensor")], 60.0);
  EXPECT_DOUBLE_EQ(r.value[UnitIndex("dram")], 30.0);
  EXPECT_TRUE(std::isnan(r.p90[UnitIndex("tensor")]));
  // 1500 of its 2000 ns lie inside samples; the unseen quarter may have held 0..100%.
  EXPECT_DOUBLE_EQ(r.covered_fraction, 0.75);
  EXPECT_DOUBLE_EQ(r.low[UnitIndex("tensor")], 60.0 * 0.75);
  EXPECT_DOUBLE_EQ(r.high[UnitIndex("tensor")], 60.0 * 0.75 + 25.0);
}

TEST(SolAttributionTest, MedianAndP90OverLaunchesWithAnInterval) {
  Fixture f;
  for (int i = 0; i < 5; ++i) {
    f.Kernel("a", i * 2000, i * 2000 + 1000);
    f.Sample(i * 2000, i * 2000 + 1000, 10.0 * (i + 1), 0, 0);
  }
  const std::vector<SolKernel> rows = f.Rows();
  ASSERT_EQ(rows.size(), 1u);
  const size_t fp64 = UnitIndex("fp64");
  EXPECT_FALSE(rows[0].pooled);  // 1000 ns is not shorter than the interval
  EXPECT_DOUBLE_EQ(rows[0].value[fp64], 30.0);
  EXPECT_DOUBLE_EQ(rows[0].p90[fp64], 50.0);
  // n = 5: ranks floor(2.5 - 2.19) = 0 -> 1 and ceil(2.5 + 2.19) = 5.
  EXPECT_DOUBLE_EQ(rows[0].low[fp64], 10.0);
  EXPECT_DOUBLE_EQ(rows[0].high[fp64], 50.0);
}

TEST(SolAttributionTest, MedianIntervalNarrowsWithLaunches) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  double low = 0, high = 0;
  SolMedianInterval(v, v, &low, &high);
  // n = 100: ranks floor(50 - 9.8) = 40 and ceil(50 + 9.8) = 60 (1-based).
  EXPECT_DOUBLE_EQ(low, 40.0);
  EXPECT_DOUBLE_EQ(high, 60.0);
  EXPECT_DOUBLE_EQ(SolMedian(v), 51.0);
  EXPECT_DOUBLE_EQ(SolP90(v), 90.0);
  EXPECT_TRUE(std::isnan(SolMedian({})));
}

// Kernels a and b take turns for a few hundred ns each, in lengths that vary, under samples of
// 1000 ns: every sample holds both. a runs at 80% DRAM and 40% elsewhere, b at 10% and 20%; each
// sample measures the overlap-weighted sum.
Fixture Alternating(bool vary) {
  Fixture f;
  struct Run {
    bool a;
    uint64_t start, end;
  };
  std::vector<Run> runs;
  uint64_t t = 0;
  for (int i = 0; t < 400'000; ++i) {
    const uint64_t da = vary ? 100 + 37 * (i % 7) : 300, db = vary ? 100 + 53 * (i % 5) : 700;
    runs.push_back({true, t, t + da});
    runs.push_back({false, t + da, t + da + db});
    t += da + db;
  }
  for (const Run& r : runs) f.Kernel(r.a ? "a" : "b", r.start, r.end);
  for (uint64_t s = 0; s + 1000 <= t; s += 1000) {
    double pct = 0, dram = 0;
    for (const Run& r : runs) {
      const uint64_t lo = std::max(s, r.start), hi = std::min(s + 1000, r.end);
      if (hi <= lo) continue;
      const double share = static_cast<double>(hi - lo) / 1000;
      pct += share * (r.a ? 40 : 20);
      dram += share * (r.a ? 80 : 10);
    }
    f.Sample(s, s + 1000, pct, dram, 0);
  }
  return f;
}

TEST(SolAttributionTest, SharedSamplesAreUnmixedIntoEachKernelsOwnFigures) {
  const std::vector<SolKernel> rows = Alternating(/*vary=*/true).Rows();
  ASSERT_EQ(rows.size(), 2u);
  const size_t dram = UnitIndex("dram"), sm = UnitIndex("sm");
  for (const SolKernel& r : rows) {
    const bool a = r.name == "a";
    EXPECT_LT(r.own_fraction, 0.01) << r.name;  // every sample is shared
    ASSERT_TRUE(r.unmixed_ok) << r.name;
    EXPECT_NEAR(r.unmixed[dram], a ? 80 : 10, 0.5) << r.name;
    EXPECT_NEAR(r.unmixed[sm], a ? 40 : 20, 0.5) << r.name;
    EXPECT_LE(r.unmixed_low[dram], (a ? 80 : 10) + 0.01) << r.name;
    EXPECT_GE(r.unmixed_high[dram], (a ? 80 : 10) - 0.01) << r.name;
    EXPECT_LT(r.unmixed_high[dram] - r.unmixed_low[dram], 5) << r.name;
  }
  // The figure measured on the shared samples is the mix's, far from either kernel's.
  EXPECT_LT(rows[0].name == "a" ? rows[0].value[dram] : rows[1].value[dram], 60);
}

TEST(SolAttributionTest, KernelsAlwaysTogetherInOneProportionAreNotUnmixed) {
  // a 300 ns then b 700 ns in every 1000 ns sample: the samples cannot tell them apart.
  const std::vector<SolKernel> rows = Alternating(/*vary=*/false).Rows();
  ASSERT_EQ(rows.size(), 2u);
  for (const SolKernel& r : rows) EXPECT_FALSE(r.unmixed_ok) << r.name;
}

TEST(SolAttributionTest, ASetWithoutSolMetricsGivesNoFigures) {
  Fixture f;
  f.sets[0].metric_names = DefaultPmMetrics();
  f.Kernel("a", 0, 1000);
  PmSample s;
  s.metric_set_id = 1;
  s.duration_ns = 1000;
  s.values = {10, 1000, 1000};
  f.samples.push_back(s);
  const SolSamples samples = ExtractSolSamples(PmInputs{f.kernels, f.samples, f.sets, f.devices});
  EXPECT_FALSE(samples.any_unit());
  const std::vector<SolKernel> rows = f.Rows();
  EXPECT_DOUBLE_EQ(rows[0].covered_fraction, 1.0);
  EXPECT_TRUE(std::isnan(rows[0].value[UnitIndex("sm")]));
}

// The sol set fits one pass on GH100, as CUPTI's host API counts them without a GPU (the
// recorder refuses any other count at run time); adding l1tex__throughput would make it two.
TEST(SolMetricSetTest, OnePassOnGh100) {
  if (!CuptiHostLibraryPath().ok()) GTEST_SKIP() << CuptiHostLibraryPath().status();
  absl::StatusOr<size_t> passes = CuptiPmSamplingPasses("GH100", SolPmMetrics());
  ASSERT_TRUE(passes.ok()) << passes.status();
  EXPECT_EQ(*passes, 1u);
  std::vector<std::string> more = SolPmMetrics();
  more.push_back("SM_A.TriageCompute.l1tex__throughput.avg.pct_of_peak_sustained_elapsed");
  passes = CuptiPmSamplingPasses("GH100", more);
  ASSERT_TRUE(passes.ok()) << passes.status();
  EXPECT_EQ(*passes, 2u);
}

}  // namespace
}  // namespace warpscope
