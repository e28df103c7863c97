// `warpscope advise` on synthetic traces with one problem each (advise_traces.h): the problem
// must be the top finding, with the cost it was designed to have; without it (the fixed
// program, or a program with no problem) there must be no high finding.
#include "analyzers/analyses/advise.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/advise_timeline.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/advise/advise_traces.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/reader/cli_test_util.h"

namespace warpscope {
namespace {

using advise_testing::DesignedCost;
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

AdviseReport Advise(const TraceModel& model, const AdviseOptions& options = {}) {
  return BuildAdviseReport(model, "t.wst", options);
}

const AdviseFinding* FindRule(const AdviseReport& report, std::string_view rule) {
  for (const AdviseFinding& f : report.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
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

AdviseReport AdviseWritten(const std::function<void(fixtures::SyntheticTraceBuilder&)>& write) {
  const std::string path = testing::MakeTempDir() + "/written.wst";
  fixtures::SyntheticTraceOptions options;
  options.pm_interval_ns = 0;
  options.force_overwrite = true;
  std::string error;
  auto b = fixtures::SyntheticTraceBuilder::Create(path, options, &error);
  EXPECT_NE(b, nullptr) << error;
  if (b == nullptr) return {};
  write(*b);
  EXPECT_TRUE(b->Finish());
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? Advise(*model) : AdviseReport{};
}

fixtures::KernelSpec NamedKernel(const char* name, uint64_t ns) {
  fixtures::KernelSpec spec;
  spec.name = name;
  spec.duration_ns = ns;
  return spec;
}

// After a blocking read the host refills an empty queue: the launch gaps that follow are the
// read's, as long as they add up to less than the work the host had queued when it began to
// wait (its lead), even where the host got ahead for a while in between. Per step the host
// works 1.8 ms and the GPU 2.015 ms, so without the read the program is GPU-bound and has no
// idle time: the fix saves all of it, the read's gap (~106 us), two catch-up gaps (~100 us
// each) and the later ~0.5 ms launch gap, about 0.8 ms a step, less than the ~1 ms lead.
TEST(AdviseTest, CatchUpGapsAfterAWaitGoToTheWait) {
  const AdviseReport report = AdviseWritten([](fixtures::SyntheticTraceBuilder& b) {
    for (int s = 0; s < 10; ++s) {
      b.PushRange("step");
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, false, MemoryKind::kPageable);
      for (int k = 0; k < 2; ++k) {  // two catch-up gaps: each tiny kernel runs dry
        b.HostIdle(100'000);
        b.LaunchKernel(NamedKernel("tiny", 5'000));
      }
      b.HostIdle(100'000);
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.LaunchKernel(NamedKernel("tiny", 5'000));  // queued behind compute: the host is ahead
      b.HostIdle(1'500'000);
      b.LaunchKernel(NamedKernel("tiny", 5'000));  // a launch gap of ~0.5 ms
      b.PopRange();
    }
    b.DeviceSynchronize();
  });
  const AdviseFinding* read = FindRule(report, kRuleBlockingRead);
  ASSERT_NE(read, nullptr) << RenderAdviseReport(report, OutputFormat::kTable);
  EXPECT_EQ(report.findings.front().rule, kRuleBlockingRead);
  // The last step's gaps come after the last read too: 10 reads, 30 catch-up gaps.
  EXPECT_EQ(read->occurrences, 40u);
  EXPECT_THAT(read->evidence, HasSubstr("of them 30 catch-up gaps"));
  EXPECT_GT(read->cost_ns, 10u * 750'000);
  EXPECT_LT(read->cost_ns, 10u * 850'000);
  EXPECT_EQ(read->cost_max_ns, read->cost_ns);  // the lead covered every catch-up gap
  EXPECT_EQ(FindRule(report, kRuleLaunchBound), nullptr);
  EXPECT_EQ(FindRule(report, kRuleStartup), nullptr);
}

// Where the host, after a wait, takes longer to queue the next work than the GPU work it had
// queued ahead (the lead), the idle beyond the lead stays launch-bound, in a finding named
// after the wait, apart from the launch gaps after it that no wait drained; the wait's finding
// says how much more the fix saves should the host keep up (cost_max_ns). Per step, as
// PyTorch's `.item()` loop: a tiny kernel, 100 us of host work and another (a launch gap no
// wait drained), a 1 ms kernel read back at once (lead ~1 ms), a tiny kernel adding the value
// up, then 1.5 ms of host work before the next step, ~0.5 ms of it beyond the lead.
TEST(AdviseTest, IdleBeyondTheLeadIsWhatTheWaitCostsAtMost) {
  const AdviseReport report = AdviseWritten([](fixtures::SyntheticTraceBuilder& b) {
    for (int s = 0; s < 10; ++s) {
      b.PushRange("step");
      b.LaunchKernel(NamedKernel("tiny", 5'000));
      b.HostIdle(100'000);
      b.LaunchKernel(NamedKernel("tiny", 5'000));
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, false, MemoryKind::kPageable);
      b.HostIdle(30'000);
      b.LaunchKernel(NamedKernel("tiny", 5'000));
      b.PopRange();
      b.HostIdle(1'500'000);
    }
    b.DeviceSynchronize();
  });
  const std::string table = RenderAdviseReport(report, OutputFormat::kTable);
  const AdviseFinding* read = FindRule(report, kRuleBlockingRead);
  ASSERT_NE(read, nullptr) << table;
  EXPECT_EQ(report.findings.front().rule, kRuleBlockingRead) << table;
  const AdviseFinding* after_wait = nullptr;
  const AdviseFinding* undrained = nullptr;
  for (const AdviseFinding& f : report.findings) {
    if (f.rule != kRuleLaunchBound) continue;
    (f.api_call.empty() ? undrained : after_wait) = &f;
  }
  ASSERT_NE(after_wait, nullptr) << table;
  ASSERT_NE(undrained, nullptr) << table;
  // Nine steps follow a read: ~1 ms of each 1.5 ms gap is catch-up, the rest is named after
  // the wait; every step has its ~95 us launch gap no wait drained.
  EXPECT_NEAR(static_cast<double>(after_wait->cost_ns), 9 * 500'000.0, 9 * 50'000.0);
  EXPECT_EQ(after_wait->occurrences, 9u);
  EXPECT_EQ(after_wait->api_call, "cudaMemcpy");
  EXPECT_THAT(after_wait->title, HasSubstr("after cudaMemcpy returned"));
  EXPECT_THAT(after_wait->evidence, Not(HasSubstr("longest 1.")));  // the counted ~0.5 ms
  EXPECT_NEAR(static_cast<double>(undrained->cost_ns), 10 * 95'000.0, 10 * 10'000.0);
  EXPECT_THAT(undrained->title, Not(HasSubstr("after")));
  EXPECT_EQ(read->cost_max_ns, read->cost_ns + after_wait->cost_ns);
  EXPECT_THAT(read->evidence, HasSubstr("the fix saves up to"));
}

// A wait that drained little work can only buy that little: a loop of tiny kernels the host
// never gets ahead of stays launch-bound after a synchronize.
TEST(AdviseTest, CatchUpIsBoundedByTheWorkTheWaitDrained) {
  const AdviseReport report = AdviseWritten([](fixtures::SyntheticTraceBuilder& b) {
    for (int k = 0; k < 10; ++k) b.LaunchKernel(NamedKernel("tiny", 5'000));
    b.DeviceSynchronize();  // a warm-up's synchronize: it waited for about one tiny kernel
    for (int k = 0; k < 400; ++k) {
      b.LaunchKernel(NamedKernel("tiny", 5'000));
      b.HostIdle(40'000);
    }
    b.DeviceSynchronize();
  });
  ASSERT_FALSE(report.findings.empty());
  const AdviseFinding& top = report.findings.front();
  EXPECT_EQ(top.rule, kRuleLaunchBound) << RenderAdviseReport(report, OutputFormat::kTable);
  EXPECT_NEAR(static_cast<double>(top.cost_ns), 399.0 * 38'000, 0.05 * 399 * 38'000);
  const AdviseFinding* sync = FindRule(report, kRuleSync);
  ASSERT_NE(sync, nullptr);
  EXPECT_LT(sync->cost_ns, 100'000u);  // its own gap and at most ~10 us of catch-up
}

// Idle time before the first step (loading, allocation), and one gap in the first step many
// times the usual gap of its cause, are one-time start-up: their own finding, ranked after
// the steady-state ones even when it costs more.
TEST(AdviseTest, StartUpGapsAreOneTimeAndRankedAfterTheSteadyState) {
  const AdviseReport report = AdviseWritten([](fixtures::SyntheticTraceBuilder& b) {
    b.Memcpy(CopyKind::kHtoD, 1 << 20, fixtures::kComputeStream, false);
    b.HostIdle(50'000'000);  // loading libraries before the loop
    for (int s = 0; s < 10; ++s) {
      b.PushRange("step");
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, false, MemoryKind::kPageable);
      b.PopRange();
      b.HostIdle(s == 0 ? 30'000'000 : 150'000);  // the first step loads a module
    }
    b.DeviceSynchronize();
  });
  ASSERT_GE(report.findings.size(), 2u);
  EXPECT_EQ(report.findings.front().rule, kRuleBlockingRead)
      << RenderAdviseReport(report, OutputFormat::kTable);
  EXPECT_EQ(report.findings.front().occurrences, 8u);  // steps 2..9 to the next step
  EXPECT_LT(report.findings.front().cost_ns, 8u * 160'000);
  const AdviseFinding& last = report.findings.back();
  EXPECT_EQ(last.rule, kRuleStartup);
  EXPECT_EQ(last.occurrences, 2u);
  EXPECT_GT(last.cost_ns, 80'000'000u);
  EXPECT_GT(last.cost_ns, report.findings.front().cost_ns);
  EXPECT_THAT(last.title, HasSubstr("steady state of step"));
  EXPECT_THAT(last.evidence, HasSubstr("blocking-read"));
  EXPECT_THAT(report.headline, HasSubstr("1) blocking-read"));
}

// Without NVTX steps only outliers early in the run are start-up: the same long gap late in
// the run is a one-off, its cause keeping the usual gap.
TEST(AdviseTest, WithoutStepsOnlyEarlyOutliersAreStartUp) {
  const AdviseReport report = AdviseWritten([](fixtures::SyntheticTraceBuilder& b) {
    for (int s = 0; s < 20; ++s) {
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.DeviceSynchronize();
      b.HostIdle(s == 0 || s == 15 ? 30'000'000 : 100'000);
    }
  });
  const AdviseFinding* startup = FindRule(report, kRuleStartup);
  ASSERT_NE(startup, nullptr) << RenderAdviseReport(report, OutputFormat::kTable);
  EXPECT_EQ(startup->occurrences, 1u);
  EXPECT_THAT(startup->title, HasSubstr("early in the trace"));
  EXPECT_THAT(startup->evidence, HasSubstr("sync-idle"));
  const AdviseFinding* sync = FindRule(report, kRuleSync);
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->occurrences, 18u);
  EXPECT_LT(sync->worst_end_ns - sync->worst_begin_ns, 1'000'000u);
  const AdviseFinding* one_off = FindRule(report, kRuleOneOff);
  ASSERT_NE(one_off, nullptr);
  EXPECT_EQ(one_off->occurrences, 1u);
  EXPECT_GE(one_off->worst_end_ns - one_off->worst_begin_ns, 30'000'000u);
  EXPECT_EQ(report.findings.back().rule, kRuleStartup);
}

// A gap 20 times the usual gap of its cause, in the steady state (a garbage collection, the
// recorder's flush): the cause keeps the median gap, the rest is the `one-off` finding, which
// names the overhead records inside it and the time they cover, each ns once (a buffer's
// translation nested in a flush, a second flush overlapping the first's end: 4.5 ms in all).
// The wait's cost stays what its fix saves.
TEST(AdviseTest, OneOffGapKeepsTheUsualGapWithItsCause) {
  uint64_t stall_at = 0;
  const AdviseReport report = AdviseWritten([&](fixtures::SyntheticTraceBuilder& b) {
    for (int s = 0; s < 60; ++s) {
      b.PushRange("step");
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, false, MemoryKind::kPageable);
      b.PopRange();
      if (s == 20) {
        stall_at = b.host_now();
        TraceWriter::Batch batch(b.writer());
        const struct {
          const char* kind;
          uint64_t from_stall_ns, duration_ns;
        } records[] = {{"CUPTI_BUFFER_FLUSH", 100'000, 4'000'000},
                       {"WARPSCOPE_BUFFER", 1'000'000, 1'000'000},
                       {"CUPTI_BUFFER_FLUSH", 3'600'000, 1'000'000}};
        for (const auto& r : records) {
          OverheadRecord o;
          o.kind_id = batch.InternString(r.kind);
          o.start_ns = fixtures::SyntheticTraceBuilder::ToAbsolute(stall_at + r.from_stall_ns);
          o.end_ns = o.start_ns + r.duration_ns;
          EXPECT_TRUE(batch.Write(o));
        }
      }
      b.HostIdle(s == 20 ? 5'000'000 : 150'000);
    }
    b.DeviceSynchronize();
  });
  ASSERT_FALSE(report.findings.empty());
  const AdviseFinding& top = report.findings.front();
  EXPECT_EQ(top.rule, kRuleBlockingRead) << RenderAdviseReport(report, OutputFormat::kTable);
  // 59 gaps from one step's read to the next step's kernel, of about 156 us each: the
  // one-off's included with its usual part.
  EXPECT_EQ(top.occurrences, 59u);
  EXPECT_LT(top.cost_ns, 59u * 160'000);
  EXPECT_GT(top.cost_ns, 59u * 150'000);
  EXPECT_LT(top.worst_end_ns - top.worst_begin_ns, 200'000u);
  const AdviseFinding* one_off = FindRule(report, kRuleOneOff);
  ASSERT_NE(one_off, nullptr);
  EXPECT_EQ(one_off->occurrences, 1u);
  EXPECT_GT(one_off->cost_ns, 4'800'000u);
  EXPECT_LT(one_off->cost_ns, 5'000'000u);
  // The gap begins when the read's copy ends, just before the stall.
  EXPECT_LE(one_off->worst_begin_ns, stall_at);
  EXPECT_GT(one_off->worst_begin_ns + 10'000, stall_at);
  EXPECT_THAT(one_off->evidence, HasSubstr("blocking-read"));
  EXPECT_THAT(one_off->evidence,
              HasSubstr("overhead records (CUPTI_BUFFER_FLUSH, WARPSCOPE_BUFFER) cover 4.50 ms"));
  EXPECT_THAT(one_off->fix, HasSubstr("warpscope timeline TRACE --svg FILE --window "));
}

// A long gap that comes back every step is part of the step, not a one-off: its cause keeps
// all of it. Here each step launches 20 tiny kernels 20 us apart, then the host spends 1 ms
// outside any range (50 times the usual gap) before the next step.
TEST(AdviseTest, LongGapInEveryStepIsNotAOneOff) {
  const AdviseReport report = AdviseWritten([](fixtures::SyntheticTraceBuilder& b) {
    for (int s = 0; s < 30; ++s) {
      b.PushRange("step");
      for (int k = 0; k < 20; ++k) {
        b.LaunchKernel(NamedKernel("tiny", 2'000));
        b.HostIdle(20'000);
      }
      b.PopRange();
      b.HostIdle(1'000'000);
    }
    b.DeviceSynchronize();
  });
  EXPECT_EQ(FindRule(report, kRuleOneOff), nullptr)
      << RenderAdviseReport(report, OutputFormat::kTable);
  const AdviseFinding* launch = FindRule(report, kRuleLaunchBound);
  ASSERT_NE(launch, nullptr) << RenderAdviseReport(report, OutputFormat::kTable);
  // Every step's 1 ms gap (the first step's may be start-up) is counted whole.
  EXPECT_GT(launch->cost_ns, 29u * 1'000'000);
  EXPECT_GT(launch->worst_end_ns - launch->worst_begin_ns, 1'000'000u);
}

// The same long gap in only two of 30 steps is a one-off: the cause keeps its usual gap.
TEST(AdviseTest, LongGapInTwoStepsIsAOneOff) {
  const AdviseReport report = AdviseWritten([](fixtures::SyntheticTraceBuilder& b) {
    for (int s = 0; s < 30; ++s) {
      b.PushRange("step");
      for (int k = 0; k < 20; ++k) {
        b.LaunchKernel(NamedKernel("tiny", 2'000));
        b.HostIdle(s == 10 && k == 5 ? 1'000'000 : 20'000);
      }
      b.PopRange();
      b.HostIdle(s == 20 ? 1'000'000 : 20'000);
    }
    b.DeviceSynchronize();
  });
  const AdviseFinding* one_off = FindRule(report, kRuleOneOff);
  ASSERT_NE(one_off, nullptr) << RenderAdviseReport(report, OutputFormat::kTable);
  EXPECT_EQ(one_off->occurrences, 2u);
  const AdviseFinding* launch = FindRule(report, kRuleLaunchBound);
  ASSERT_NE(launch, nullptr);
  EXPECT_LT(launch->worst_end_ns - launch->worst_begin_ns, 100'000u);
}

// A host range far longer once than usual names what the host did: it stays with the range.
TEST(AdviseTest, LongHostRangeIsNotAOneOff) {
  const AdviseReport report = AdviseWritten([](fixtures::SyntheticTraceBuilder& b) {
    for (int s = 0; s < 30; ++s) {
      b.PushRange("data_loader");
      b.HostIdle(s == 20 ? 40'000'000 : 1'500'000);
      b.PopRange();
      b.PushRange("step");
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.PopRange();
    }
    b.DeviceSynchronize();
  });
  EXPECT_EQ(FindRule(report, kRuleOneOff), nullptr)
      << RenderAdviseReport(report, OutputFormat::kTable);
  const AdviseFinding* range = FindRule(report, kRuleHostRange);
  ASSERT_NE(range, nullptr);
  EXPECT_GT(range->cost_ns, 39'000'000u);
}

TEST(AdviseTest, ProgramWithoutProblemHasNoHighFinding) {
  const AdviseReport report = Advise(LoadProblem(Problem::kNone, false));
  EXPECT_FALSE(HasHighFinding(report)) << RenderAdviseReport(report, OutputFormat::kTable);
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
  const std::string table = RenderAdviseReport(report, OutputFormat::kTable);
  EXPECT_THAT(table, HasSubstr("#1 [high] blocking-read"));
  EXPECT_THAT(table, HasSubstr("where:    nvtx step | api cudaMemcpy"));
  const std::string csv = RenderAdviseReport(report, OutputFormat::kCsv);
  EXPECT_THAT(csv, HasSubstr("rank,rule,severity,cost_ns,cost_percent"));
  EXPECT_THAT(csv, HasSubstr("\n1,blocking-read,high,"));
  const std::string json = RenderAdviseReport(report, OutputFormat::kJson);
  EXPECT_THAT(json, HasSubstr("\"findings\":[{\"rank\":1,\"rule\":\"blocking-read\""));
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
  using advise_internal::NsFromDouble;
  EXPECT_EQ(NsFromDouble(1234.9), 1234u);
  EXPECT_EQ(NsFromDouble(-5), 0u);
  EXPECT_EQ(NsFromDouble(std::nan("")), 0u);
  EXPECT_EQ(NsFromDouble(7.22867e+225), UINT64_MAX);  // a tail cost from a damaged trace
  EXPECT_EQ(NsFromDouble(std::numeric_limits<double>::infinity()), UINT64_MAX);
}

}  // namespace
}  // namespace warpscope
