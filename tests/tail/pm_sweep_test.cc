// The PM sweep (analyses/pm_sweep.h) against the whole-table attribution (pm_attribution.h):
// every launch gets the same samples, overlaps and counts, on launches and samples handed in
// out of time order over two devices, with concurrent launches, launches without time, gaps
// between samples, and, in the large case, enough records that the sort spills to files.
#include "analyzers/analyses/pm_sweep.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace warpscope {
namespace {

struct Case {
  std::vector<KernelEvent> kernels;
  std::vector<PmSample> samples;
  std::vector<PmMetricSet> sets;
  std::vector<DeviceInfo> devices;
  std::vector<uint32_t> groups;  // some launches share a group
};

Case MakeCase(size_t launches, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Case c;
  const uint64_t span = launches * 700;
  for (uint32_t d = 0; d < 2; ++d) {
    PmMetricSet set;
    set.id = d + 1;
    set.device_id = d;
    set.metric_names = {kMetricWarpsPerSmActive, kMetricSmCyclesActive};
    set.interval_ns = 1000;
    c.sets.push_back(set);
    DeviceInfo device;
    device.id = d;
    device.core_clock_khz = 1'980'000;
    c.devices.push_back(device);
    for (uint64_t t = 0; t < span; t += 1000) {
      if (rng() % 10 == 0) continue;  // a hole
      const uint64_t duration = rng() % 3 == 0 ? 800 : 1000;
      c.samples.push_back({d + 1, t, duration, {static_cast<double>(rng() % 64), 900.0}, d});
    }
  }
  for (size_t i = 0; i < launches; ++i) {
    KernelEvent k;
    k.device_id = static_cast<uint32_t>(rng() % 2);
    k.start_ns = rng() % span;
    k.duration_ns = rng() % 8 == 0 ? 0 : 100 + rng() % 3000;
    c.kernels.push_back(k);
    c.groups.push_back(static_cast<uint32_t>(rng() % 7));
  }
  std::shuffle(c.samples.begin(), c.samples.end(), rng);
  return c;
}

void ExpectSameAsWholeTables(const Case& c) {
  const PmInputs in{c.kernels, c.samples, c.sets, c.devices};
  const ActiveWarpSamples whole = ExtractActiveWarpSamples(in);
  const PmAttribution want = AttributeSamples(c.kernels, whole, c.groups);
  std::vector<bool> seen(c.kernels.size());
  size_t next = 0, visited = 0, overlaps = 0;
  PmSweepTotals totals;
  const absl::Status swept = SweepPmSamples(
      PmSourcesOf(in), [&](const KernelEvent&) { return c.groups[next++]; },
      [&](const SweptKernel& k, const SweptSamples& got) {
        ASSERT_LT(k.index, c.kernels.size());
        ASSERT_FALSE(seen[k.index]) << "launch " << k.index << " handed over twice";
        seen[k.index] = true;
        ++visited;
        EXPECT_EQ(k.start_ns, c.kernels[k.index].start_ns);
        EXPECT_EQ(k.group, c.groups[k.index]);
        EXPECT_EQ(got.attribution.SamplesOnDevice(k.device_id), want.SamplesOnDevice(k.device_id));
        const std::vector<SampleOverlap>& expected = want.kernel_samples[k.index];
        ASSERT_EQ(got.overlaps.size(), expected.size()) << "launch " << k.index;
        for (size_t j = 0; j < expected.size(); ++j) {
          const uint32_t g = got.overlaps[j].sample, w = expected[j].sample;
          const ActiveWarpSample& a = got.samples.samples[g];
          const ActiveWarpSample& b = whole.samples[w];
          EXPECT_EQ(a.start_ns, b.start_ns);
          EXPECT_EQ(a.end_ns, b.end_ns);
          EXPECT_EQ(a.warps_per_sm, b.warps_per_sm);
          EXPECT_EQ(a.elapsed_cycles, b.elapsed_cycles);
          EXPECT_EQ(got.overlaps[j].overlap_ns, expected[j].overlap_ns);
          EXPECT_EQ(got.attribution.sample_kernel_count[g], want.sample_kernel_count[w]);
          EXPECT_EQ(got.attribution.sample_group_count[g], want.sample_group_count[w]);
          EXPECT_EQ(got.attribution.sample_busy_ns[g], want.sample_busy_ns[w]);
          ++overlaps;
        }
      },
      &totals);
  ASSERT_TRUE(swept.ok()) << swept;
  EXPECT_EQ(visited, c.kernels.size());
  EXPECT_EQ(totals.used_samples, whole.samples.size());
  EXPECT_EQ(totals.samples.clocks, whole.clocks);
  EXPECT_GT(overlaps, c.kernels.size());  // the case has launches with several samples
}

TEST(PmSweepTest, SmallCaseMatchesTheWholeTables) { ExpectSameAsWholeTables(MakeCase(300, 1)); }

// About 30 MB of records: past the sort's 16 MiB, so runs go to temporary files and merge.
TEST(PmSweepTest, SpilledCaseMatchesTheWholeTables) {
  ExpectSameAsWholeTables(MakeCase(120'000, 2));
}

}  // namespace
}  // namespace warpscope
