// The tail report from the PM sweep (BuildTailReportFiltered, analyses/tail.h), which holds per
// kernel name a summary and one curve, against the report from the whole tables
// (BuildTailReport, measures/tail_summary.h), which holds every curve: the same summaries (the
// sums within rounding: launches come in another order), the same worst launches, the same
// curves with --instances, and the same curve to draw without.
#include <algorithm>
#include <cmath>
#include <string>

#include "analyzers/analyses/tail.h"
#include "gtest/gtest.h"
#include "tests/tail/pm_sweep_case.h"

namespace warpscope {
namespace {

using ::warpscope::testing::Case;
using ::warpscope::testing::MakeCase;

void ExpectNear(double got, double want, const char* what) {
  EXPECT_NEAR(got, want, 1e-12 * std::max(1.0, std::abs(want))) << what;
}

void ExpectSameSummary(const KernelTailSummary& got, const KernelTailSummary& want) {
  SCOPED_TRACE(want.name);
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.launches, want.launches);
  EXPECT_EQ(got.launches_with_curve, want.launches_with_curve);
  EXPECT_EQ(got.total_ns, want.total_ns);
  EXPECT_EQ(got.curve_ns, want.curve_ns);
  ExpectNear(got.total_tail_cost_ns, want.total_tail_cost_ns, "tail cost");
  ExpectNear(got.tail_fraction, want.tail_fraction, "tail fraction");
  ExpectNear(got.tail_low, want.tail_low, "tail low");
  ExpectNear(got.tail_high, want.tail_high, "tail high");
  ExpectNear(got.tail_cost_fraction, want.tail_cost_fraction, "tail cost fraction");
  ExpectNear(got.below_50, want.below_50, "below 50");
  ExpectNear(got.below_25, want.below_25, "below 25");
  ExpectNear(got.steady, want.steady, "steady");
  ExpectNear(got.covered_ns, want.covered_ns, "covered");
  EXPECT_EQ(got.peak, want.peak);
  EXPECT_EQ(got.shared_samples, want.shared_samples);
  EXPECT_EQ(got.above_limit, want.above_limit);
  EXPECT_EQ(got.launches_levels_from_shared, want.launches_levels_from_shared);
  EXPECT_EQ(got.note, want.note);
  EXPECT_EQ(got.coverage_note, want.coverage_note);
}

// The sweep's report of `c` against the whole tables', with and without every curve; the
// whole tables' report.
TailReport ExpectSameAsWholeTables(const Case& c, size_t top) {
  const PmInputs in{c.kernels, c.samples, c.sets, c.devices};
  TailReport want = BuildTailReport(in, TailOptions{});
  KeepTopKernels(top, want);
  EXPECT_GT(want.summaries.size(), 0u);
  for (const bool instances : {true, false}) {
    SCOPED_TRACE(instances ? "with every curve" : "with a curve per name");
    TailReportOptions options;
    options.instances = instances;
    options.top = top;
    absl::StatusOr<TailReport> got = BuildTailReportFiltered(in, options);
    if (!got.ok()) {
      ADD_FAILURE() << got.status();
      continue;
    }
    EXPECT_EQ(got->problem, want.problem);
    if (got->summaries.size() != want.summaries.size()) {
      ADD_FAILURE() << got->summaries.size() << " summaries, want " << want.summaries.size();
      continue;
    }
    for (size_t s = 0; s < want.summaries.size(); ++s) {
      ExpectSameSummary(got->summaries[s], want.summaries[s]);
      if (want.summaries[s].launches_with_curve == 0) continue;
      const ActiveWarpCurve& worst = got->curves[got->summaries[s].worst_instance];
      EXPECT_EQ(worst.kernel_index, want.curves[want.summaries[s].worst_instance].kernel_index);
      EXPECT_EQ(got->summaries[worst.summary].name, want.summaries[s].name);
    }
    if (instances) {
      EXPECT_EQ(got->curves.size(), want.curves.size());
      for (size_t i = 0; i < std::min(want.curves.size(), got->curves.size()); ++i) {
        EXPECT_EQ(got->curves[i].kernel_index, want.curves[i].kernel_index);
        EXPECT_EQ(got->curves[i].points, want.curves[i].points);
        EXPECT_EQ(got->curves[i].note, want.curves[i].note);
        EXPECT_EQ(got->summaries[got->curves[i].summary].name,
                  want.summaries[want.curves[i].summary].name);
      }
    } else {
      EXPECT_LE(got->curves.size(), got->summaries.size());  // one per name at most
    }
    const ActiveWarpCurve* drawn = CurveToDraw(*got);
    const ActiveWarpCurve* wanted = CurveToDraw(want);
    EXPECT_EQ(drawn == nullptr, wanted == nullptr);
    if (wanted != nullptr && drawn != nullptr) {
      EXPECT_EQ(drawn->kernel_index, wanted->kernel_index);
    }
  }
  return want;
}

// How many of `report`'s kernel names have a launch with tail metrics.
size_t NamesWithMetrics(const TailReport& report) {
  size_t n = 0;
  for (const KernelTailSummary& s : report.summaries) n += s.launches_with_curve > 0;
  return n;
}

TEST(TailSweepTest, SmallCaseMatchesTheWholeTables) {
  EXPECT_EQ(NamesWithMetrics(ExpectSameAsWholeTables(MakeCase(400, 3), 0)), 5u);
  const TailReport top = ExpectSameAsWholeTables(MakeCase(400, 4), 2);
  EXPECT_EQ(top.summaries.size(), 2u);
}

// A name without a launch with tail metrics draws its first launch with a curve: with too
// few samples per launch for metrics, no name has one.
TEST(TailSweepTest, WithoutTailMetricsTheFirstCurveIsDrawn) {
  Case c = MakeCase(200, 5);
  for (KernelEvent& k : c.kernels) k.duration_ns = std::min<uint64_t>(k.duration_ns, 1500);
  const TailReport want = ExpectSameAsWholeTables(c, 0);
  EXPECT_EQ(NamesWithMetrics(want), 0u);
  EXPECT_NE(CurveToDraw(want), nullptr);
}

// Past the sort's 16 MiB: runs go to temporary files and merge.
TEST(TailSweepTest, SpilledCaseMatchesTheWholeTables) {
  EXPECT_EQ(NamesWithMetrics(ExpectSameAsWholeTables(MakeCase(120'000, 6), 0)), 5u);
}

}  // namespace
}  // namespace warpscope
