// Active-warp curves and tail metrics on synthetic PM samples: designed tails must be found
// with the designed tail fraction (within 10 points), balanced kernels must get no verdict.
#include "analyzers/measures/tail_summary.h"

#include <cmath>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;

constexpr double kFullGpu = 132 * 64;

struct Trace {
  std::vector<KernelEvent> kernels;
  std::vector<PmSample> samples;
  std::vector<PmMetricSet> sets;
  std::vector<DeviceInfo> devices;
  std::deque<LaunchConfig> launches;  // kernels point into it

  explicit Trace(uint64_t interval) {
    PmMetricSet s;
    s.id = 1;
    s.metric_names = {"sm__warps_active.avg.per_cycle_active",
                      "sm__warps_active.sum.per_cycle_elapsed"};
    s.interval_ns = interval;
    sets.push_back(s);
    DeviceInfo d;
    d.compute_capability_major = 9;  // an H200: the occupancy calculator's sm_90 defaults
    d.sm_count = 132;
    d.max_warps_per_sm = 64;
    devices.push_back(d);
  }
  void Kernel(const char* name, uint64_t start, uint64_t end) {
    KernelEvent k;
    k.name = name;
    k.start_ns = start;
    k.duration_ns = end - start;
    kernels.push_back(k);
  }
  // A kernel with a launch configuration of 256-thread blocks: 64 registers/thread allow 4
  // blocks (32 warps) per SM, 4,224 warps on the GPU; 32 registers allow 8 (all 64 warps).
  void Kernel(const char* name, uint64_t start, uint64_t end, uint32_t regs) {
    LaunchConfig& l = launches.emplace_back();
    l.id = launches.size();
    l.grid_x = 16384;
    l.grid_y = l.grid_z = 1;
    l.block_x = 256;
    l.block_y = l.block_z = 1;
    l.registers_per_thread = regs;
    Kernel(name, start, end);
    kernels.back().launch = &l;
  }
  // Samples over [from, to) whose GPU-wide value is the mean of `warps(t)` over the sample.
  void Sample(uint64_t from, uint64_t to, uint64_t interval,
              const std::function<double(double)>& warps) {
    for (uint64_t t = from; t < to; t += interval) {
      double sum = 0;
      const int steps = 100;
      for (int i = 0; i < steps; ++i) sum += warps(t + (i + 0.5) * interval / steps);
      PmSample s;
      s.metric_set_id = 1;
      s.start_ns = t;
      s.duration_ns = interval;
      s.values = {sum / steps / 132, sum / steps};
      samples.push_back(s);
    }
  }
  TailReport Report(const TailOptions& options = {}) const {
    return BuildTailReport(PmInputs{kernels, samples, sets, devices}, options);
  }
};

// A kernel of 1 ms at full occupancy whose last `tail` of runtime runs at `level` x full.
TailReport DesignedTail(double tail, double level, uint64_t interval = 10000) {
  Trace t(interval);
  t.Kernel("imbalanced", 0, 1000000);
  t.Sample(0, 1000000, interval,
           [&](double ns) { return ns < (1 - tail) * 1e6 ? kFullGpu : level * kFullGpu; });
  return t.Report();
}

TEST(ActiveWarpsTest, DesignedTailsAreMeasured) {
  for (double tail : {0.25, 0.4, 0.6, 0.8}) {
    for (double level : {0.02, 0.1, 0.3}) {
      SCOPED_TRACE(testing::Message() << "tail " << tail << " level " << level);
      TailReport r = DesignedTail(tail, level);
      ASSERT_EQ(r.curves.size(), 1u);
      const ActiveWarpCurve& c = r.curves[0];
      ASSERT_TRUE(c.has_tail_metrics) << c.note;
      EXPECT_NEAR(c.steady, kFullGpu, 1e-6);
      EXPECT_NEAR(c.tail_fraction, tail, 0.1);
      EXPECT_NEAR(c.tail_fraction, tail, 0.011);  // what the sampling actually allows
      EXPECT_NEAR(c.below_50, tail, 0.011);
      EXPECT_NEAR(c.tail_cost_fraction, tail * (1 - level), 0.011);
      EXPECT_THAT(c.verdict, HasSubstr("likely load imbalance between blocks"));
      EXPECT_EQ(r.summaries[0].verdict.empty(), false);
    }
  }
}

// The tail fraction's bounds hold the designed tail whatever the phase of the samples against
// the drain's start, and are about one sample wide; few samples a launch widen them past the
// limit, and the summary says what interval would give enough.
TEST(ActiveWarpsTest, TailBoundsHoldTheDesignedTail) {
  for (double tail : {0.25, 0.333, 0.6}) {
    for (uint64_t interval : {10000u, 13000u, 50000u}) {
      SCOPED_TRACE(testing::Message() << "tail " << tail << " interval " << interval);
      TailReport r = DesignedTail(tail, 0.05, interval);
      const ActiveWarpCurve& c = r.curves[0];
      ASSERT_TRUE(c.has_tail_metrics) << c.note;
      EXPECT_LE(c.tail_low, tail + 1e-9);
      EXPECT_GE(c.tail_high, tail - 1e-9);
      EXPECT_LE(c.tail_low, c.tail_fraction);
      EXPECT_GE(c.tail_high, c.tail_fraction);
      EXPECT_LE(c.tail_high - c.tail_low, 2.0 * interval / 1e6 + 1e-9);
      EXPECT_NEAR(r.summaries[0].tail_low, c.tail_low, 1e-12);
    }
  }
  // 1 ms in samples of 200 us: each edge known to a fifth of the runtime.
  TailReport coarse = DesignedTail(0.5, 0.05, 200000);
  EXPECT_GT(coarse.summaries[0].tail_high - coarse.summaries[0].tail_low, kMaxTailWidth);
  EXPECT_THAT(coarse.summaries[0].too_few, HasSubstr("--pm-interval 50.00 us"));
  EXPECT_EQ(DesignedTail(0.5, 0.05, 10000).summaries[0].too_few, "");
}

TEST(ActiveWarpsTest, DeepTailSaysTwentyFivePercent) {
  TailReport r = DesignedTail(0.4, 0.05);
  EXPECT_THAT(r.curves[0].verdict, HasSubstr("last 40% of runtime below 25% of steady"));
  TailReport shallow = DesignedTail(0.4, 0.4);
  EXPECT_THAT(shallow.curves[0].verdict, HasSubstr("last 40% of runtime below 50% of steady"));
}

TEST(ActiveWarpsTest, ShortTailIsNotMaterial) {
  TailReport r = DesignedTail(0.1, 0.05);
  EXPECT_NEAR(r.curves[0].tail_fraction, 0.1, 0.011);
  EXPECT_EQ(r.curves[0].verdict, "");
}

// One wave of blocks where a few blocks do 10x the work: the designed tail is 90% of the
// runtime (normal blocks end at T, heavy ones at 10 T).
TEST(ActiveWarpsTest, ImbalancedBlocksModel) {
  const double T = 100000;  // ns per normal block
  const int blocks = 132 * 8, heavy = 8, warps_per_block = 8;
  Trace t(5000);
  t.Kernel("imbalanced_blocks", 0, static_cast<uint64_t>(10 * T));
  t.Sample(0, static_cast<uint64_t>(10 * T), 5000, [&](double ns) {
    const int running = ns < T ? blocks : heavy;
    return static_cast<double>(running * warps_per_block);
  });
  TailReport r = t.Report();
  const ActiveWarpCurve& c = r.curves[0];
  EXPECT_NEAR(c.tail_fraction, 0.9, 0.1);
  EXPECT_NEAR(c.tail_fraction, 0.9, 0.01);
  EXPECT_THAT(c.verdict, HasSubstr("last 90% of runtime below 25%"));
}

TEST(ActiveWarpsTest, BalancedKernelsGetNoVerdict) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(-0.05, 0.05);
  Trace t(10000);
  // Three balanced launches: flat with 5% noise, a short ramp at both ends.
  for (int i = 0; i < 3; ++i) {
    const uint64_t start = i * 2000000;
    t.Kernel("balanced", start, start + 1000000);
  }
  t.Sample(0, 6000000, 10000, [&](double ns) {
    const double in = std::fmod(ns, 2000000.0);
    if (in >= 1000000) return 0.0;
    const double ramp = std::min({1.0, in / 20000, (1000000 - in) / 20000});
    return kFullGpu * 0.9 * ramp * (1 + noise(rng));
  });
  TailReport r = t.Report();
  ASSERT_EQ(r.curves.size(), 3u);
  for (const ActiveWarpCurve& c : r.curves) {
    ASSERT_TRUE(c.has_tail_metrics);
    EXPECT_LT(c.tail_fraction, 0.05);
    EXPECT_LT(c.tail_cost_fraction, 0.1);
    EXPECT_EQ(c.verdict, "");
    EXPECT_EQ(c.points.size(), 50u);
  }
  ASSERT_EQ(r.summaries.size(), 1u);
  EXPECT_EQ(r.summaries[0].launches, 3u);
  EXPECT_EQ(r.summaries[0].verdict, "");
}

TEST(ActiveWarpsTest, IdleAfterTheKernelDoesNotLookLikeATail) {
  // The kernel ends 1 us into a 10 us sample, the GPU is idle afterwards: the counter's
  // average over the sample is 10x lower than the kernel's level, and must be scaled back.
  Trace t(10000);
  t.Kernel("k", 0, 101000);
  t.Sample(0, 110000, 10000, [&](double ns) { return ns < 101000 ? kFullGpu : 0.0; });
  TailReport r = t.Report();
  const ActiveWarpCurve& c = r.curves[0];
  EXPECT_NEAR(c.segments.back().warps, kFullGpu, 1e-6);
  EXPECT_LT(c.tail_fraction, 0.01);
}

TEST(ActiveWarpsTest, ResamplesToTheRequestedPoints) {
  TailOptions o;
  o.points = 10;
  Trace t(10000);
  t.Kernel("k", 0, 1000000);
  t.Sample(0, 1000000, 10000, [&](double ns) { return ns < 500000 ? 100.0 : 50.0; });
  TailReport r = t.Report(o);
  const auto& p = r.curves[0].points;
  ASSERT_EQ(p.size(), 10u);
  EXPECT_DOUBLE_EQ(p[0], 100);
  EXPECT_DOUBLE_EQ(p[4], 100);
  EXPECT_DOUBLE_EQ(p[5], 50);
  EXPECT_DOUBLE_EQ(p[9], 50);
  EXPECT_DOUBLE_EQ(r.curves[0].peak, 100);
  EXPECT_DOUBLE_EQ(r.curves[0].mean, 75);
}

TEST(ActiveWarpsTest, TooFewSamplesGiveACurveButNoVerdict) {
  Trace t(100000);
  t.Kernel("short", 0, 250000);
  t.Sample(0, 300000, 100000, [&](double ns) { return ns < 100000 ? kFullGpu : 10.0; });
  TailReport r = t.Report();
  const ActiveWarpCurve& c = r.curves[0];
  EXPECT_EQ(c.samples, 3u);
  EXPECT_FALSE(c.has_tail_metrics);
  EXPECT_EQ(c.verdict, "");
  EXPECT_THAT(c.note, HasSubstr("too few for tail metrics"));
}

TEST(ActiveWarpsTest, KernelsWithoutSamplesAreExplained) {
  Trace t(100000);
  t.Kernel("tiny", 350000, 352000);
  t.Sample(0, 300000, 100000, [](double) { return 100.0; });
  TailReport r = t.Report();
  EXPECT_THAT(r.curves[0].note, HasSubstr("kernel shorter than the sampling interval"));
  EXPECT_THAT(r.summaries[0].note, HasSubstr("kernel shorter than the sampling interval"));
}

TEST(ActiveWarpsTest, RanksNamesByTotalTailCost) {
  Trace t(10000);
  t.Kernel("balanced", 0, 1000000);
  t.Kernel("tail_small", 2000000, 3000000);
  t.Kernel("tail_big", 4000000, 5000000);
  t.Kernel("tail_small", 6000000, 7000000);
  t.Sample(0, 7000000, 10000, [&](double ns) {
    const double in = std::fmod(ns, 1000000.0);
    const int which = static_cast<int>(ns / 1000000);
    if (which % 2 == 1) return 0.0;
    if (which == 0) return kFullGpu;
    if (which == 4) return in < 300000 ? kFullGpu : 0.05 * kFullGpu;  // 70% tail
    return in < 700000 ? kFullGpu : 0.05 * kFullGpu;                  // 30% tail
  });
  TailReport r = t.Report();
  ASSERT_EQ(r.summaries.size(), 3u);
  EXPECT_EQ(r.summaries[0].name, "tail_big");
  EXPECT_EQ(r.summaries[1].name, "tail_small");
  EXPECT_EQ(r.summaries[1].launches, 2u);
  EXPECT_NEAR(r.summaries[1].tail_fraction, 0.3, 0.011);
  EXPECT_EQ(r.summaries[2].name, "balanced");
  EXPECT_EQ(r.summaries[2].verdict, "");
  EXPECT_NE(r.summaries[0].verdict, "");
}

constexpr double kRegsLimit = 132 * 32;  // 4,224 warps: 64 registers/thread, 256 threads

// A register-limited kernel is followed 1 us after its end by a full one that starts inside
// its last sample: the sample's value, scaled to the busy part, is mostly the neighbour's
// (about 6,900 warps) and must not become the kernel's peak or steady level.
TEST(ActiveWarpsTest, HeavierNeighbourInTheLastSampleDoesNotLiftTheLevels) {
  Trace t(10000);
  t.Kernel("regs_limited", 0, 203000, 64);
  t.Kernel("full", 204000, 404000, 32);
  t.Sample(0, 410000, 10000, [](double ns) {
    if (ns < 203000) return 4100.0;
    return ns < 204000 ? 0.0 : 8300.0;
  });
  TailReport r = t.Report();
  const ActiveWarpCurve& c = r.curves[0];
  ASSERT_TRUE(c.has_tail_metrics) << c.note;
  EXPECT_DOUBLE_EQ(c.limit_warps, kRegsLimit);
  EXPECT_TRUE(c.limit_theoretical);
  EXPECT_NEAR(c.peak, 4100, 1e-6);
  EXPECT_NEAR(c.steady, 4100, 1e-6);
  EXPECT_FALSE(c.levels_from_shared);
  EXPECT_EQ(c.shared_samples, 1u);
  // The shared sample stays on the curve, marked, and capped at what the kernel can hold.
  ASSERT_FALSE(c.segments.empty());
  EXPECT_TRUE(c.segments.back().shared);
  EXPECT_TRUE(c.segments.back().clamped);
  EXPECT_DOUBLE_EQ(c.segments.back().warps, kRegsLimit);
  EXPECT_EQ(c.above_limit, 1u);
  for (const CurveSegment& s : c.segments) EXPECT_LE(s.warps, kRegsLimit);
  for (double p : c.points) EXPECT_LE(p, kRegsLimit);
  EXPECT_THAT(c.note, HasSubstr("1 PM sample above the 4224 warps its theoretical occupancy "
                                "allows on this GPU"));
  ASSERT_EQ(r.summaries.size(), 2u);
  for (const KernelTailSummary& s : r.summaries) {
    if (s.name != "regs_limited") continue;
    EXPECT_NEAR(s.peak, 4100, 1e-6);
    EXPECT_EQ(s.shared_samples, 1u);
    EXPECT_EQ(s.above_limit, 1u);
    EXPECT_DOUBLE_EQ(s.limit_warps, kRegsLimit);
  }
}

// Launches back to back (the H200 suite's long-tail kernel): each launch's last sample also
// holds the next launch's full start, which must not hide the launch's own 90% drain.
TEST(ActiveWarpsTest, TheNextLaunchInTheLastSampleDoesNotHideTheDrain) {
  Trace t(10000);
  t.Kernel("imbalanced", 0, 1002000);
  t.Kernel("imbalanced", 1006000, 2006000);
  t.Sample(0, 2010000, 10000, [](double ns) {
    if (ns >= 1002000 && ns < 1006000) return 0.0;
    const double in_launch = ns < 1002000 ? ns : ns - 1006000;
    return in_launch < 100000 ? kFullGpu : 0.02 * kFullGpu;
  });
  TailReport r = t.Report();
  ASSERT_EQ(r.curves.size(), 2u);
  const ActiveWarpCurve& first = r.curves[0];
  ASSERT_TRUE(first.has_tail_metrics) << first.note;
  EXPECT_EQ(first.shared_samples, 1u);
  EXPECT_NEAR(first.tail_fraction, 0.9, 0.011);
  EXPECT_NEAR(r.curves[1].tail_fraction, 0.9, 0.011);
}

// Ten microseconds in which another process adds 2,000 warps: a sample of the kernel's own
// above its theoretical limit is capped at the limit and counted.
TEST(ActiveWarpsTest, OwnSampleAboveTheLimitIsCappedAndCounted) {
  Trace t(10000);
  t.Kernel("regs_limited", 0, 400000, 64);
  t.Sample(0, 400000, 10000, [](double ns) {
    return 4000.0 + (ns >= 200000 && ns < 210000 ? 2000.0 : 0.0);
  });
  TailReport r = t.Report();
  const ActiveWarpCurve& c = r.curves[0];
  EXPECT_EQ(c.shared_samples, 0u);
  EXPECT_EQ(c.above_limit, 1u);
  EXPECT_DOUBLE_EQ(c.peak, kRegsLimit);  // 6,000 before
  EXPECT_NEAR(c.steady, 4000, 1e-6);     // one sample is 2.5% of the runtime
  EXPECT_THAT(c.note, HasSubstr("capped to it"));
}

// A 3 us kernel between two others has no sample of its own: its levels come from the shared
// sample, and it says so.
TEST(ActiveWarpsTest, KernelWithOnlySharedSamplesSaysSo) {
  TailOptions o;
  o.min_samples = 1;
  Trace t(10000);
  t.Kernel("before", 0, 104000, 32);
  t.Kernel("between", 105000, 108000, 32);
  t.Kernel("after", 109000, 200000, 32);
  t.Sample(0, 200000, 10000, [](double ns) {
    if (ns >= 105000 && ns < 108000) return 100.0;
    return (ns < 104000 || ns >= 109000) ? 8000.0 : 0.0;
  });
  TailReport r = t.Report(o);
  const ActiveWarpCurve& c = r.curves[1];
  EXPECT_EQ(c.samples, 1u);
  EXPECT_EQ(c.shared_samples, 1u);
  EXPECT_TRUE(c.levels_from_shared);
  EXPECT_THAT(c.note, HasSubstr("every PM sample of this kernel also covers another kernel"));
  const ActiveWarpCurve& before = r.curves[0];
  EXPECT_FALSE(before.levels_from_shared);
  EXPECT_NEAR(before.peak, 8000, 1e-6);
}

TEST(ActiveWarpsTest, NoSamplesIsAProblemNotACrash) {
  Trace t(10000);
  t.Kernel("k", 0, 1000);
  TailReport r = t.Report();
  EXPECT_THAT(r.problem, HasSubstr("warpscope record --pm-sampling"));
  EXPECT_EQ(r.curves.size(), 1u);
}

}  // namespace
}  // namespace warpscope
