// `warpscope advise` on idle gaps of synthetic traces written for one case each: catch-up
// gaps after a wait, start-up gaps, one-off outliers (and long gaps that recur, which are not),
// and long host ranges.
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/advise/advise.h"
#include "analyzers/render/output.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/writer/trace_writer.h"
#include "tests/advise/advise_test_util.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using advise_testing::AdviseWritten;
using advise_testing::FindRule;
using advise_testing::NamedKernel;
using ::testing::HasSubstr;

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
  ASSERT_NE(read, nullptr)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
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
// queued ahead (the lead), the idle beyond the lead is the host's own: here a stall outside
// any range in every step, apart from the launch gaps that no wait drained; the wait's finding
// says how much more the fix saves should the host keep up (cost_max_ns), the stall's how much
// more its fix saves (the catch-up). Per step, as PyTorch's `.item()` loop: a tiny kernel,
// 100 us of host work and another (a launch gap no wait drained), a 1 ms kernel read back at
// once (lead ~1 ms), a tiny kernel adding the value up, then 1.5 ms of host work before the
// next step, ~0.5 ms of it beyond the lead.
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
  const std::string table = RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  const AdviseFinding* read = FindRule(report, kRuleBlockingRead);
  ASSERT_NE(read, nullptr) << table;
  EXPECT_EQ(report.findings.front().rule, kRuleBlockingRead) << table;
  const AdviseFinding* after_wait = FindRule(report, kRuleHostRange);
  const AdviseFinding* undrained = FindRule(report, kRuleLaunchBound);
  ASSERT_NE(after_wait, nullptr) << table;
  ASSERT_NE(undrained, nullptr) << table;
  // Nine steps follow a read: ~1 ms of each 1.5 ms gap is catch-up, the rest is the host's
  // stall outside the ranges; every step has its ~95 us launch gap no wait drained.
  EXPECT_NEAR(static_cast<double>(after_wait->cost_ns), 9 * 500'000.0, 9 * 50'000.0);
  EXPECT_NEAR(static_cast<double>(after_wait->cost_max_ns), 9 * 1'500'000.0, 9 * 50'000.0);
  EXPECT_EQ(after_wait->occurrences, 9u);
  EXPECT_THAT(after_wait->title, HasSubstr("stalled outside any NVTX range"));
  EXPECT_THAT(after_wait->evidence, Not(HasSubstr("longest 1.")));  // the counted ~0.5 ms
  EXPECT_NEAR(static_cast<double>(undrained->cost_ns), 10 * 95'000.0, 10 * 10'000.0);
  EXPECT_THAT(undrained->title, Not(HasSubstr("after")));
  EXPECT_EQ(read->cost_max_ns, read->cost_ns + after_wait->cost_ns);
  EXPECT_THAT(read->evidence, HasSubstr("the fix saves up to"));
  // The table's line of the finding gives the range; a finding without one, its cost alone
  // (both after the cost per steady step: the trace has steps).
  EXPECT_THAT(table,
              HasSubstr(absl::StrCat(
                  " of a steady step); ", FormatDuration(static_cast<double>(read->cost_ns)),
                  ", up to ", FormatDuration(static_cast<double>(read->cost_max_ns)), " in all")));
  EXPECT_THAT(table, HasSubstr(absl::StrCat(" of a steady step); ",
                                            FormatDuration(static_cast<double>(undrained->cost_ns)),
                                            " in all,")));
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
  EXPECT_EQ(top.rule, kRuleLaunchBound)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
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
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
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
  ASSERT_NE(startup, nullptr)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
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

// Without NVTX steps, a long early gap whose cause occurs too rarely to have a usual gap of
// its own (the weights' two copies, then seconds of set-up before the loop) is start-up when
// it is far longer than the program's usual gap: not the copy's cost (a held-out PyTorch
// program with no NVTX range ranked `blocking-copy 5.18 s` first, above its per-step reads).
TEST(AdviseTest, WithoutStepsARareCausesLongEarlyGapIsStartUp) {
  const AdviseReport report = AdviseWritten([](fixtures::SyntheticTraceBuilder& b) {
    b.Memcpy(CopyKind::kHtoD, 64 << 20, fixtures::kComputeStream, /*async=*/false,
             MemoryKind::kPageable);
    b.HostIdle(2'000'000'000);
    b.Memcpy(CopyKind::kHtoD, 1 << 20, fixtures::kComputeStream, /*async=*/false,
             MemoryKind::kPageable);
    b.HostIdle(200'000);
    for (int s = 0; s < 100; ++s) {
      b.LaunchKernel(NamedKernel("compute", 500'000));
      b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, /*async=*/false);
      b.HostIdle(1'000'000);
    }
  });
  const std::string text = RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  ASSERT_FALSE(report.findings.empty()) << text;
  EXPECT_EQ(report.findings.front().rule, kRuleBlockingRead) << text;
  const AdviseFinding* startup = FindRule(report, kRuleStartup);
  ASSERT_NE(startup, nullptr) << text;
  EXPECT_GE(startup->cost_ns, 2'000'000'000u);
  EXPECT_THAT(startup->evidence, HasSubstr("blocking-copy"));
  const AdviseFinding* copy = FindRule(report, kRuleBlockingCopy);
  if (copy != nullptr) {
    EXPECT_LT(copy->cost_ns, 1'000'000u) << text;
  }
}

// The same on a recorded program written before that rule (tests/gpu/advise/no_step_range.py,
// H200, PyTorch 2.11, no step range): three early sync gaps, 4.94 s of library set-up, are
// start-up, not the program's top problem (it read `sync-idle 4.94 s (90.2% of the GPU span)`).
TEST(AdviseTest, ARecordedProgramsSetUpWithoutStepsIsStartUp) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(
      ::warpscope::testing::SourceDir() + "/tests/data/cuda13.0_sm90/no_step_range.wst");
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = advise_testing::Advise(*model);
  const std::string text = RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  ASSERT_FALSE(report.findings.empty()) << text;
  EXPECT_NE(report.findings.front().rule, kRuleSync) << text;
  EXPECT_LT(report.findings.front().cost_ns, 100'000'000u) << text;
  const AdviseFinding* startup = FindRule(report, kRuleStartup);
  ASSERT_NE(startup, nullptr) << text;
  EXPECT_GE(startup->cost_ns, 4'900'000'000u) << text;
  EXPECT_THAT(startup->evidence, HasSubstr("sync-idle"));
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
  EXPECT_EQ(top.rule, kRuleBlockingRead)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
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

// A long gap that comes back every step is part of the step, not a one-off. Here each step
// launches 20 tiny kernels 20 us apart, then the host spends 1 ms outside any range (50 times
// the usual gap) before the next step: the host stalls there, after launching its work.
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
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  const AdviseFinding* stall = FindRule(report, kRuleHostRange);
  ASSERT_NE(stall, nullptr)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_THAT(stall->title, HasSubstr("stalled outside any NVTX range after launching"));
  // Every step's 1 ms gap is counted whole but the first step's, start-up (an outlier in the
  // first steady step) and the last step's, which has no step after it.
  EXPECT_EQ(stall->occurrences, 28u);
  EXPECT_GT(stall->cost_ns, 28u * 1'000'000)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_GT(stall->worst_end_ns - stall->worst_begin_ns, 1'000'000u);
  const AdviseFinding* launch = FindRule(report, kRuleLaunchBound);
  ASSERT_NE(launch, nullptr);
  EXPECT_LT(launch->worst_end_ns - launch->worst_begin_ns, 100'000u);
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
  ASSERT_NE(one_off, nullptr)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_EQ(one_off->occurrences, 2u);
  const AdviseFinding* launch = FindRule(report, kRuleLaunchBound);
  ASSERT_NE(launch, nullptr);
  EXPECT_LT(launch->worst_end_ns - launch->worst_begin_ns, 100'000u);
}

// Without NVTX steps a cause's long gaps recur when they are at least 1 in 10 of its gaps: 1
// in 4 here (each round of 3 tiny kernels 20 us apart ends with 1 ms of host work), 1 in 40 in
// the second program (the 1 ms only every 10th round), which has one-offs.
TEST(AdviseTest, WithoutStepsLongGapsRecurAtOneInTen) {
  auto program = [](int every) {
    return [every](fixtures::SyntheticTraceBuilder& b) {
      for (int s = 0; s < 40; ++s) {
        for (int k = 0; k < 3; ++k) {
          b.LaunchKernel(NamedKernel("tiny", 2'000));
          b.HostIdle(20'000);
        }
        b.LaunchKernel(NamedKernel("tiny", 2'000));
        b.HostIdle(s % every == every - 1 ? 1'000'000 : 20'000);
      }
      b.DeviceSynchronize();
    };
  };
  const AdviseReport recurring = AdviseWritten(program(1));
  EXPECT_EQ(FindRule(recurring, kRuleOneOff), nullptr)
      << RenderReport(AdviseReportTables(recurring), OutputFormat::kTable).value();
  const AdviseReport rare = AdviseWritten(program(10));
  const AdviseFinding* one_off = FindRule(rare, kRuleOneOff);
  ASSERT_NE(one_off, nullptr)
      << RenderReport(AdviseReportTables(rare), OutputFormat::kTable).value();
  EXPECT_GE(one_off->occurrences, 3u);
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
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  const AdviseFinding* range = FindRule(report, kRuleHostRange);
  ASSERT_NE(range, nullptr);
  EXPECT_GT(range->cost_ns, 39'000'000u);
}

}  // namespace
}  // namespace warpscope
