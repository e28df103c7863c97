// `warpscope advise` on synthetic traces with one problem each (advise_traces.h): the problem
// must be the top finding, with the cost it was designed to have; without it (the fixed
// program, or a program with no problem) there must be no high finding.
#include "analyzers/analyses/advise/advise.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/advise/advise_timeline.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/advise/advise_test_util.h"
#include "tests/advise/advise_traces.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using advise_testing::Advise;
using advise_testing::DesignedCost;
using advise_testing::FindRule;
using advise_testing::Problem;
using advise_testing::WriteProblemTrace;
using ::testing::HasSubstr;

TraceModel LoadProblem(Problem problem, bool fixed) {
  static int counter = 0;
  const std::string path =
      absl::StrCat(testing::MakeTempDir(), "/problem", ++counter, fixed ? "_fixed" : "", ".wst");
  const std::string error = WriteProblemTrace(problem, fixed, path);
  EXPECT_EQ(error, "");
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

bool HasHighFinding(const AdviseReport& report) {
  for (const AdviseFinding& f : report.findings) {
    if (f.severity == AdviseSeverity::kHigh) return true;
  }
  return false;
}

struct Case {
  Problem problem;
  std::string_view rule;
  double tolerance;  // relative, on the designed cost (kernel lengths vary by up to 3%)
  std::string_view nvtx_path;
  std::string_view api_call;
};

class ProblemTest : public ::testing::TestWithParam<Case> {};

TEST_P(ProblemTest, TopFindingWithTheDesignedCost) {
  const Case& c = GetParam();
  const TraceModel model = LoadProblem(c.problem, false);
  const AdviseReport report = Advise(model);
  ASSERT_FALSE(report.findings.empty());
  const AdviseFinding& top = report.findings.front();
  EXPECT_EQ(top.rule, c.rule) << report.headline;
  const double designed = static_cast<double>(DesignedCost(c.problem));
  EXPECT_NEAR(static_cast<double>(top.cost_ns), designed, c.tolerance * designed);
  EXPECT_EQ(top.severity, AdviseSeverity::kHigh);
  EXPECT_EQ(top.nvtx_path, c.nvtx_path);
  EXPECT_EQ(top.api_call, c.api_call);
  EXPECT_NEAR(top.cost_fraction,
              static_cast<double>(top.cost_ns) / static_cast<double>(report.gpu_span_ns), 1e-9);
  EXPECT_LE(report.gpu_span_ns, model.span.duration_ns());
  EXPECT_FALSE(top.evidence.empty());
  EXPECT_FALSE(top.fix.empty());
  EXPECT_GT(top.worst_end_ns, top.worst_begin_ns);
  EXPECT_THAT(report.headline, HasSubstr(absl::StrCat("1) ", std::string(c.rule))));
}

TEST_P(ProblemTest, FixedProgramHasNoFindingOfThatRuleWorthMentioning) {
  const Case& c = GetParam();
  const TraceModel problem_model = LoadProblem(c.problem, false);
  const TraceModel fixed_model = LoadProblem(c.problem, true);
  const AdviseReport problem = Advise(problem_model);
  const AdviseReport fixed = Advise(fixed_model);
  const AdviseFinding* before = FindRule(problem, c.rule);
  ASSERT_NE(before, nullptr);
  const AdviseFinding* after = FindRule(fixed, c.rule);
  if (after != nullptr) {
    EXPECT_LT(after->cost_ns, before->cost_ns / 10) << after->title;
    EXPECT_NE(after->severity, AdviseSeverity::kHigh) << after->title;
  }
  EXPECT_LT(fixed_model.span.duration_ns(), problem_model.span.duration_ns());
}

INSTANTIATE_TEST_SUITE_P(
    Problems, ProblemTest,
    ::testing::Values(Case{Problem::kBlockingRead, kRuleBlockingRead, 0.01, "step", "cudaMemcpy"},
                      Case{Problem::kSync, kRuleSync, 0.01, "step", "cudaStreamSynchronize"},
                      Case{Problem::kPageable, kRulePageable, 0.01, "step", "cudaMemcpy"},
                      Case{Problem::kHostRange, kRuleHostRange, 0.05, "data_loader", ""},
                      Case{Problem::kLaunchBound, kRuleLaunchBound, 0.02, "tiny_loop", ""}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name(info.param.rule);
      for (char& ch : name) ch = ch == '-' ? '_' : ch;
      return name;
    });

// The copies could have run under the kernels: the cost is the kernel time (less than the
// copy time), all of which ran with no copy beside it.
TEST(AdviseSerialCopyTest, CostIsTheKernelTimeTheCopiesCouldHideUnder) {
  const TraceModel model = LoadProblem(Problem::kSerialCopy, false);
  uint64_t kernel_ns = 0;
  for (const KernelEvent& k : model.kernels) kernel_ns += k.duration_ns;
  const AdviseReport report = Advise(model);
  ASSERT_FALSE(report.findings.empty());
  const AdviseFinding& top = report.findings.front();
  EXPECT_EQ(top.rule, kRuleNoOverlap);
  EXPECT_EQ(top.cost_ns, kernel_ns);
  EXPECT_EQ(top.occurrences, 30u);
  EXPECT_EQ(top.stream, "7");
  EXPECT_THAT(top.title, HasSubstr("on the stream the kernels use"));

  const AdviseReport fixed = Advise(LoadProblem(Problem::kSerialCopy, true));
  const AdviseFinding* after = FindRule(fixed, kRuleNoOverlap);
  ASSERT_NE(after, nullptr);  // the first copy still runs alone
  EXPECT_LT(after->cost_ns, kernel_ns / 20);
}

// A wait and a host range without GPU work in the same gap: the range takes the gap when it
// covers at least half of it, else the wait does.
TEST(AdviseTest, HostRangeCoveringMostOfAGapTakesItFromTheWait) {
  for (const uint64_t loader_ns : {uint64_t{1'000'000}, uint64_t{20'000}}) {
    SCOPED_TRACE(loader_ns);
    const std::string path = testing::MakeTempDir() + "/mixed.wst";
    fixtures::SyntheticTraceOptions options;
    options.pm_interval_ns = 0;
    std::string error;
    auto b = fixtures::SyntheticTraceBuilder::Create(path, options, &error);
    ASSERT_NE(b, nullptr) << error;
    for (int s = 0; s < 10; ++s) {
      fixtures::KernelSpec spec;
      spec.name = "compute";
      spec.duration_ns = 500'000;
      b->LaunchKernel(spec);
      b->DeviceSynchronize();
      b->PushRange("data_loader");
      b->HostIdle(loader_ns);
      b->PopRange();
      b->HostIdle(100'000);
    }
    ASSERT_TRUE(b->Finish());
    absl::StatusOr<TraceModel> model = TraceModel::Load(path);
    ASSERT_TRUE(model.ok()) << model.status();
    const AdviseReport report = Advise(*model);
    ASSERT_FALSE(report.findings.empty());
    const bool loader_wins = loader_ns > 100'000;
    EXPECT_EQ(report.findings.front().rule, loader_wins ? kRuleHostRange : kRuleSync);
    EXPECT_EQ(FindRule(report, loader_wins ? kRuleSync : kRuleHostRange), nullptr);
    EXPECT_EQ(report.findings.front().occurrences, 9u);
  }
}

TEST(AdviseTest, ProgramWithoutProblemHasNoHighFinding) {
  const AdviseReport report = Advise(LoadProblem(Problem::kNone, false));
  EXPECT_FALSE(HasHighFinding(report))
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_GT(report.busy_fraction, 0.95);
  EXPECT_EQ(report.gpu_idle_ns, 0u);
}

TEST(AdviseTest, GapCostsNeverExceedTheIdleTime) {
  for (Problem p :
       {Problem::kBlockingRead, Problem::kSync, Problem::kHostRange, Problem::kLaunchBound}) {
    const AdviseReport report = Advise(LoadProblem(p, false));
    uint64_t gap_costs = 0;
    for (const AdviseFinding& f : report.findings) {
      if (f.rule == kRuleSync || f.rule == kRuleBlockingRead || f.rule == kRuleBlockingCopy ||
          f.rule == kRuleHostRange || f.rule == kRuleLaunchBound) {
        gap_costs += f.cost_ns;
      }
    }
    EXPECT_LE(report.idle_attributed_ns, report.gpu_idle_ns);
    EXPECT_LE(gap_costs, report.idle_attributed_ns);
    EXPECT_GT(report.idle_attributed_ns, report.gpu_idle_ns * 9 / 10);
  }
}

TEST(AdviseTest, PageableCopyFindingMeasuresPinnedBandwidthInTheTrace) {
  const AdviseFinding* f = FindRule(Advise(LoadProblem(Problem::kPageable, false)), kRulePageable);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->occurrences, 20u);
  EXPECT_THAT(f->evidence, HasSubstr("the fastest pinned copy in the trace"));
  EXPECT_THAT(f->evidence, HasSubstr("20.0 GB/s"));
}

TEST(AdviseTest, TopAndDeviceOptions) {
  const TraceModel model = LoadProblem(Problem::kPageable, false);
  AdviseOptions options;
  options.top = 1;
  EXPECT_EQ(Advise(model, options).findings.size(), 1u);
  options = {};
  options.device = 3;  // no such device
  const AdviseReport none = Advise(model, options);
  EXPECT_TRUE(none.findings.empty());
  EXPECT_EQ(none.gpu_busy_ns, 0u);
  EXPECT_THAT(none.notes, ::testing::Contains(HasSubstr("no GPU work")));
}

TEST(AdviseTest, TraceWithoutSamplesSaysWhichRulesWereSkipped) {
  const AdviseReport report = Advise(LoadProblem(Problem::kNone, false));
  EXPECT_THAT(report.notes, ::testing::Contains(HasSubstr("no PM samples")));
  EXPECT_THAT(report.notes, ::testing::Contains(HasSubstr("no PC samples")));
}

TEST(AdviseRenderTest, FormatsCarryTheFindings) {
  const AdviseReport report = Advise(LoadProblem(Problem::kBlockingRead, false));
  const std::string table = RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_THAT(table, HasSubstr("#1 [high] blocking-read"));
  EXPECT_THAT(table, HasSubstr("where:    nvtx step | api cudaMemcpy"));
  const std::string csv =
      RenderReport(AdviseReportTables(report), OutputFormat::kCsv, "findings").value();
  // One table gives CSV and JSON their columns: `order` is the finding's place, `rank` the
  // job rank it is about (-1 for one trace).
  EXPECT_THAT(csv, ::testing::StartsWith("order,rule,severity,cost_ns,cost_percent,"));
  // `where`: the call site, empty for a trace recorded without call stacks.
  // With steps, a steady finding's cost per steady step and its share of the mean step.
  EXPECT_THAT(csv, HasSubstr(",os_tid,thread_name,title,evidence,fix,worst_begin_ns,"
                             "worst_end_ns,rank,one_time,where,host_blocked_ns,"
                             "host_blocked_calls,host_blocked_gpu_idle_ns,cost_per_step_ns,"
                             "step_percent\n1,blocking-read,high,"));
  // Without stacks no finding names a line, nor the host time blocked there.
  EXPECT_THAT(csv, HasSubstr(absl::StrCat(",-1,false,,0,0,0,",
                                          report.findings[0].cost_per_step_ns, ",")));
  const std::string json = RenderReport(AdviseReportTables(report), OutputFormat::kJson).value();
  EXPECT_THAT(json, HasSubstr("\"findings\":[{\"order\":1,\"rule\":\"blocking-read\""));
  EXPECT_THAT(json, HasSubstr("\"rank\":-1,\"one_time\":false,\"where\":\"\","));
  EXPECT_THAT(json, HasSubstr("\"host_blocked_gpu_idle_ns\":0,\"cost_per_step_ns\":"));
  EXPECT_THAT(json, HasSubstr(absl::StrCat("\"gpu_idle_ns\":", report.gpu_idle_ns)));
}

TEST(AdviseRenderTest, HtmlIsOnePageWithFindingsAndTimeline) {
  const TraceModel model = LoadProblem(Problem::kSync, false);
  const std::string html = RenderAdviseHtml(Advise(model), model);
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("class=\"finding\""));
  EXPECT_THAT(html, HasSubstr("<svg"));
  EXPECT_THAT(html, HasSubstr("class=\"gap\""));
  EXPECT_THAT(html, HasSubstr("cudaStreamSynchronize"));
  EXPECT_THAT(html, ::testing::Not(HasSubstr("<script")));
  EXPECT_THAT(html, ::testing::Not(HasSubstr("src=")));  // nothing to fetch
  EXPECT_THAT(html, ::testing::Not(HasSubstr("href=")));
}

TEST(AdviseTest, CostsFromFloatingPointSaturateInsteadOfOverflowing) {
  EXPECT_EQ(NsFromDouble(1234.9), 1234u);
  EXPECT_EQ(NsFromDouble(-5), 0u);
  EXPECT_EQ(NsFromDouble(std::nan("")), 0u);
  EXPECT_EQ(NsFromDouble(7.22867e+225), UINT64_MAX);  // a tail cost from a damaged trace
  EXPECT_EQ(NsFromDouble(std::numeric_limits<double>::infinity()), UINT64_MAX);
}

}  // namespace
}  // namespace warpscope

namespace warpscope {
namespace {

// A trace with call stacks (tests/data/synthetic/stacks.textproto): each wait finding names
// the program's line in `where` and in its title, and the CSV carries it.
TEST(AdviseWhereTest, WaitFindingsNameTheirLine) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(
      testing::WriteTempFile(testing::FixtureWire("synthetic/stacks.textproto")));
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = BuildAdviseReport(*model, "stacks.wst", {});
  const AdviseFinding* read = nullptr;
  const AdviseFinding* sync = nullptr;
  for (const AdviseFinding& f : report.findings) {
    if (f.rule == kRuleBlockingRead) read = &f;
    if (f.rule == kRuleSync) sync = &f;
  }
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->where, "train.py:57 train_step");  // torch's Tensor.item skipped
  EXPECT_THAT(read->title, HasSubstr("(cudaMemcpyAsync) at train.py:57 train_step"));
  EXPECT_EQ(read->cost_ns, 11000u);  // relu ends at 27 us; the read returns at 30, the next gemm starts at 40 us
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->where, "train.py:61 train_step");
  const std::string text = RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_THAT(text, HasSubstr("where:    line train.py:57 train_step | api cudaMemcpyAsync"));
  const std::string csv = RenderReport(AdviseReportTables(report), OutputFormat::kCsv).value();
  EXPECT_THAT(csv, HasSubstr(",one_time,where,host_blocked_ns,host_blocked_calls,"
                             "host_blocked_gpu_idle_ns,cost_per_step_ns,step_percent\n"));
  // The host blocked 26.5 us in the two reads at line 57 (5-30 and 62-63.5 us); no steps: no
  // cost per step.
  EXPECT_THAT(csv, HasSubstr(",false,train.py:57 train_step,26500,2,"));
}

}  // namespace
}  // namespace warpscope
