// Diff tests for `warpscope occupancy`: the synthetic PM scenario (tests/tail/pm_scenario.h)
// through the reader and the report, compared with tests/occupancy/golden.
#include "analyzers/lib/occupancy_report.h"

#include <cmath>
#include <string>

#include "analyzers/lib/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reader/trace_test_util.h"
#include "tests/tail/pm_scenario.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::warpscope::testing::CompareWithGolden;
using ::warpscope::testing::LoadScenario;

void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string problem = CompareWithGolden("occupancy/golden/" + name, actual);
  EXPECT_EQ(problem, "") << problem;
}

const OccupancyRow* Find(const OccupancyReport& r, const std::string& prefix) {
  for (const OccupancyRow& row : r.rows) {
    if (row.name.rfind(prefix, 0) == 0) return &row;
  }
  return nullptr;
}

TEST(OccupancyReportTest, ScenarioMatchesGolden) {
  TraceModel model = LoadScenario();
  auto report = BuildOccupancyReport(PmInputsOf(model), {});
  ASSERT_TRUE(report.ok()) << report.status();
  const OccupancyRow* gemm = Find(*report, "gemm_balanced");
  ASSERT_NE(gemm, nullptr);
  ASSERT_TRUE(gemm->theoretical.has_value());
  EXPECT_DOUBLE_EQ(gemm->theoretical->occupancy, 1.0);
  EXPECT_NEAR(gemm->achieved, 0.9, 0.01);  // designed at 90% of the GPU's warp slots
  const OccupancyRow* reduce = Find(*report, "reduce_imbalanced");
  ASSERT_NE(reduce, nullptr);
  EXPECT_DOUBLE_EQ(reduce->theoretical->occupancy, 0.25);
  EXPECT_EQ(reduce->theoretical->limiters & kLimitRegisters, kLimitRegisters);
  const OccupancyRow* tiny = Find(*report, "tiny_memset_like");
  ASSERT_NE(tiny, nullptr);
  EXPECT_EQ(tiny->samples, 1u);  // 3 us inside one 10 us sample
  ExpectGolden("scenario.txt", RenderOccupancyReport(*report, OutputFormat::kTable));
  ExpectGolden("scenario.csv", RenderOccupancyReport(*report, OutputFormat::kCsv));
  ExpectGolden("scenario.json", RenderOccupancyReport(*report, OutputFormat::kJson));
}

TEST(OccupancyReportTest, FilterTopAndNoPm) {
  TraceModel model = LoadScenario(/*with_pm=*/false);
  OccupancyReportOptions options;
  options.top = 1;
  auto report = BuildOccupancyReport(PmInputsOf(model), options);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->rows.size(), 1u);
  EXPECT_TRUE(std::isnan(report->rows[0].achieved));
  EXPECT_THAT(report->rows[0].achieved_reason, HasSubstr("WARPSCOPE_PM_SAMPLING=1"));
  ExpectGolden("scenario_no_pm.txt", RenderOccupancyReport(*report, OutputFormat::kTable));
  options.top = 0;
  options.kernel_regex = "smem";
  report = BuildOccupancyReport(PmInputsOf(model), options);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->rows.size(), 1u);
  EXPECT_EQ(report->rows[0].theoretical->limiters & kLimitSharedMemory, kLimitSharedMemory);
  options.kernel_regex = "[";
  EXPECT_FALSE(BuildOccupancyReport(PmInputsOf(model), options).ok());
}

}  // namespace
}  // namespace warpscope
