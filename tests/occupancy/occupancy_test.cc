// Diff tests for `warpscope occupancy`: the synthetic PM scenario (tests/tail/pm_scenario.h)
// through the reader and the report, compared with tests/occupancy/golden.
#include "analyzers/analyses/occupancy.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"
#include "tests/tail/pm_scenario.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using namespace ::warpscope::testing;  // NOLINT(build/namespaces): the test helpers.

void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string problem = CompareWithGolden("occupancy/golden/" + name, actual);
  EXPECT_EQ(problem, "") << problem;
}

// The report as the CLI renders it.
std::string Rendered(const OccupancyReport& report, OutputFormat format) {
  return RenderReport(OccupancyReportTables(report), format).value();
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
  ExpectGolden("scenario.txt", Rendered(*report, OutputFormat::kTable));
  ExpectGolden("scenario.csv", Rendered(*report, OutputFormat::kCsv));
  ExpectGolden("scenario.json", Rendered(*report, OutputFormat::kJson));
}

// Kernel edges (pm_scenario.h, EdgeScenarioKernels): the register-limited kernel's achieved
// occupancy comes from its own samples (not the heavy neighbours' in its first and last), the
// other process's sample is capped and counted, and the 3 us kernel with only shared samples
// is marked.
TEST(OccupancyReportTest, EdgeScenarioMarksSharedSamples) {
  TraceModel model = LoadScenario(true, ::warpscope::testing::EdgeScenarioKernels());
  auto report = BuildOccupancyReport(PmInputsOf(model), {});
  ASSERT_TRUE(report.ok()) << report.status();
  const OccupancyRow* regs = Find(*report, "regs_limited");
  ASSERT_NE(regs, nullptr);
  EXPECT_DOUBLE_EQ(regs->theoretical->occupancy, 0.5);
  EXPECT_EQ(regs->shared_samples, 2u);
  EXPECT_EQ(regs->launches_from_shared, 0u);
  EXPECT_EQ(regs->above_limit, 1u);
  EXPECT_NEAR(regs->achieved, 0.48, 1e-3);  // one capped sample of 38: 0.48 + 0.02 / 38
  EXPECT_LE(regs->achieved, 0.5);
  const OccupancyRow* tiny = Find(*report, "tiny_between");
  ASSERT_NE(tiny, nullptr);
  EXPECT_EQ(tiny->launches_from_shared, 1u);
  // The bounds hold each kernel's designed level: narrow where the kernel has samples of its
  // own, [0, 100%] for the 3 us kernel seen only in a sample it shared, which says so.
  for (const auto& [prefix, designed] :
       std::vector<std::pair<std::string, double>>{{"heavy_prev", 0.95},
                                                   {"heavy_next", 0.95},
                                                   {"regs_limited", 0.48},
                                                   {"tiny_between", 0.02}}) {
    const OccupancyRow* row = Find(*report, prefix);
    ASSERT_NE(row, nullptr) << prefix;
    EXPECT_LE(row->achieved_low, designed + 1e-3) << prefix;
    EXPECT_GE(row->achieved_high, designed - 1e-3) << prefix;
    EXPECT_LE(row->achieved_low, row->achieved);
    EXPECT_GE(row->achieved_high, row->achieved);
  }
  EXPECT_LT(regs->achieved_high - regs->achieved_low, 0.02);
  EXPECT_EQ(regs->too_few, "");
  EXPECT_THAT(tiny->too_few, HasSubstr("achieved lies between 0.0% and 100.0%"));
  const std::string text = Rendered(*report, OutputFormat::kTable);
  EXPECT_THAT(text, HasSubstr("* measured only on PM samples shared with other kernels"));
  ExpectGolden("edges.txt", text);
  ExpectGolden("edges.csv", Rendered(*report, OutputFormat::kCsv));
  ExpectGolden("edges.json", Rendered(*report, OutputFormat::kJson));
}

TEST(OccupancyReportTest, FilterTopAndNoPm) {
  TraceModel model = LoadScenario(/*with_pm=*/false);
  OccupancyReportOptions options;
  options.top = 1;
  auto report = BuildOccupancyReport(PmInputsOf(model), options);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->rows.size(), 1u);
  EXPECT_TRUE(std::isnan(report->rows[0].achieved));
  EXPECT_THAT(report->rows[0].achieved_reason, HasSubstr("record with --pm-sampling"));
  ExpectGolden("scenario_no_pm.txt", Rendered(*report, OutputFormat::kTable));
  options.top = 0;
  options.kernel_regex = "smem";
  report = BuildOccupancyReport(PmInputsOf(model), options);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->rows.size(), 1u);
  EXPECT_EQ(report->rows[0].theoretical->limiters & kLimitSharedMemory, kLimitSharedMemory);
  options.kernel_regex = "[";
  EXPECT_FALSE(BuildOccupancyReport(PmInputsOf(model), options).ok());
}

// tests/data/synthetic/out_of_range.textproto: values no GPU has must not reach CUDA's
// occupancy calculator (it computes in int); the rows say what is wrong instead.
TEST(OccupancyReportTest, OutOfRangeValuesAreLeftOutWithAReason) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(WriteTempFile(FixtureWire("synthetic/out_of_range.textproto")));
  ASSERT_TRUE(model.ok()) << model.status();
  auto report = BuildOccupancyReport(PmInputsOf(*model), {});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->rows.size(), 5u);

  const OccupancyRow* regs = Find(*report, "regs_overflow");
  ASSERT_NE(regs, nullptr);
  EXPECT_FALSE(regs->theoretical.has_value());
  EXPECT_EQ(regs->theoretical_error,
            "launch config 1 is unusable in the trace: registers_per_thread 2147483647 is out of "
            "range (at most 1024)");
  EXPECT_NEAR(regs->achieved, 0.75, 1e-9);  // the device is fine: 48 of 64 warps per SM

  const OccupancyRow* block = Find(*report, "block_overflow");
  ASSERT_NE(block, nullptr);
  EXPECT_FALSE(block->theoretical.has_value());
  EXPECT_THAT(block->theoretical_error,
              HasSubstr("threads per block (block_x * block_y * block_z) 67108864 is out of "
                        "range (at most 65536)"));

  const OccupancyRow* device = Find(*report, "on_corrupt_device");
  ASSERT_NE(device, nullptr);
  EXPECT_FALSE(device->theoretical.has_value());
  EXPECT_EQ(device->theoretical_error,
            "device 1 is unusable in the trace: max_warps_per_sm 2147483647 is out of range (at "
            "most 4096)");
  EXPECT_TRUE(std::isnan(device->achieved));

  const OccupancyRow* end = Find(*report, "end_overflow");
  ASSERT_NE(end, nullptr);
  EXPECT_TRUE(end->theoretical.has_value());
  EXPECT_TRUE(std::isnan(end->achieved));
  EXPECT_EQ(end->achieved_reason,
            "the kernel's start_ns + duration_ns overflows 64 bits (a corrupt event)");

  const OccupancyRow* fine = Find(*report, "fine");
  ASSERT_NE(fine, nullptr);
  EXPECT_DOUBLE_EQ(fine->theoretical->occupancy, 1.0);
  EXPECT_NEAR(fine->achieved, 0.75, 1e-9);  // the NaN sample after it is skipped
  ExpectGolden("out_of_range.txt", Rendered(*report, OutputFormat::kTable));
  ExpectGolden("out_of_range.json", Rendered(*report, OutputFormat::kJson));
}

// The bundled H200 recording (examples/traces/cuda13.0_sm90/pipeline_pm.wst, PM samples every
// 20 us with gr__cycles_elapsed.max): per active cycle as before, per elapsed cycle beside it
// (lower: SMs idle at launch edges and in the imbalanced kernel's tail), and bounds that weigh
// the unseen edges by the active cycles they can have held.
TEST(OccupancyReportTest, RecordedPipelineTraceGivesBothFiguresAndCycleBounds) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(SourceDir() + "/examples/traces/cuda13.0_sm90/pipeline_pm.wst");
  ASSERT_TRUE(model.ok()) << model.status();
  auto report = BuildOccupancyReport(PmInputsOf(*model), {});
  ASSERT_TRUE(report.ok()) << report.status();
  struct Expected {
    const char* prefix;
    double achieved, low, high, elapsed, elapsed_low, elapsed_high;
  };
  // Before: 97.01 [94.25, 97.10], 94.15 [90.00, 94.40], 47.90 [43.71, 48.08] (time shares).
  for (const Expected& e :
       std::vector<Expected>{{"scale_balanced", 97.01, 94.32, 97.09, 96.86, 94.11, 96.95},
                             {"reduce_imbalanced", 94.15, 89.23, 94.45, 78.70, 75.24, 79.64},
                             {"mix_register_heavy", 47.90, 43.72, 48.08, 47.85, 43.66, 48.04}}) {
    SCOPED_TRACE(e.prefix);
    const OccupancyRow* row = Find(*report, e.prefix);
    ASSERT_NE(row, nullptr);
    EXPECT_FALSE(row->unseen_by_time);
    EXPECT_NEAR(100 * row->achieved, e.achieved, 0.005);
    EXPECT_NEAR(100 * row->achieved_low, e.low, 0.005);
    EXPECT_NEAR(100 * row->achieved_high, e.high, 0.005);
    EXPECT_NEAR(100 * row->achieved_elapsed, e.elapsed, 0.005);
    EXPECT_NEAR(100 * row->achieved_elapsed_low, e.elapsed_low, 0.005);
    EXPECT_NEAR(100 * row->achieved_elapsed_high, e.elapsed_high, 0.005);
    EXPECT_LT(row->achieved_elapsed, row->achieved);
    EXPECT_LE(row->achieved_low, row->achieved);
    EXPECT_GE(row->achieved_high, row->achieved);
    EXPECT_LE(row->achieved_elapsed_low, row->achieved_elapsed);
    EXPECT_GE(row->achieved_elapsed_high, row->achieved_elapsed);
  }
}

}  // namespace
}  // namespace warpscope
