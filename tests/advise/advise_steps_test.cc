// `warpscope advise` over a program's steps: numbered ranges are one place, a finding covers
// every step, warm-up steps and copies made once are one-time, a host stall that recurs in a
// range that also launches work is that range's finding, a launch still under way when the GPU
// ran dry is launch-bound, and launches from a thread without ranges count where the steps'
// thread is. Each program is written so that the figure a test asserts is known by design.
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/advise/advise.h"
#include "analyzers/render/output.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/writer/trace_writer.h"
#include "tests/advise/advise_test_util.h"
#include "tests/fixtures/synthetic_trace.h"

namespace warpscope {
namespace {

using advise_testing::AdviseWritten;
using advise_testing::FindRule;
using advise_testing::NamedKernel;
using fixtures::SyntheticTraceBuilder;
using ::testing::HasSubstr;

size_t CountRule(const AdviseReport& report, std::string_view rule) {
  size_t n = 0;
  for (const AdviseFinding& f : report.findings) n += f.rule == rule;
  return n;
}

// 30 steps named step_0 ... step_29, each: 1 ms of kernels, then in step_<k>/log a blocking
// 4-byte read and 150 us of host work before the next step's kernels.
void NumberedSteps(SyntheticTraceBuilder& b) {
  for (int s = 0; s < 30; ++s) {
    b.PushRange("step_" + std::to_string(s));
    b.PushRange("forward");
    b.LaunchKernel(NamedKernel("compute", 1'000'000));
    b.PopRange();
    b.PushRange("log");
    b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, false, MemoryKind::kPageable);
    b.HostIdle(150'000);
    b.PopRange();
    b.PopRange();
  }
  b.DeviceSynchronize();
}

TEST(AdviseSteps, ANumberedRangeIsOnePlaceAndTheFindingCoversEveryStep) {
  const AdviseReport report = AdviseWritten(NumberedSteps);
  ASSERT_FALSE(report.findings.empty());
  const AdviseFinding& top = report.findings.front();
  EXPECT_EQ(top.rule, kRuleBlockingRead)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_EQ(top.nvtx_path, "step_<N>/log");
  EXPECT_EQ(CountRule(report, kRuleBlockingRead), 1u);
  // Every step but the last ends in a gap of about 156 us (the read's return, 150 us of host
  // work, the next launch): 29 of them in one finding.
  EXPECT_EQ(top.occurrences, 29u);
  EXPECT_GT(top.cost_ns, 29u * 150'000);
  EXPECT_LT(top.cost_ns, 29u * 165'000);
  EXPECT_EQ(report.steps, 30u);
  EXPECT_EQ(report.warmup_steps, 0u);
  EXPECT_EQ(report.step_rule, "numbered NVTX range step_<N>");
  EXPECT_THAT(RenderReport(AdviseReportTables(report), OutputFormat::kJson).value(),
              HasSubstr("\"steps\":30,\"warmup_steps\":0"));
}

TEST(AdviseSteps, LiteralRangesKeepOneFindingPerName) {
  AdviseOptions options;
  options.literal_ranges = true;
  const AdviseReport report = AdviseWritten(NumberedSteps, options);
  EXPECT_EQ(CountRule(report, kRuleBlockingRead), 29u)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_EQ(report.findings.front().occurrences, 1u);
  EXPECT_THAT(report.findings.front().nvtx_path, ::testing::StartsWith("step_"));
}

// Three warm-up steps take 10 ms more each (library loading, the allocator's first
// allocations); the steady steps lose 150 us each to a blocking read. The warm-up's gaps are
// a one-time finding ranked last, though they cost more: the read comes first, over the 27
// steady steps.
TEST(AdviseSteps, WarmupStepsAreOneTimeAndNeverRankFirst) {
  const AdviseReport report = AdviseWritten([](SyntheticTraceBuilder& b) {
    for (int s = 0; s < 30; ++s) {
      b.PushRange("ProfilerStep#" + std::to_string(s));
      if (s < 3) b.HostIdle(10'000'000);
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, false, MemoryKind::kPageable);
      b.HostIdle(150'000);
      b.PopRange();
    }
    b.DeviceSynchronize();
  });
  ASSERT_GE(report.findings.size(), 2u);
  EXPECT_EQ(report.warmup_steps, 3u);
  const AdviseFinding& top = report.findings.front();
  EXPECT_EQ(top.rule, kRuleBlockingRead)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_FALSE(top.one_time);
  EXPECT_EQ(top.occurrences, 26u);  // from each steady step to the next
  const AdviseFinding& last = report.findings.back();
  EXPECT_EQ(last.rule, kRuleStartup);
  EXPECT_TRUE(last.one_time);
  // The 10 ms before steps 1 and 2 (the first step's comes before any GPU work).
  EXPECT_GT(last.cost_ns, 20'000'000u);
  EXPECT_GT(last.cost_ns, top.cost_ns);
  EXPECT_THAT(last.title, HasSubstr("ProfilerStep#<N>"));
}

// Two seconds of start-up after the first kernel (loading a model) make the GPU span 2 s,
// while 30 steps take 35 ms: the read that costs 150 us of each 1.15 ms step is a tenth of a
// step, not 0.2% of the span. Costs are per steady step, severity is their share of a step,
// and the start-up is listed apart, after the steady-state findings.
TEST(AdviseSteps, CostsArePerSteadyStepWhateverTheStartUp) {
  const AdviseReport report = AdviseWritten([](SyntheticTraceBuilder& b) {
    b.LaunchKernel(NamedKernel("init", 10'000));
    b.DeviceSynchronize();
    b.HostIdle(2'000'000'000);
    for (int s = 0; s < 30; ++s) {
      b.PushRange("step_" + std::to_string(s));
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, false, MemoryKind::kPageable);
      b.HostIdle(150'000);
      b.PopRange();
    }
    b.DeviceSynchronize();
  });
  const std::string text = RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  ASSERT_GE(report.findings.size(), 2u) << text;
  EXPECT_EQ(report.warmup_steps, 0u);
  EXPECT_EQ(report.steady_steps, 30u);
  EXPECT_NEAR(static_cast<double>(report.steady_step_ns), 1.15e6, 0.1e6);
  const AdviseFinding& top = report.findings.front();
  EXPECT_EQ(top.rule, kRuleBlockingRead) << text;
  EXPECT_EQ(top.cost_per_step_ns, top.cost_ns / 30);
  EXPECT_NEAR(top.step_fraction, 0.13, 0.03);
  EXPECT_LT(top.cost_fraction, 0.01);  // of the 2 s GPU span
  EXPECT_EQ(top.severity, AdviseSeverity::kHigh);
  const AdviseFinding& last = report.findings.back();
  EXPECT_EQ(last.rule, kRuleStartup) << text;
  EXPECT_TRUE(last.one_time);
  EXPECT_EQ(last.cost_per_step_ns, 0u);
  EXPECT_GT(last.cost_fraction, 0.9);
  // The text gives the cost per step, and the start-up under a heading of its own.
  EXPECT_THAT(text,
              HasSubstr("] blocking-read: " +
                        FormatDuration(static_cast<double>(top.cost_per_step_ns)) + " a step ("));
  EXPECT_THAT(text, HasSubstr("30 steady steps of"));
  const size_t heading = text.find("paid once, before the steady state");
  ASSERT_NE(heading, std::string::npos) << text;
  EXPECT_LT(text.find("] blocking-read:"), heading);
  EXPECT_GT(text.find("] startup:"), heading);
  // CSV and JSON: the startup row has no cost per step.
  const std::string csv = RenderReport(AdviseReportTables(report), OutputFormat::kCsv).value();
  EXPECT_THAT(csv, HasSubstr(",true,,0,0,0,,\n"));
}

// A range repeated in one early phase (20 short items) is the only candidate for steps, then
// the program runs 50 ms of work with blocking reads outside it: those ranges are not its
// iteration, and costs per step would read as many steps' worth (sync_sites.wst read 1002% of
// a step). The costs stay over the GPU span, and the text says why.
TEST(AdviseSteps, StepsThatSpanLittleOfTheRunAreNotCostedPerStep) {
  const AdviseReport report = AdviseWritten([](SyntheticTraceBuilder& b) {
    for (int i = 0; i < 20; ++i) {
      b.PushRange("item");
      b.LaunchKernel(NamedKernel("small", 20'000));
      b.PopRange();
    }
    for (int s = 0; s < 40; ++s) {
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, false, MemoryKind::kPageable);
      b.HostIdle(250'000);
    }
    b.DeviceSynchronize();
  });
  const std::string text = RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_EQ(report.steps, 20u) << text;
  EXPECT_LT(report.steps_coverage, kMinStepsCoverage);
  EXPECT_EQ(report.steady_steps, 0u);
  const AdviseFinding* read = FindRule(report, kRuleBlockingRead);
  ASSERT_NE(read, nullptr) << text;
  EXPECT_EQ(read->cost_per_step_ns, 0u);
  EXPECT_LT(read->cost_fraction, 1.0);
  EXPECT_THAT(text, HasSubstr("not the program's iteration, so costs are over the GPU span"));
  EXPECT_THAT(text, HasSubstr("of the GPU span)"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("a step (")));
}

// The weights are copied from pageable memory once before the loop; each step copies its
// batch from pageable memory too. The step copies are the finding; the weights' are one-time.
TEST(AdviseSteps, PageableCopiesBeforeTheSteadyStateAreOneTime) {
  const AdviseReport report = AdviseWritten([](SyntheticTraceBuilder& b) {
    b.PushRange("load_weights");
    for (int i = 0; i < 4; ++i) {
      b.Memcpy(CopyKind::kHtoD, 256ull << 20, fixtures::kComputeStream, false,
               MemoryKind::kPageable);
    }
    b.PopRange();
    for (int s = 0; s < 20; ++s) {
      b.PushRange("step_" + std::to_string(s));
      b.Memcpy(CopyKind::kHtoD, 8ull << 20, fixtures::kComputeStream, false, MemoryKind::kPageable);
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.PopRange();
    }
    b.DeviceSynchronize();
  });
  const AdviseFinding& top = report.findings.front();
  EXPECT_EQ(top.rule, kRulePageable)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_FALSE(top.one_time);
  EXPECT_EQ(top.occurrences, 20u);
  EXPECT_EQ(top.nvtx_path, "step_<N>");
  const AdviseFinding* weights = nullptr;
  bool one_time_seen = false;
  for (const AdviseFinding& f : report.findings) {
    if (f.rule == kRulePageable && f.one_time) weights = &f;
    EXPECT_TRUE(f.one_time || !one_time_seen) << f.rule << ": ranked after a one-time finding";
    one_time_seen = one_time_seen || f.one_time;
  }
  ASSERT_NE(weights, nullptr);
  EXPECT_EQ(weights->occurrences, 4u);
  EXPECT_EQ(weights->nvtx_path, "load_weights");
  EXPECT_GT(weights->cost_ns, top.cost_ns);  // costlier, still ranked after it
  EXPECT_THAT(weights->title, HasSubstr("one-time"));
}

// In every step data_load launches a small kernel, stalls 5 ms on the host, then launches
// another: the GPU runs dry during the stall, and the launch that ends the gap comes from the
// range itself. Recurring in every steady step, it is data_load's finding, not a one-off.
// Each step ends with a stream synchronisation, which had 2 ms of forward queued: without it
// the host would be 2 ms ahead, so 2 ms of each later stall is counted with the wait, and the
// stall's finding says its fix saves up to all 5 ms.
TEST(AdviseSteps, AStallInARangeThatLaunchesWorkIsThatRangesFinding) {
  const AdviseReport report = AdviseWritten([](SyntheticTraceBuilder& b) {
    for (int s = 0; s < 20; ++s) {
      b.PushRange("step_" + std::to_string(s));
      b.PushRange("data_load");
      b.LaunchKernel(NamedKernel("randn", 20'000));
      b.HostIdle(5'000'000);
      b.LaunchKernel(NamedKernel("normalize", 20'000));
      b.PopRange();
      b.PushRange("forward");
      for (int k = 0; k < 20; ++k) b.LaunchKernel(NamedKernel("gemm", 100'000));
      b.PopRange();
      b.PopRange();
      b.StreamSynchronize(fixtures::kComputeStream);
    }
  });
  EXPECT_EQ(FindRule(report, kRuleOneOff), nullptr)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  const AdviseFinding& top = report.findings.front();
  EXPECT_EQ(top.rule, kRuleHostRange)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_EQ(top.nvtx_path, "step_<N>/data_load");
  EXPECT_THAT(top.title, HasSubstr("stalled in NVTX range step_<N>/data_load after launching"));
  EXPECT_THAT(top.title, HasSubstr("in 20 of 20 steps"));
  EXPECT_NEAR(static_cast<double>(top.cost_max_ns), 20 * 5e6, 20 * 0.02 * 5e6);
  EXPECT_NEAR(static_cast<double>(top.cost_ns), 19 * 3e6 + 5e6, 20 * 0.02 * 5e6);
  EXPECT_THAT(top.evidence, HasSubstr("counted with the wait before them"));
}

// Kernels of 2 us, each launched by a call of 4.5 us: the GPU runs dry while the next call is
// still under way, and each gap (about 2.5 us) is the host's: the launch returned after the
// gap began.
TEST(AdviseSteps, AGapIsJudgedByWhenItsLaunchReturned) {
  const AdviseReport report = AdviseWritten(
      [](SyntheticTraceBuilder& b) {
        b.PushRange("loop");
        for (int k = 0; k < 2000; ++k) b.LaunchKernel(NamedKernel("tiny", 2'000));
        b.PopRange();
        b.DeviceSynchronize();
      },
      {}, 4'500);
  const AdviseFinding* launch = FindRule(report, kRuleLaunchBound);
  ASSERT_NE(launch, nullptr)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  // 1999 gaps of 4.5 - 2 = 2.5 us: all the idle time.
  EXPECT_NEAR(static_cast<double>(launch->cost_ns), 1999 * 2'500.0, 1999 * 100.0)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_NEAR(static_cast<double>(report.idle_attributed_ns),
              static_cast<double>(report.gpu_idle_ns), 0.01 * report.gpu_idle_ns);
}

// A second host thread without NVTX ranges of its own (PyTorch's autograd thread) launches
// the backward kernels while the main thread is in step_<k>/backward: its work, and the gaps
// its launches end, are in that range.
TEST(AdviseSteps, LaunchesFromAThreadWithoutRangesCountWhereTheStepsThreadIs) {
  const AdviseReport report = AdviseWritten([](SyntheticTraceBuilder& b) {
    TraceWriter& w = b.writer();
    const uint64_t autograd = w.InternThread(0x7f00000000aaull, 5001, "autograd");
    const uint64_t launch_name = w.InternString("cudaLaunchKernel");
    const uint64_t kernel_name = w.InternString("backward_gemm");
    uint32_t correlation = 900'000;
    for (int s = 0; s < 10; ++s) {
      b.PushRange("step_" + std::to_string(s));
      b.PushRange("backward");
      uint64_t t = b.host_now();
      const uint64_t gpu_from = std::max(t, b.gpu_idle_at());
      for (int k = 0; k < 5; ++k) {
        // The autograd thread stalls 200 us before each launch: the GPU runs dry.
        t += 200'000;
        ApiCallRecord a{};
        a.domain = ApiDomain::kRuntime;
        a.name_id = launch_name;
        a.start_ns = SyntheticTraceBuilder::ToAbsolute(t);
        a.end_ns = a.start_ns + 3'000;
        a.thread_id = autograd;
        a.correlation_id = ++correlation;
        a.callback_id = 211;
        EXPECT_TRUE(w.Write(a));
        KernelRecord kr{};
        kr.name_id = kernel_name;
        kr.start_ns = SyntheticTraceBuilder::ToAbsolute(std::max(t + 5'000, gpu_from));
        kr.end_ns = kr.start_ns + 50'000;
        kr.stream_id = fixtures::kComputeStream;
        kr.context_id = fixtures::kContextId;
        kr.correlation_id = correlation;
        EXPECT_TRUE(w.Write(kr));
      }
      b.HostIdle(t + 60'000 - b.host_now());
      b.PopRange();
      b.PopRange();
    }
  });
  const AdviseFinding* launch = FindRule(report, kRuleLaunchBound);
  ASSERT_NE(launch, nullptr)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_EQ(launch->nvtx_path, "step_<N>/backward");
  EXPECT_EQ(launch->thread_name, "autograd");
}

}  // namespace
}  // namespace warpscope
