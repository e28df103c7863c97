// Diff tests: fixture traces through `info` and `summary` renderers, compared with golden
// text, CSV and JSON files.
#include <string>
#include <vector>

#include "analyzers/render/output.h"
#include "analyzers/analyses/summary.h"
#include "analyzers/analyses/info.h"
#include "analyzers/model/trace_model.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::warpscope::testing::CompareWithGolden;
using ::warpscope::testing::FixtureWire;
using ::warpscope::testing::WriteTempFile;

TraceModel Load(const std::string& wire) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(WriteTempFile(wire));
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

TraceModel LoadFixture(const std::string& name) {
  return Load(FixtureWire("synthetic/" + name + ".textproto"));
}

// The killed fixture, cut 3 bytes into its last packet as kill -9 would leave it.
TraceModel LoadCutShort() {
  std::string wire = FixtureWire("synthetic/killed.textproto");
  wire.resize(wire.size() - 3);
  return Load(wire);
}

const char* Extension(OutputFormat format) {
  switch (format) {
    case OutputFormat::kCsv:
      return "csv";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kTable:
      break;
  }
  return "txt";
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string problem = CompareWithGolden("summary/golden/" + name, actual);
  EXPECT_EQ(problem, "") << problem;
}

class InfoGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(InfoGoldenTest, MatchesGolden) {
  const std::string& name = GetParam();
  TraceModel model = name == "killed_cut" ? LoadCutShort() : LoadFixture(name);
  TraceInfoOptions options;
  options.display_name = name + ".wst";
  for (OutputFormat format : {OutputFormat::kTable, OutputFormat::kJson}) {
    ExpectGolden("info_" + name + "." + Extension(format), RenderReport(TraceInfoReport(model, options), format).value());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, InfoGoldenTest,
                         ::testing::Values("basic", "two_gpus", "killed", "killed_cut",
                                           "out_of_range", "stacks", "memory"));

struct SummaryCase {
  std::string golden;
  std::vector<std::string> fixtures;
  std::string sort = "total";
  int top = 0;
  std::string reports = "kernels,api,memory,nvtx,idle";
};

class SummaryGoldenTest : public ::testing::TestWithParam<SummaryCase> {};

TEST_P(SummaryGoldenTest, MatchesGolden) {
  const SummaryCase& c = GetParam();
  std::vector<TraceModel> models;
  std::vector<std::string> labels;
  for (const std::string& fixture : c.fixtures) {
    models.push_back(LoadFixture(fixture));
    labels.push_back(fixture + ".wst");
  }
  std::vector<const TraceModel*> pointers;
  for (const TraceModel& m : models) pointers.push_back(&m);
  SummaryOptions options;
  ASSERT_TRUE(ParseSummarySort(c.sort, &options).ok());
  ASSERT_TRUE(ParseSummaryReports(c.reports, &options).ok());
  options.top = c.top;
  const std::vector<TraceSummary> summaries = SummarizeTraces(pointers, labels, options);
  for (OutputFormat format : {OutputFormat::kTable, OutputFormat::kCsv, OutputFormat::kJson}) {
    ExpectGolden("summary_" + c.golden + "." + Extension(format),
                 RenderReport(SummaryReport(summaries, options), format).value());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, SummaryGoldenTest,
    ::testing::Values(SummaryCase{"basic", {"basic"}},
                      SummaryCase{"two_ranks", {"basic", "two_gpus"}},
                      SummaryCase{
                          "basic_by_name_top1_kernels_api", {"basic"}, "name", 1, "kernels,api"},
                      SummaryCase{"killed_by_count", {"killed"}, "count"},
                      SummaryCase{"out_of_range", {"out_of_range"}},
                      SummaryCase{"nvtx_gpu", {"nvtx_gpu"}, "total", 0, "nvtx,nvtx-kernels"},
                      SummaryCase{"nvtx_gpu_top2_by_count", {"nvtx_gpu"}, "count", 2,
                                  "nvtx,nvtx-kernels"},
                      SummaryCase{"nvtx_kernels_only", {"nvtx_kernels_only"}, "total", 0, "nvtx"},
                      SummaryCase{"nvtx_windows", {"nvtx_windows"}, "total", 0,
                                  "nvtx,nvtx-kernels"},
                      SummaryCase{"nvtx_two_traces", {"nvtx_gpu", "basic"}, "total", 0, "nvtx"},
                      SummaryCase{"stacks", {"stacks"}, "total", 0, "syncs,launch-sites"},
                      SummaryCase{"stacks_and_basic", {"stacks", "basic"}, "total", 0, "syncs"}),
    [](const ::testing::TestParamInfo<SummaryCase>& info) { return info.param.golden; });

TEST(DurationStatsTest, MatchesHandComputedFigures) {
  std::vector<uint64_t> d = {4, 1, 3, 2};
  DurationStats s = DurationStats::Of(d);
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.total_ns, 10u);
  EXPECT_EQ(s.min_ns, 1u);
  EXPECT_EQ(s.max_ns, 4u);
  EXPECT_DOUBLE_EQ(s.avg_ns, 2.5);
  EXPECT_DOUBLE_EQ(s.median_ns, 2.5);
  EXPECT_NEAR(s.stddev_ns, 1.2909944487, 1e-9);  // sample standard deviation
  std::vector<uint64_t> one = {7};
  EXPECT_DOUBLE_EQ(DurationStats::Of(one).stddev_ns, 0);
  std::vector<uint64_t> none;
  EXPECT_EQ(DurationStats::Of(none).count, 0u);
}

TEST(SummaryOptionsTest, RejectsUnknownKeysAndReports) {
  SummaryOptions options;
  EXPECT_FALSE(ParseSummarySort("fastest", &options).ok());
  EXPECT_FALSE(ParseSummaryReports("kernels,gpu", &options).ok());
  EXPECT_FALSE(ParseSummaryReports(",", &options).ok());
  EXPECT_TRUE(ParseSummaryReports("nvtx-kernels", &options).ok());
  EXPECT_TRUE(options.nvtx_kernels);
  EXPECT_FALSE(options.nvtx);
  EXPECT_TRUE(ParseSummaryReports("nvtx", &options).ok());
  EXPECT_TRUE(options.nvtx);
  EXPECT_FALSE(options.kernels);
}

TEST(GpuBusyTest, MergesOverlapsAndCountsGaps) {
  TraceModel m = Load(testing::TextprotoToWire(R"(
    packet { header { format_major: 1 } }
    packet { kernel { start_ns: 100 duration_ns: 100 } }
    packet { kernel { start_ns: 150 duration_ns: 100 stream_id: 2 } }
    packet { memcpy { start_ns: 300 duration_ns: 50 } }
    packet { memset { start_ns: 1000 duration_ns: 0 } }
    packet { end_of_trace {} }
  )"));
  TraceSummary s = SummarizeTrace(m, "x", {});
  ASSERT_EQ(s.devices.size(), 1u);
  ASSERT_TRUE(s.devices[0].has_busy);
  const GpuBusy& b = s.devices[0].busy;
  EXPECT_EQ(b.begin_ns, 100u);
  EXPECT_EQ(b.end_ns, 1000u);
  EXPECT_EQ(b.busy_ns, 200u);  // [100,250) + [300,350)
  EXPECT_EQ(b.idle_ns, 700u);
  EXPECT_EQ(b.gaps, 2u);
  EXPECT_EQ(b.longest_gap_ns, 650u);
}

}  // namespace
}  // namespace warpscope
