// One answer per question: the host time `summary --report syncs` puts on a line is under that
// line in `advise` (the same figure), or a note says why no finding counts it; a one-off names
// where it happened and what the trace shows there. On the bundled sync_sites.wst (PyTorch,
// stacks, NVTX) and on synthetic traces with Python frames, native (C++) frames, or no stacks
// and no NVTX at all.
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/summary.h"
#include "analyzers/render/output.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/writer/trace_writer.h"
#include "tests/advise/advise_test_util.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using advise_testing::FindRule;
using advise_testing::NamedKernel;
using ::testing::HasSubstr;
using ::testing::Not;

// Every line of summary's syncs report is under a wait finding of that line with the same
// blocked time and calls, or named with that time in a note. Returns how many were findings'.
size_t ExpectEveryLineAnswered(const TraceModel& model, const AdviseReport& report) {
  SummaryOptions options;
  options.syncs = true;
  const TraceSummary summary = SummarizeTrace(model, "t.wst", options);
  EXPECT_FALSE(summary.syncs.empty());
  size_t under_findings = 0;
  for (const CallSiteSummary& row : summary.syncs) {
    const std::string line =
        row.function.empty() ? row.site : absl::StrCat(row.site, " ", row.function);
    bool found = false;
    for (const AdviseFinding& f : report.findings) {
      if (f.where != line || f.host_blocked_ns == 0) continue;
      found = true;
      EXPECT_EQ(f.host_blocked_ns, row.time.total_ns) << line;
      EXPECT_EQ(f.host_blocked_calls, row.time.count) << line;
      EXPECT_LE(f.host_blocked_gpu_idle_ns, f.host_blocked_ns) << line;
      EXPECT_THAT(f.evidence,
                  HasSubstr(absl::StrCat("host blocked ",
                                         FormatDuration(static_cast<double>(row.time.total_ns)))));
    }
    if (found) {
      ++under_findings;
      continue;
    }
    bool noted = false;
    for (const std::string& note : report.notes) {
      noted |= note.find(absl::StrCat("host blocked ",
                                      FormatDuration(static_cast<double>(row.time.total_ns)))) !=
                   std::string::npos &&
               note.find(row.site) != std::string::npos;
    }
    EXPECT_TRUE(noted) << line << " has neither a finding nor a note:\n"
                       << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  }
  return under_findings;
}

// sync_sites.py: summary ranks sync_sites.py:67 (torch.cuda.synchronize()) first; advise's
// finding at that line carries the same blocked time and says how much of it the GPU idled.
TEST(AdviseHostBlockedTest, BundledSyncSitesLinesCarrySummarysBlockedTime) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(testing::SourceDir() + "/examples/traces/cuda13.0_sm90/sync_sites.wst");
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = BuildAdviseReport(*model, "sync_sites.wst", {});
  EXPECT_GE(ExpectEveryLineAnswered(*model, report), 8u);
  SummaryOptions options;
  options.syncs = true;
  const TraceSummary summary = SummarizeTrace(*model, "t.wst", options);
  ASSERT_FALSE(summary.syncs.empty());
  EXPECT_EQ(summary.syncs.front().site, "sync_sites.py:67");
  const AdviseFinding* sync = nullptr;
  for (const AdviseFinding& f : report.findings) {
    if (f.where == "sync_sites.py:67 round_of_syncs") sync = &f;
  }
  ASSERT_NE(sync, nullptr)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_EQ(sync->rule, kRuleSync);
  EXPECT_EQ(sync->host_blocked_ns, summary.syncs.front().time.total_ns);
  EXPECT_EQ(sync->host_blocked_calls, 20u);
  // Host blocked is not GPU idle: the GPU ran the queued matrix work through most of the wait.
  EXPECT_LT(sync->host_blocked_gpu_idle_ns, sync->host_blocked_ns / 10);
  EXPECT_THAT(sync->evidence, HasSubstr("host blocked 38.69 ms in 20 calls at this line"));
  EXPECT_THAT(sync->evidence, HasSubstr("the cost is GPU idle time instead"));
  // The final synchronize (line 99) idles no GPU work: a note says so.
  bool noted = false;
  for (const std::string& note : report.notes) {
    noted |= note.find("at sync_sites.py:99 main") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  // The start-up gaps name their longest gap's line, thread and what the host did then.
  const AdviseFinding* startup = FindRule(report, kRuleStartup);
  ASSERT_NE(startup, nullptr);
  EXPECT_THAT(startup->where, HasSubstr("sync_sites.py:"));
  EXPECT_THAT(startup->evidence, HasSubstr("into the trace"));
  EXPECT_THAT(startup->evidence, HasSubstr("the trace shows none"));
}

// Records of the program's line for the builder's calls, and calls the builder does not make.
class ExtraRecords {
 public:
  explicit ExtraRecords(fixtures::SyntheticTraceBuilder& b) : b_(b) {}

  // A one-frame stack for the call `correlation_id`: Python `file:line function`, or (native)
  // `file`+`line` as the module offset, `function` mangled.
  void Stack(uint32_t correlation_id, bool native, const char* file, uint32_t line,
             const char* function) {
    TraceWriter::Batch batch(b_.writer());
    const uint64_t id = ++next_id_;
    StackFrameRecord frame{.id = id,
                           .kind = native ? FrameKind::kNative : FrameKind::kPython,
                           .file_id = batch.InternString(file),
                           .function_id = batch.InternString(function)};
    if (native) {
      frame.module_offset = line;
    } else {
      frame.line = line;
    }
    EXPECT_TRUE(batch.Write(frame));
    EXPECT_TRUE(batch.Write(CallStackRecord{.id = id, .frame_ids = {id}}));
    EXPECT_TRUE(batch.Write(
        ApiStackRecord{.correlation_id = correlation_id,
                       .stack_id = id,
                       .timestamp_ns = fixtures::SyntheticTraceBuilder::ToAbsolute(b_.host_now()),
                       .domain = ApiDomain::kRuntime}));
  }

  // A runtime API call of the host thread from `from_ns` for `ns` (trace time).
  uint32_t ApiCall(const char* name, uint64_t from_ns, uint64_t ns) {
    TraceWriter::Batch batch(b_.writer());
    const uint32_t correlation_id = 900'000 + ++next_id_;
    EXPECT_TRUE(batch.Write(
        ApiCallRecord{.domain = ApiDomain::kRuntime,
                      .name_id = batch.InternString(name),
                      .start_ns = fixtures::SyntheticTraceBuilder::ToAbsolute(from_ns),
                      .end_ns = fixtures::SyntheticTraceBuilder::ToAbsolute(from_ns + ns),
                      .thread_id = b_.thread_id(),
                      .correlation_id = correlation_id}));
    return correlation_id;
  }

 private:
  fixtures::SyntheticTraceBuilder& b_;
  uint64_t next_id_ = 0;
};

// 60 steps of 1 ms of kernels and a blocking read; in step 30 the host spends 5 ms, 4 ms of
// them in a cudaMalloc made at `save_checkpoint`, before the next launch.
absl::StatusOr<TraceModel> StallInACall(bool native) {
  return advise_testing::WrittenModel([native](fixtures::SyntheticTraceBuilder& b) {
    ExtraRecords extra(b);
    for (int s = 0; s < 60; ++s) {
      b.PushRange("step");
      extra.Stack(b.LaunchKernel(NamedKernel("compute", 1'000'000)), native,
                  native ? "/opt/app/bin/trainer" : "/home/me/train.py", native ? 0x1200 : 40,
                  native ? "_Z9trainStepv" : "train_step");
      extra.Stack(
          b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, false, MemoryKind::kPageable),
          native, native ? "/opt/app/bin/trainer" : "/home/me/train.py", native ? 0x1300 : 57,
          native ? "_Z9trainStepv" : "train_step");
      if (s == 30) {
        const uint32_t call = extra.ApiCall("cudaMalloc", b.host_now() + 500'000, 4'000'000);
        extra.Stack(call, native, native ? "/opt/app/bin/trainer" : "/home/me/ckpt.py",
                    native ? 0x1a2f : 88, native ? "_Z14saveCheckpointv" : "save_checkpoint");
        b.HostIdle(5'000'000);
      }
      b.PopRange();
      b.HostIdle(150'000);
    }
    b.DeviceSynchronize();
  });
}

class OneOffPlaceTest : public ::testing::TestWithParam<bool> {};

TEST_P(OneOffPlaceTest, OneOffNamesTheCallTheHostWasIn) {
  const bool native = GetParam();
  absl::StatusOr<TraceModel> loaded = StallInACall(native);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const TraceModel& model = *loaded;
  const AdviseReport report = BuildAdviseReport(model, "stall.wst", {});
  const std::string text = RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  const AdviseFinding* one_off = FindRule(report, kRuleOneOff);
  ASSERT_NE(one_off, nullptr) << text;
  const std::string line =
      native ? "trainer+0x1a2f saveCheckpoint()" : "ckpt.py:88 save_checkpoint";
  EXPECT_EQ(one_off->where, line) << text;
  EXPECT_EQ(one_off->nvtx_path, "step");
  EXPECT_EQ(one_off->os_tid, 4243u);
  EXPECT_THAT(one_off->title, HasSubstr(absl::StrCat(" in step at ", line, ")")));
  EXPECT_THAT(one_off->evidence, HasSubstr("on thread 4243 (python), in NVTX range step"));
  EXPECT_THAT(one_off->evidence, HasSubstr(absl::StrCat("in a call made at ", line)));
  EXPECT_THAT(one_off->evidence, HasSubstr("cudaMalloc 4.00 ms in 1 call"));
  EXPECT_THAT(one_off->evidence, HasSubstr("into the trace"));
  EXPECT_THAT(one_off->evidence, Not(HasSubstr("--stacks")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("where:    line ", line, " | nvtx step")));
  // The read's line carries summary's blocked time for it.
  EXPECT_EQ(ExpectEveryLineAnswered(model, report), 1u);
  const AdviseFinding* read = FindRule(report, kRuleBlockingRead);
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->host_blocked_calls, 60u);
}

INSTANTIATE_TEST_SUITE_P(Frames, OneOffPlaceTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "native" : "python"; });

// No stacks, no NVTX, and the host made no CUDA call during the stall: the one-off says the
// trace shows no call there and what to record to see more; the waits' blocked time, which
// names no line, is in a note with where its idle time went.
TEST(AdviseHostBlockedTest, OneOffWithNothingRecordedSaysSo) {
  const AdviseReport report = advise_testing::AdviseWritten([](fixtures::SyntheticTraceBuilder& b) {
    for (int s = 0; s < 60; ++s) {
      b.LaunchKernel(NamedKernel("compute", 1'000'000));
      b.Memcpy(CopyKind::kDtoH, 4, fixtures::kComputeStream, false, MemoryKind::kPageable);
      b.HostIdle(s == 30 ? 5'000'000 : 150'000);
    }
    b.DeviceSynchronize();
  });
  const AdviseFinding* one_off = FindRule(report, kRuleOneOff);
  ASSERT_NE(one_off, nullptr)
      << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
  EXPECT_EQ(one_off->where, "");
  EXPECT_EQ(one_off->nvtx_path, "");
  EXPECT_THAT(one_off->title, HasSubstr("(the longest, "));
  EXPECT_THAT(one_off->evidence, HasSubstr("outside any NVTX range"));
  // Only the read before the gap and the launch after it reach into it.
  EXPECT_THAT(one_off->evidence, HasSubstr("for the other 5.00 ms the trace shows none"));
  EXPECT_THAT(one_off->evidence, HasSubstr("record with --stacks"));
  EXPECT_THAT(one_off->evidence, HasSubstr("NVTX ranges around the program's phases"));
  bool noted = false;
  for (const std::string& note : report.notes) {
    if (note.find("that name no line") == std::string::npos) continue;
    noted = true;
    EXPECT_THAT(note, HasSubstr("record with --stacks"));
    EXPECT_THAT(note, HasSubstr("in the blocking-read finding (cudaMemcpy)"));
    EXPECT_THAT(note, HasSubstr("beyond the usual gap (one-off)"));
  }
  EXPECT_TRUE(noted) << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
}

// A blocking copy on the copy stream while a long kernel runs: the host is blocked, the GPU
// is not idle. No finding counts it, and the note for its line says why.
TEST(AdviseHostBlockedTest, BlockedWhileTheGpuWorksIsANoteNotAFinding) {
  absl::StatusOr<TraceModel> model =
      advise_testing::WrittenModel([](fixtures::SyntheticTraceBuilder& b) {
        ExtraRecords extra(b);
        for (int s = 0; s < 10; ++s) {
          b.LaunchKernel(NamedKernel("compute", 2'000'000));
          extra.Stack(b.Memcpy(CopyKind::kDtoH, 1 << 20, fixtures::kCopyStream, false),
                      /*native=*/false, "/home/me/train.py", 70, "log_metrics");
          b.HostIdle(1'000'000);
        }
        b.DeviceSynchronize();
      });
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = BuildAdviseReport(*model, "busy.wst", {});
  ExpectEveryLineAnswered(*model, report);
  bool noted = false;
  for (const std::string& note : report.notes) {
    if (note.find("at train.py:70 log_metrics") == std::string::npos) continue;
    noted = true;
    EXPECT_THAT(note, HasSubstr("the GPU ran work queued before the waits through all of them"));
  }
  EXPECT_TRUE(noted) << RenderReport(AdviseReportTables(report), OutputFormat::kTable).value();
}

}  // namespace
}  // namespace warpscope
