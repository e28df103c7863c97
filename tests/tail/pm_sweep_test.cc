// The PM sweep (analyses/pm_sweep.h) against the whole-table attribution (pm_attribution.h):
// every launch gets the same samples, overlaps and counts, on launches and samples handed in
// out of time order over two devices, with concurrent launches, launches without time, gaps
// between samples, and, in the large case, enough records that the sort spills to files.
#include "analyzers/analyses/pm_sweep.h"

#include <vector>

#include "gtest/gtest.h"
#include "tests/tail/pm_sweep_case.h"

namespace warpscope {
namespace {

using ::warpscope::testing::Case;
using ::warpscope::testing::MakeCase;

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
