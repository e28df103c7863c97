// Diff tests for `warpscope tail`: the synthetic PM scenario (tests/tail/pm_scenario.h)
// written as a .wst file, loaded by the reader, rendered as text, CSV, JSON and SVG and
// compared with tests/tail/golden (WARPSCOPE_UPDATE_GOLDEN=1 rewrites them).
#include "analyzers/analyses/tail.h"
#include "analyzers/analyses/info.h"

#include <string>

#include "analyzers/measures/active_warps_svg.h"
#include "analyzers/render/svg.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"
#include "tests/tail/pm_scenario.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace ::warpscope::testing;  // NOLINT(build/namespaces): the test helpers.

// The report as the CLI renders it (text, CSV or JSON).
std::string Rendered(const TailReport& report, const TailReportOptions& options,
                     OutputFormat format) {
  return RenderReport(TailReportTables(report, options.instances, options.names), format).value();
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string problem = CompareWithGolden("tail/golden/" + name, actual);
  EXPECT_EQ(problem, "") << problem;
}

TEST(TailReportTest, ScenarioMatchesGolden) {
  TraceModel model = LoadScenario();
  const PmInputs in = PmInputsOf(model);
  TailReportOptions options;
  auto report = BuildTailReportFiltered(in, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_FALSE(report->summaries.empty());
  EXPECT_EQ(report->summaries[0].name, "reduce_imbalanced(float const*, int)");
  EXPECT_NEAR(report->summaries[0].tail_fraction, 0.6, 0.1);
  EXPECT_THAT(report->summaries[0].verdict, HasSubstr("load imbalance"));
  for (const KernelTailSummary& s : report->summaries) {
    if (s.name == "gemm_balanced(float*)") {
      EXPECT_EQ(s.verdict, "");
    }
  }
  ExpectGolden("scenario.txt", Rendered(*report, options, OutputFormat::kTable));
  ExpectGolden("scenario.csv", Rendered(*report, options, OutputFormat::kCsv));
  ExpectGolden("scenario.json", Rendered(*report, options, OutputFormat::kJson));
  options.instances = true;
  options.tail.points = 10;
  report = BuildTailReportFiltered(in, options);
  ASSERT_TRUE(report.ok());
  ExpectGolden("scenario_instances.txt",
               Rendered(*report, options, OutputFormat::kTable));
  ExpectGolden("scenario_instances.csv",
               Rendered(*report, options, OutputFormat::kCsv));
  ExpectGolden("scenario_instances.json",
               Rendered(*report, options, OutputFormat::kJson));
  const ActiveWarpCurve* curve = CurveToDraw(*report);
  ASSERT_NE(curve, nullptr);
  EXPECT_EQ(in.kernels[curve->kernel_index].name, "reduce_imbalanced(float const*, int)");
  ExpectGolden("scenario_worst.svg", TailSvg(*curve, *report, in.devices));
}

// Kernel edges (pm_scenario.h, EdgeScenarioKernels): samples shared with neighbours are
// counted and marked in every format, steady and peak stay within the theoretical limit, and
// the SVG draws the shared samples and the limit.
TEST(TailReportTest, EdgeScenarioMarksSharedSamples) {
  TraceModel model = LoadScenario(true, ::warpscope::testing::EdgeScenarioKernels());
  const PmInputs in = PmInputsOf(model);
  TailReportOptions options;
  options.instances = true;
  options.tail.points = 10;
  auto report = BuildTailReportFiltered(in, options);
  ASSERT_TRUE(report.ok()) << report.status();
  const ActiveWarpCurve* regs = nullptr;
  const ActiveWarpCurve* tiny = nullptr;
  for (const ActiveWarpCurve& c : report->curves) {
    if (in.kernels[c.kernel_index].name == "regs_limited(float*)") regs = &c;
    if (in.kernels[c.kernel_index].name == "tiny_between(int*)") tiny = &c;
  }
  ASSERT_NE(regs, nullptr);
  ASSERT_NE(tiny, nullptr);
  EXPECT_DOUBLE_EQ(regs->limit_warps, 4224);
  EXPECT_EQ(regs->shared_samples, 2u);  // the first (heavy_prev) and the last (heavy_next)
  // Three samples above 4,224, capped: the two shared edges (the heavy kernels' warps) and
  // the other process's 10 us, the only one of its own, which therefore sets the peak.
  EXPECT_EQ(regs->above_limit, 3u);
  EXPECT_DOUBLE_EQ(regs->peak, 4224);
  EXPECT_NEAR(regs->steady, 0.48 * 132 * 64, 1e-6);
  EXPECT_FALSE(regs->levels_from_shared);
  EXPECT_TRUE(tiny->levels_from_shared);
  const std::string text = Rendered(*report, options, OutputFormat::kTable);
  EXPECT_THAT(text, HasSubstr("* steady/peak of a launch without PM samples of its own"));
  ExpectGolden("edges_instances.txt", text);
  ExpectGolden("edges_instances.csv", Rendered(*report, options, OutputFormat::kCsv));
  ExpectGolden("edges_instances.json",
               Rendered(*report, options, OutputFormat::kJson));
  const std::string svg = TailSvg(*regs, *report, in.devices);
  EXPECT_THAT(svg, HasSubstr("PM sample shared with other kernels"));
  EXPECT_THAT(svg, HasSubstr("2 shared with other kernels (orange, not in steady/peak)"));
  EXPECT_THAT(svg, HasSubstr("theoretical limit 4224"));
  EXPECT_THAT(svg, HasSubstr(">capped</text>"));
  ExpectGolden("edges_regs_limited.svg", svg);
}

TEST(TailReportTest, KernelFilterAndBalancedSvg) {
  TraceModel model = LoadScenario();
  const PmInputs in = PmInputsOf(model);
  TailReportOptions options;
  options.kernel_regex = "^gemm";
  auto report = BuildTailReportFiltered(in, options);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->summaries.size(), 1u);
  EXPECT_EQ(report->summaries[0].launches, 2u);
  const ActiveWarpCurve* curve = CurveToDraw(*report);
  ASSERT_NE(curve, nullptr);
  const std::string svg = TailSvg(*curve, *report, in.devices);
  EXPECT_THAT(svg, HasSubstr("no material tail (balanced)"));
  ExpectGolden("scenario_balanced.svg", svg);
}

TEST(TailReportTest, SvgEscapesTemplateNames) {
  EXPECT_EQ(SvgEscape("void k<float, 4>(T const&) \"x\" 'y'"),
            "void k&lt;float, 4&gt;(T const&amp;) &quot;x&quot; &apos;y&apos;");
  ActiveWarpCurve curve;
  curve.duration_ns = 1000;
  curve.segments = {{0, 1000, 10, false}};
  curve.peak = curve.steady = 10;
  curve.has_tail_metrics = true;
  const std::string svg = RenderActiveWarpSvg(curve, "gemm<half, 128>", 0);
  EXPECT_THAT(svg, HasSubstr("gemm&lt;half, 128&gt;"));
  EXPECT_THAT(svg, ::testing::Not(HasSubstr("<half")));
}

// Found by the fuzzer: a curve a few hundred orders of magnitude below one warp drew grid
// lines until memory ran out.
TEST(TailReportTest, SvgOfATinyCurveHasAFewGridLines) {
  ActiveWarpCurve curve;
  curve.duration_ns = 1000;
  curve.segments = {{0, 1000, 1e-300, false}};
  curve.peak = curve.steady = 1e-300;
  curve.has_tail_metrics = true;
  const std::string svg = RenderActiveWarpSvg(curve, "k", 0);
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  EXPECT_LT(svg.size(), 20000u);
}

TEST(TailReportTest, BadFlagsAreErrors) {
  TraceModel model = LoadScenario();
  TailReportOptions options;
  options.kernel_regex = "(";
  EXPECT_FALSE(BuildTailReportFiltered(PmInputsOf(model), options).ok());
  options.kernel_regex = "";
  options.tail.points = 1;
  EXPECT_FALSE(BuildTailReportFiltered(PmInputsOf(model), options).ok());
}

TEST(TailReportTest, TraceWithoutPmSamplesSaysHowToGetThem) {
  TraceModel model = LoadScenario(/*with_pm=*/false);
  const PmInputs in = PmInputsOf(model);
  TailReportOptions options;
  auto report = BuildTailReportFiltered(in, options);
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(Rendered(*report, options, OutputFormat::kTable),
              HasSubstr("record with `warpscope record --pm-sampling`"));
  EXPECT_EQ(CurveToDraw(*report), nullptr);
}

TEST(TailReportTest, TextNotesUseShortNamesAndStopAfterTwelve) {
  // A PyTorch trace: a hundred kernels too short for the interval, with names of hundreds of
  // characters. The text table's notes stay readable; every reason is in --instances.
  TailReport report;
  const std::string long_name = "void at::native::elementwise_kernel<" + std::string(300, 'x') + ">";
  for (int i = 0; i < 15; ++i) {
    KernelTailSummary s;
    s.name = long_name + std::to_string(i);
    s.launches = 1;
    s.note = "no PM samples overlap this kernel";
    report.summaries.push_back(s);
  }
  const std::string text = Rendered(report, TailReportOptions{}, OutputFormat::kTable);
  EXPECT_THAT(text, HasSubstr("(12) void at::native::elementwise_kernel<xxx"));
  EXPECT_THAT(text, Not(HasSubstr("(13) ")));
  EXPECT_THAT(text, HasSubstr("... and 3 more kernels without tail metrics"));
  EXPECT_THAT(text, Not(HasSubstr(std::string(100, 'x'))));  // names cut at 80 characters
}

TEST(TraceInfoPmTest, InfoSummarizesPmSampling) {
  TraceModel model = LoadScenario(/*with_pm=*/true);
  const std::string text = RenderReport(TraceInfoReport(model), OutputFormat::kTable).value();
  // The scenario samples every 10 us from 0 to 5.5 ms: 550 samples with 4 metrics.
  EXPECT_THAT(text, HasSubstr("pm sampling\n  device 0: 550 samples every 10.00 us (4 metrics), "
                              "covering 5.50 ms\n"));
  EXPECT_THAT(text, HasSubstr("gaps the recorder counted: 0 ns; hardware buffer overflows: 0"));
  // The samples cover every kernel: no stretch without samples, no low-coverage line.
  EXPECT_THAT(text, HasSubstr("  kernel time sampled: 100.0% (4.40 ms of 4.40 ms), 6 of 6 "
                              "launches\n"));
  EXPECT_THAT(text, Not(HasSubstr("kernel work without samples")));
  EXPECT_THAT(text, Not(HasSubstr("LOW COVERAGE")));
  const std::string json = RenderReport(TraceInfoReport(model), OutputFormat::kJson).value();
  EXPECT_THAT(json, HasSubstr("\"pm_metric_sets\":[{\"id\":"));
  EXPECT_THAT(json, HasSubstr("\"samples\":550,"));
  TraceModel without = LoadScenario(/*with_pm=*/false);
  const Report report = TraceInfoReport(without);
  EXPECT_THAT(RenderReport(report, OutputFormat::kTable).value(), Not(HasSubstr("pm sampling")));
  EXPECT_THAT(RenderReport(report, OutputFormat::kJson).value(),
              HasSubstr("\"pm_metric_sets\":[],"));
}

// tests/data/synthetic/out_of_range.textproto: a kernel whose end overflows and PM samples
// with NaN or an overflowing end are left out, with a note; the rest is analysed as usual.
TEST(TailReportTest, OutOfRangeValuesAreLeftOutWithAReason) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(WriteTempFile(FixtureWire("synthetic/out_of_range.textproto")));
  ASSERT_TRUE(model.ok()) << model.status();
  const PmInputs in = PmInputsOf(*model);
  TailReportOptions options;
  options.instances = true;
  auto report = BuildTailReportFiltered(in, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->summaries.size(), 5u);
  for (const KernelTailSummary& s : report->summaries) {
    SCOPED_TRACE(s.name);
    if (s.name == "end_overflow(float*)") {
      EXPECT_EQ(s.launches_with_curve, 0u);
      EXPECT_EQ(s.note, "the kernel's start_ns + duration_ns overflows 64 bits (a corrupt event)");
    } else if (s.name == "fine(float*)") {
      // The infinite sample in its middle would have pushed the peak to the GPU's 8448 warps.
      EXPECT_EQ(s.launches_with_curve, 1u);
      EXPECT_DOUBLE_EQ(s.peak, 6336);
      EXPECT_DOUBLE_EQ(s.steady, 6336);
    }
  }
  ExpectGolden("out_of_range.txt", Rendered(*report, options, OutputFormat::kTable));
}

}  // namespace
}  // namespace warpscope
