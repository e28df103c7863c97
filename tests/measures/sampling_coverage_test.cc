// SamplingCoverage on synthetic spans: the share of kernel time and launches inside samples,
// and the holes, in the edge cases (no samples, samples covering everything, a sample spanning
// two kernels, kernels outside any sampled span), plus the PC sampling spans of a trace and
// the low-coverage wording.
#include "analyzers/measures/sampling_coverage.h"

#include <string>
#include <vector>

#include "analyzers/analyses/stalls.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;

SamplingCoverage Of(std::vector<SampledSpan> spans) { return SamplingCoverage(spans); }

TEST(SamplingCoverageTest, WithoutSamplesEveryKernelIsInOneHole) {
  SamplingCoverage c = Of({});
  EXPECT_EQ(c.AddKernel(0, 100, 50), 0u);
  EXPECT_EQ(c.AddKernel(0, 400, 100), 0u);
  EXPECT_EQ(c.totals().launches, 2u);
  EXPECT_EQ(c.totals().covered_launches, 0u);
  EXPECT_EQ(c.totals().kernel_ns, 150u);
  EXPECT_EQ(c.totals().covered_ns, 0u);
  EXPECT_TRUE(c.totals().low());
  ASSERT_EQ(c.hole_count(), 1u);
  const SamplingHole h = c.LargestHoles(10)[0];
  EXPECT_EQ(h.place, HolePlace::kNoSamples);
  EXPECT_EQ(h.begin_ns, 100u);
  EXPECT_EQ(h.end_ns, 500u);
  EXPECT_EQ(h.kernel_ns, 150u);
  EXPECT_EQ(h.launches, 2u);
}

TEST(SamplingCoverageTest, SamplesCoveringEverythingLeaveNoHole) {
  // Touching samples merge: the boundary at 100 is no hole.
  SamplingCoverage c = Of({{0, 100, 200}, {0, 0, 100}});
  EXPECT_EQ(c.AddKernel(0, 10, 40), 40u);
  EXPECT_EQ(c.AddKernel(0, 60, 130), 130u);  // across the boundary
  EXPECT_EQ(c.totals().covered_launches, 2u);
  EXPECT_EQ(c.totals().covered_ns, 170u);
  EXPECT_DOUBLE_EQ(c.totals().time_fraction(), 1.0);
  EXPECT_FALSE(c.totals().low());
  EXPECT_EQ(c.hole_count(), 0u);
  EXPECT_TRUE(c.LargestHoles(10).empty());
}

TEST(SamplingCoverageTest, ASampleSpanningTwoKernelsCoversEachItsOverlap) {
  SamplingCoverage c = Of({{0, 5, 15}});
  EXPECT_EQ(c.AddKernel(0, 0, 10), 5u);
  EXPECT_EQ(c.AddKernel(0, 10, 10), 5u);
  EXPECT_EQ(c.totals().covered_launches, 2u);
  EXPECT_DOUBLE_EQ(c.totals().time_fraction(), 0.5);
  EXPECT_FALSE(c.totals().low());  // half is enough (kLowCoverage)
  const std::vector<SamplingHole> holes = c.LargestHoles(10);
  ASSERT_EQ(holes.size(), 2u);
  EXPECT_EQ(holes[0].place, HolePlace::kBeforeFirst);
  EXPECT_EQ(holes[0].begin_ns, 0u);
  EXPECT_EQ(holes[0].end_ns, 5u);
  EXPECT_EQ(holes[1].place, HolePlace::kAfterLast);
  EXPECT_EQ(holes[1].begin_ns, 15u);
  EXPECT_EQ(holes[1].end_ns, 20u);
}

TEST(SamplingCoverageTest, KernelsOutsideAnySampledSpanAreHolesBeforeBetweenAndAfter) {
  SamplingCoverage c = Of({{0, 100, 200}, {0, 300, 400}});
  EXPECT_EQ(c.AddKernel(0, 0, 50), 0u);       // before the first sample
  EXPECT_EQ(c.AddKernel(0, 220, 40), 0u);     // between samples
  EXPECT_EQ(c.AddKernel(0, 500, 100), 0u);    // after the last
  EXPECT_EQ(c.AddKernel(0, 150, 200), 100u);  // sampled, then in the hole, then sampled
  const CoverageTotals& t = c.totals();
  EXPECT_EQ(t.launches, 4u);
  EXPECT_EQ(t.covered_launches, 1u);
  EXPECT_EQ(t.kernel_ns, 390u);
  EXPECT_EQ(t.covered_ns, 100u);
  EXPECT_TRUE(t.low());
  const std::vector<SamplingHole> holes = c.LargestHoles(10);
  ASSERT_EQ(holes.size(), 3u);
  EXPECT_EQ(holes[0].place, HolePlace::kBeforeFirst);
  EXPECT_EQ(holes[0].kernel_ns, 50u);
  EXPECT_EQ(holes[1].place, HolePlace::kBetween);
  EXPECT_EQ(holes[1].begin_ns, 200u);  // the spanning kernel's part from the sample's end
  EXPECT_EQ(holes[1].end_ns, 300u);
  EXPECT_EQ(holes[1].kernel_ns, 140u);
  EXPECT_EQ(holes[1].launches, 2u);
  EXPECT_EQ(holes[1].gap_ns, 100u);  // sample to sample; open stretches have none
  EXPECT_EQ(holes[0].gap_ns, 0u);
  EXPECT_EQ(holes[2].place, HolePlace::kAfterLast);
  EXPECT_EQ(holes[2].launches, 1u);
  // Each nanosecond of kernel time is either sampled or in a hole.
  EXPECT_EQ(holes[0].kernel_ns + holes[1].kernel_ns + holes[2].kernel_ns,
            t.kernel_ns - t.covered_ns);
  // The largest ones, still in time order.
  const std::vector<SamplingHole> two = c.LargestHoles(2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].place, HolePlace::kBetween);
  EXPECT_EQ(two[1].place, HolePlace::kAfterLast);
  EXPECT_EQ(c.hole_count(), 3u);
}

TEST(SamplingCoverageTest, DevicesAreApartAndOddLaunchesCount) {
  SamplingCoverage c = Of({{0, 100, 200}});
  EXPECT_EQ(c.AddKernel(1, 120, 50), 0u);  // another device: sampled spans of 0 say nothing
  EXPECT_EQ(c.AddKernel(0, 150, 0), 0u);   // no duration, inside a sample: covered
  EXPECT_EQ(c.AddKernel(0, 250, 0), 0u);   // no duration, after it: in the hole after
  EXPECT_EQ(c.AddKernel(0, ~uint64_t{0} - 5, 10), 0u);  // end overflows: a launch, no time
  EXPECT_EQ(c.totals().launches, 4u);
  EXPECT_EQ(c.totals().covered_launches, 1u);
  EXPECT_EQ(c.totals().kernel_ns, 50u);
  const std::vector<SamplingHole> holes = c.LargestHoles(10);
  ASSERT_EQ(holes.size(), 2u);
  EXPECT_EQ(holes[0].device_id, 0u);
  EXPECT_EQ(holes[0].place, HolePlace::kAfterLast);
  EXPECT_EQ(holes[0].launches, 1u);
  EXPECT_EQ(holes[1].device_id, 1u);
  EXPECT_EQ(holes[1].place, HolePlace::kNoSamples);
  EXPECT_EQ(holes[1].kernel_ns, 50u);
}

TEST(SamplingCoverageTest, LowCoverageNoteBelowHalfOfTheTime) {
  EXPECT_EQ(LowCoverageNote("PM", 39, 300, 0.5), "");
  EXPECT_EQ(LowCoverageNote("PM", 0, 0, 0), "");  // launches unknown: nothing to say
  EXPECT_EQ(LowCoverageNote("PM", 39, 300, 0.126),
            "LOW COVERAGE: the figures rest on 39 of 300 launches (12.6% of the kernel's time) "
            "with PM samples; the launches without them may differ");
}

// PC sampling runs inside capture windows, up to the context's last read; a read that found
// the hardware buffer full lost the samples since the previous read.
TEST(PcSampledSpansTest, WindowsUpToTheLastReadWithoutLostStretches) {
  const std::string trace = testing::WriteTempFile(
      testing::TextprotoToWire(R"pb(
        packet { header { format_major: 1 producer: "fixture:pc_spans" } }
        packet { capture_window { window_id: 1 begin: true timestamp_ns: 1000 } }
        packet { capture_window { window_id: 1 begin: false timestamp_ns: 5000 } }
        packet { capture_window { window_id: 2 begin: true timestamp_ns: 7000 } }
        packet { pc_samples { device_id: 0 context_id: 1 timestamp_ns: 2000 total_samples: 5 } }
        packet {
          pc_samples { device_id: 0 context_id: 1 timestamp_ns: 3000 hardware_buffer_full: true }
        }
        packet { pc_samples { device_id: 0 context_id: 1 timestamp_ns: 9000 total_samples: 5 } }
        packet { pc_samples { device_id: 1 context_id: 2 timestamp_ns: 4000 total_samples: 5 } }
      )pb"),
      "pc_spans.wst");
  absl::StatusOr<TraceModel> model = TraceModel::Load(trace);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<SampledSpan> spans = PcSampledSpans(*model);
  std::vector<std::vector<uint64_t>> got;
  for (const SampledSpan& s : spans) got.push_back({s.device_id, s.start_ns, s.end_ns});
  // Device 0: window 1 without (2000, 3000], then window 2 (still open) up to 9000.
  // Device 1: window 1 up to its only read.
  EXPECT_EQ(got, (std::vector<std::vector<uint64_t>>{
                     {0, 1000, 2000}, {0, 3000, 5000}, {0, 7000, 9000}, {1, 1000, 4000}}));
  SamplingCoverage c(spans);
  EXPECT_EQ(c.AddKernel(0, 1500, 1000), 500u);  // half in the lost stretch
  EXPECT_EQ(c.AddKernel(1, 4500, 100), 0u);     // after device 1's last read
  EXPECT_EQ(c.AddKernel(3, 1500, 100), 0u);     // a device never sampled
  EXPECT_THAT(std::string(HolePlaceName(c.LargestHoles(10).back().place)), HasSubstr("no samples"));
}

// A kernel launched once inside the capture window and once, four times as long, after it:
// its shares rest on 1 of 2 launches, 20% of its time, and the stall report says so.
TEST(PcSampledSpansTest, StallReportFlagsAKernelMostlyOutsidePcSampling) {
  const std::string trace = testing::WriteTempFile(
      testing::TextprotoToWire(R"pb(
        packet { header { format_major: 1 producer: "fixture:pc_coverage" } }
        packet { device { id: 0 name: "NVIDIA H200" sm_count: 132 core_clock_khz: 1980000 } }
        packet { interned_string { id: 1 value: "_Z4stepPf" } }
        packet { interned_string { id: 2 value: "step(float*)" } }
        packet {
          pc_stall_reasons {
            device_id: 0
            index: 1
            name: "smsp__pcsamp_warps_issue_stalled_selected"
          }
        }
        packet { capture_window { window_id: 1 begin: true timestamp_ns: 0 } }
        packet {
          kernel {
            name_id: 2
            mangled_name_id: 1
            start_ns: 100000
            duration_ns: 500000
            device_id: 0
            context_id: 1
            correlation_id: 1
          }
        }
        packet { capture_window { window_id: 1 begin: false timestamp_ns: 1000000 } }
        packet {
          pc_samples {
            device_id: 0
            context_id: 1
            timestamp_ns: 1000000
            total_samples: 40
            records { function_name_id: 1 pc_offset: 16 stall_reason_index: 1 samples: 40 }
          }
        }
        packet {
          kernel {
            name_id: 2
            mangled_name_id: 1
            start_ns: 2000000
            duration_ns: 2000000
            device_id: 0
            context_id: 1
            correlation_id: 2
          }
        }
      )pb"),
      "pc_coverage.wst");
  absl::StatusOr<TraceModel> model = TraceModel::Load(trace);
  ASSERT_TRUE(model.ok()) << model.status();
  StallReportOptions options;
  options.locator = nullptr;
  absl::StatusOr<StallReport> report = BuildStallReport({&*model}, {"pc_coverage.wst"}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->rows.size(), 1u);
  const StallKernelRow& row = report->rows[0];
  EXPECT_EQ(row.launches, 2u);
  EXPECT_EQ(row.covered_launches, 1u);
  EXPECT_DOUBLE_EQ(row.covered_time_fraction, 0.2);
  EXPECT_EQ(row.coverage_note,
            "LOW COVERAGE: the figures rest on 1 of 2 launches (20.0% of the kernel's time) with "
            "PC samples; the launches without them may differ");
  EXPECT_THAT(RenderReport(StallReportTables(*report, false), OutputFormat::kTable).value(),
              HasSubstr("note: step(float*): LOW COVERAGE: the figures rest on 1 of 2 launches"));
}

}  // namespace
}  // namespace warpscope
