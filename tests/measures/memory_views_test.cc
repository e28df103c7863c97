// Device memory in the other commands (memory.h DigestMemory): summary's device_memory table
// and text, advise's memory-leak / out-of-memory / memory-fragmentation findings, and the job
// view's peak per rank. On tests/data/synthetic/memory.textproto and on traces written here:
// a held-out shape whose steps are numbered ranges not named step_N ("loop 7") and whose leak
// starts halfway through the run, a stream-ordered pool holding far more than it uses, and
// ranks whose peaks differ.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/job/job.h"
#include "analyzers/analyses/memory.h"
#include "analyzers/analyses/summary.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::warpscope::testing::FixtureWire;
using ::warpscope::testing::TextprotoToWire;
using ::warpscope::testing::WriteTempFile;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kGiB = 1ull << 30;

TraceModel Load(const std::string& path) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

std::string Alloc(uint64_t address, uint64_t bytes, uint64_t ns, uint32_t correlation,
                  const std::string& extra = "") {
  return absl::StrCat(
      "packet { memory { operation: MEMORY_OPERATION_ALLOCATE memory_kind: MEMORY_KIND_DEVICE "
      "address: ",
      address, " bytes: ", bytes, " timestamp_ns: ", ns,
      " device_id: 0 thread_id: 1 source_id: 1 correlation_id: ", correlation, " ", extra,
      " } }\n");
}

std::string Free(uint64_t address, uint64_t bytes, uint64_t ns) {
  return absl::StrCat(
      "packet { memory { operation: MEMORY_OPERATION_RELEASE memory_kind: MEMORY_KIND_DEVICE "
      "address: ",
      address, " bytes: ", bytes, " timestamp_ns: ", ns,
      " device_id: 0 thread_id: 1 source_id: 1 } }\n");
}

std::string StackOf(uint32_t correlation, uint32_t stack, uint64_t ns) {
  return absl::StrCat("packet { api_stack { correlation_id: ", correlation, " stack_id: ", stack,
                      " timestamp_ns: ", ns, " name_id: 6 } }\n");
}

// A program of `steps` iterations, NVTX ranges "loop 0", "loop 1", ... (1 ms each from 1 ms;
// none when `ranges` is false) with 10 kernels each:
// `base` bytes of weights (model.py:20) from the start, 512 MiB of activations in each step,
// and from step `leak_from` on `leak` bytes kept every step at model.py:88 (with `split_leak`,
// every other step from another caller: another stack of the same line; with `cut_leak`, a
// stack cut in the middle, model.py:88 among its outermost frames past 40 left out, under
// torch's frames). Device 0 of 80 GiB.
std::string LoopTrace(int steps, int leak_from, uint64_t leak, uint64_t base, int rank = -1,
                      bool ranges = true, bool split_leak = false, bool cut_leak = false) {
  std::string t =
      absl::StrCat(R"pb(
                     packet { header { format_major: 1 format_minor: 3 producer: "test" pid: 7
                                       hostname: "h")pb",
                   rank >= 0 ? absl::StrCat("rank_env { key: \"RANK\" value: \"", rank, "\" }")
                             : "",
                   R"pb(}
                        }
    packet { device { id: 0 name: "NVIDIA H200" global_memory_bytes: 85899345920 } }
    packet { thread { id: 1 os_tid: 7 name: "python" } }
    packet { interned_string { id: 1 value: "libc10_cuda.so" } }
    packet { interned_string { id: 4 value: "/home/me/model.py" } }
    packet { interned_string { id: 5 value: "train" } }
    packet { interned_string { id: 6 value: "cudaMalloc" } }
    packet { stack_frame { id: 1 kind: FRAME_KIND_PYTHON file_id: 4 function_id: 5 line: 20 first_line: 10 } }
    packet { stack_frame { id: 2 kind: FRAME_KIND_PYTHON file_id: 4 function_id: 5 line: 88 first_line: 10 } }
    packet { call_stack { id: 1 frame_ids: [1] } }
    packet { call_stack { id: 2 frame_ids: [2] } }
    packet { call_stack { id: 3 frame_ids: [2, 1] } }
    packet { interned_string { id: 7 value: "/venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py" } }
    packet { stack_frame { id: 3 kind: FRAME_KIND_PYTHON file_id: 7 function_id: 5 line: 600 first_line: 590 } }
    packet { call_stack { id: 4 frame_ids: [3, 3, 2] truncated: true outermost: 1 left_out: 40 } }
  )pb");
  uint32_t correlation = 1;
  absl::StrAppend(&t, StackOf(correlation, 1, 100), Alloc(1ull << 40, base, 100, correlation));
  for (int k = 0; k < steps; ++k) {
    const uint64_t start = (k + 1) * 1'000'000ull;
    if (ranges) {
      absl::StrAppend(&t, "packet { interned_string { id: ", 100 + k, " value: \"loop ", k,
                      "\" } }\n", "packet { nvtx_range { name_id: ", 100 + k, " start_ns: ", start,
                      " duration_ns: 1000000 thread_id: 1 end_thread_id: 1 is_push_pop: true "
                      "depth: 0 } }\n");
    }
    for (int i = 0; i < 10; ++i) {
      absl::StrAppend(&t, "packet { kernel { name_id: 5 start_ns: ", start + 50'000 + i * 90'000,
                      " duration_ns: 80000 device_id: 0 context_id: 1 stream_id: 7 } }\n");
    }
    const uint64_t act = (2ull << 40) + k * kGiB;
    ++correlation;
    absl::StrAppend(&t, StackOf(correlation, 1, start + 100'000),
                    Alloc(act, 512 * kMiB, start + 100'000, correlation),
                    Free(act, 512 * kMiB, start + 800'000));
    if (k >= leak_from) {
      ++correlation;
      const uint32_t stack = cut_leak ? 4 : split_leak && k % 2 == 1 ? 3 : 2;
      absl::StrAppend(&t, StackOf(correlation, stack, start + 900'000),
                      Alloc((3ull << 40) + k * kGiB, leak, start + 900'000, correlation));
    }
  }
  return TextprotoToWire(t);
}

TEST(MemoryViews, ALeakThatStartsHalfwayIsFoundWithItsLine) {
  const TraceModel model = Load(WriteTempFile(LoopTrace(20, 10, 8 * kMiB, 10 * kGiB)));
  const MemoryDigest m = DigestMemory(model);
  ASSERT_EQ(m.devices.size(), 1u);
  const DeviceMemoryDigest& d = m.devices[0];
  EXPECT_EQ(d.capacity_bytes, 80 * kGiB);
  EXPECT_EQ(d.steady_steps, 20u);  // the "loop <N>" ranges are the steps
  EXPECT_TRUE(d.growth.leak);
  ASSERT_TRUE(d.growth.slope.has_value());
  EXPECT_GT(d.growth.slope->low, 0);
  // The rise is measured from its onset: 8 MiB a step, not the half a slope over all 20 reads.
  EXPECT_NEAR(d.growth.slope->per_step, 8.0 * kMiB, 0.01 * kMiB);
  EXPECT_GE(d.growth.onset_step, 9u);
  EXPECT_LE(d.growth.onset_step, 11u);
  EXPECT_EQ(d.growth.RateText(), absl::StrCat("8.00 MiB per steady step from step ",
                                              d.growth.onset_step));
  EXPECT_GE(d.growth.gained, 72 * kMiB);  // steps 10-19 kept 8 MiB each
  EXPECT_LE(d.growth.gained, 80 * kMiB);
  EXPECT_EQ(d.growth_site, "model.py:88 train");
  EXPECT_EQ(d.growth_site_bytes, 80 * kMiB);
  // The peak: weights, the last step's activations and 72 MiB kept before them.
  EXPECT_EQ(d.peak_bytes, 10 * kGiB + 512 * kMiB + 72 * kMiB);
}

TEST(MemoryViews, TheStacksOfOneLineAreOneGrowingSite) {
  const TraceModel model = Load(WriteTempFile(
      LoopTrace(20, 10, 8 * kMiB, 10 * kGiB, /*rank=*/-1, /*ranges=*/true, /*split_leak=*/true)));
  const DeviceMemoryDigest d = DigestMemory(model).devices[0];
  EXPECT_TRUE(d.growth.leak);
  ASSERT_EQ(d.growth.growing_sites.size(), 1u);  // two stacks, one line
  EXPECT_EQ(d.growth_site, "model.py:88 train");
  EXPECT_EQ(d.growth_site_bytes, 80 * kMiB);  // both stacks' 40 MiB
}

TEST(MemoryViews, ALeakSiteFoundPastAStackCutSaysSo) {
  const TraceModel model = Load(WriteTempFile(LoopTrace(20, 10, 8 * kMiB, 10 * kGiB, -1, true,
                                                        false, /*cut_leak=*/true)));
  const DeviceMemoryDigest d = DigestMemory(model).devices[0];
  EXPECT_TRUE(d.growth.leak);
  // torch's frames are passed for the program's line among the outermost ones.
  EXPECT_EQ(d.growth_site, "model.py:88 train [stack cut]");
  EXPECT_EQ(d.growth_site_bytes, 80 * kMiB);
}

// No NVTX at all: `iterations` of 10 kernels, 4 MiB kept in each from the first; its model
// and memory digest (one device, judged over the kernels).
struct NoStepsLoop {
  TraceModel model;
  MemoryDigest digest;
};
NoStepsLoop LoopWithoutSteps(int iterations) {
  NoStepsLoop loop{
      Load(WriteTempFile(LoopTrace(iterations, 0, 4 * kMiB, 10 * kGiB, -1, /*ranges=*/false))),
      MemoryDigest()};
  loop.digest = DigestMemory(loop.model);
  EXPECT_EQ(loop.digest.devices.size(), 1u);
  if (!loop.digest.devices.empty()) {
    EXPECT_EQ(loop.digest.devices[0].growth.progress.basis, MemoryProgress::Basis::kKernels);
  }
  return loop;
}

TEST(MemoryViews, WithoutStepsALeakIsJudgedOverTheKernelsLaunched) {
  const NoStepsLoop loop = LoopWithoutSteps(130);
  ASSERT_EQ(loop.digest.devices.size(), 1u);
  const MemoryDigest& m = loop.digest;
  const MemoryGrowth& g = m.devices[0].growth;
  EXPECT_TRUE(g.leak);
  // 4 MiB per 10 kernels: 400 MiB per 1,000 kernels.
  EXPECT_NEAR(1000 * g.PerKernel(), 400.0 * kMiB, 20.0 * kMiB);
  EXPECT_NE(g.RateText().find("per 1,000 kernels launched (the trace has no steps)"),
            std::string::npos)
      << g.RateText();
  EXPECT_EQ(m.devices[0].growth_site, "model.py:88 train");
}

// The same rise over 400 kernels (a rank killed in its first steps, a short script): too
// little work to tell a leak from start-up, and `memory` says so.
TEST(MemoryViews, WithoutStepsARiseOverFewKernelsIsNotCalledALeak) {
  const NoStepsLoop loop = LoopWithoutSteps(40);
  ASSERT_EQ(loop.digest.devices.size(), 1u);
  const MemoryGrowth& g = loop.digest.devices[0].growth;
  EXPECT_FALSE(g.leak);
  EXPECT_TRUE(g.too_little_work);
  EXPECT_GT(g.kernels_judged, 300.0);
  EXPECT_LT(g.kernels_judged, kLeakMinimumKernels);
  const MemoryReportResult r = MemoryReport(loop.model, {});
  bool said = false;
  for (const std::string& line : r.report.text) {
    EXPECT_EQ(line.find("a leak,"), std::string::npos) << line;
    said = said || (line.find("memory rose by") != std::string::npos &&
                    line.find("too little work to tell a leak from start-up") != std::string::npos);
  }
  EXPECT_TRUE(said);
}

TEST(MemoryViews, WithoutStepsNothingKeptIsNoLeak) {
  const TraceModel model =
      Load(WriteTempFile(LoopTrace(40, 40, 4 * kMiB, 10 * kGiB, -1, /*ranges=*/false)));
  const MemoryDigest m = DigestMemory(model);
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_EQ(m.devices[0].growth.progress.basis, MemoryProgress::Basis::kKernels);
  EXPECT_FALSE(m.devices[0].growth.leak);
}

TEST(MemoryViews, NoLeakWhenNothingIsKept) {
  const TraceModel model = Load(WriteTempFile(LoopTrace(20, 20, 8 * kMiB, 10 * kGiB)));
  const MemoryDigest m = DigestMemory(model);
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_FALSE(m.devices[0].growth.leak);
  EXPECT_EQ(m.devices[0].growth_site, "");
  AdviseReport report = BuildAdviseReport(model, "t.wst", {});
  for (const AdviseFinding& f : report.findings) EXPECT_FALSE(IsMemoryRule(f.rule)) << f.rule;
}

TEST(MemoryViews, AdviseCostsTheLeakInBytesAndStepsToFull) {
  // 64 MiB kept a step from halfway: the device's 80 GiB fill within a few thousand steps.
  const TraceModel model = Load(WriteTempFile(LoopTrace(20, 10, 64 * kMiB, 10 * kGiB)));
  const AdviseReport report = BuildAdviseReport(model, "t.wst", {});
  const AdviseFinding* leak = nullptr;
  for (const AdviseFinding& f : report.findings) {
    if (f.rule == kRuleMemoryLeak) leak = &f;
  }
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ(leak->where, "model.py:88 train");
  const DeviceMemoryDigest d = DigestMemory(model).devices[0];
  EXPECT_EQ(leak->memory_bytes, static_cast<uint64_t>(d.growth.slope->per_step));
  // The headroom over the peak, at the rate per step.
  EXPECT_EQ(leak->steps_to_full,
            static_cast<int64_t>(static_cast<double>(80 * kGiB - d.peak_bytes) /
                                 d.growth.slope->per_step));
  EXPECT_LT(leak->steps_to_full, 10'000);
  EXPECT_GT(leak->steps_to_full, 1'000);
  EXPECT_EQ(leak->severity, AdviseSeverity::kHigh);  // full within 10,000 steps
  EXPECT_THAT(report.headline, HasSubstr("memory: memory-leak"));
  const Report tables = AdviseReportTables(report);
  const Table* memory = tables.FindTable("memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->num_rows(), 1u);
  const std::string text = RenderReport(tables, OutputFormat::kTable).value_or("");
  EXPECT_THAT(text, HasSubstr("device memory (costs in bytes, not time)"));
  EXPECT_THAT(text, HasSubstr("[high] memory-leak:"));
}

TEST(MemoryViews, AdviseExplainsTheRefusedRequest) {
  const TraceModel model = Load(WriteTempFile(FixtureWire("synthetic/memory.textproto")));
  const AdviseReport report = BuildAdviseReport(model, "m.wst", {});
  const AdviseFinding* oom = nullptr;
  const AdviseFinding* leak = nullptr;
  for (const AdviseFinding& f : report.findings) {
    if (f.rule == kRuleOutOfMemory) oom = &f;
    if (f.rule == kRuleMemoryLeak) leak = &f;
  }
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->memory_bytes, 80 * kGiB);
  EXPECT_EQ(oom->where, "train.py:42 train_step");
  EXPECT_EQ(oom->severity, AdviseSeverity::kHigh);
  EXPECT_THAT(oom->evidence, HasSubstr("1.13 GiB in use"));
  EXPECT_THAT(oom->evidence, HasSubstr("PyTorch caching allocator"));
  EXPECT_THAT(oom->evidence, HasSubstr("128.00 MiB reserved but unused"));
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ(leak->memory_bytes, 4 * kMiB);
  EXPECT_EQ(leak->steps_to_full, -1);  // the fixture's device has no size
  EXPECT_EQ(leak->severity, AdviseSeverity::kMedium);
  // Memory findings come after the time findings.
  bool memory_seen = false;
  for (const AdviseFinding& f : report.findings) {
    if (IsMemoryRule(f.rule))
      memory_seen = true;
    else
      EXPECT_FALSE(memory_seen) << f.rule;
  }
}

TEST(MemoryViews, AdviseFindsAPoolThatHoldsFarMoreThanItUses) {
  std::string t = R"pb(
    packet { header { format_major: 1 format_minor: 3 producer: "test" } }
    packet { device { id: 0 name: "NVIDIA H200" global_memory_bytes: 85899345920 } }
    packet { thread { id: 1 os_tid: 7 name: "python" } }
  )pb";
  absl::StrAppend(&t, Alloc(1ull << 40, kGiB, 100, 0),
                  Alloc(2ull << 40, 512 * kMiB, 200, 0,
                        "pool_address: 4096 pool_reserved_bytes: 4294967296 "
                        "pool_used_bytes: 536870912"));
  const TraceModel model = Load(WriteTempFile(TextprotoToWire(t)));
  const AdviseReport report = BuildAdviseReport(model, "p.wst", {});
  const AdviseFinding* frag = nullptr;
  for (const AdviseFinding& f : report.findings) {
    if (f.rule == kRuleFragmentation) frag = &f;
  }
  ASSERT_NE(frag, nullptr);
  EXPECT_EQ(frag->memory_bytes, 3584 * kMiB);  // 4 GiB reserved, 512 MiB of it used
  EXPECT_THAT(frag->evidence, HasSubstr("1.50 GiB in use and 5.00 GiB reserved"));
}

TEST(MemoryViews, SummaryGivesEachDevicesPeakAndTheLeak) {
  const std::string path = WriteTempFile(FixtureWire("synthetic/memory.textproto"));
  const TraceModel model = Load(path);
  SummaryOptions options;
  const std::vector<TraceSummary> summaries = SummarizeTraces({&model}, {"m.wst"}, options);
  ASSERT_TRUE(HasDeviceMemory(summaries));
  const Report report = SummaryReport(summaries, options);
  const Table* table = report.FindTable("device_memory");
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(table->num_rows(), 1u);
  const std::string csv = RenderReport(report, OutputFormat::kCsv).value_or("");
  // 1412 MiB at the peak, reserved as much; no device size; 4 MiB a step; one refused request.
  EXPECT_THAT(csv, HasSubstr("m.wst,0,1480589312,1480589312,1480589312,,,4194304,"));
  EXPECT_THAT(csv, HasSubstr("PyTorch caching allocator 1.29 GiB, NCCL 64.00 MiB"));
  const std::string text = RenderReport(report, OutputFormat::kTable).value_or("");
  EXPECT_THAT(text, HasSubstr("-- device memory"));
  EXPECT_THAT(text, HasSubstr("1.38 GiB"));
  EXPECT_THAT(text, HasSubstr("grows by 4.00 MiB per steady step over 10 steps: a leak, most at "
                              "train.py:57 train_step"));
  EXPECT_THAT(text, HasSubstr("a request for 80.00 GiB was refused"));
  // Without the memory report, nothing of it.
  SummaryOptions no_memory;
  ASSERT_TRUE(ParseSummaryReports("kernels,api", &no_memory).ok());
  const std::vector<TraceSummary> plain = SummarizeTraces({&model}, {"m.wst"}, no_memory);
  EXPECT_FALSE(HasDeviceMemory(plain));
  EXPECT_EQ(SummaryReport(plain, no_memory).FindTable("device_memory"), nullptr);
}

TEST(MemoryViews, ATraceWithoutMemoryEventsReadsAsBefore) {
  const TraceModel model = Load(WriteTempFile(FixtureWire("synthetic/basic.textproto")));
  SummaryOptions options;
  const std::vector<TraceSummary> summaries = SummarizeTraces({&model}, {"b.wst"}, options);
  EXPECT_FALSE(HasDeviceMemory(summaries));
  EXPECT_EQ(SummaryReport(summaries, options).FindTable("device_memory"), nullptr);
  EXPECT_THAT(RenderReport(SummaryReport(summaries, options), OutputFormat::kTable).value_or(""),
              ::testing::Not(HasSubstr("device memory")));
  const AdviseReport advise = BuildAdviseReport(model, "b.wst", {});
  EXPECT_EQ(AdviseReportTables(advise).FindTable("memory"), nullptr);
}

TEST(MemoryViews, TheJobFlagsTheRankWhosePeakDiffers) {
  std::vector<std::string> paths;
  for (int rank = 0; rank < 4; ++rank) {
    const uint64_t base = rank == 2 ? 14 * kGiB : 10 * kGiB;  // rank 2 holds 4 GiB more
    const int leak_from = rank == 3 ? 5 : 20;                 // rank 3 leaks
    paths.push_back(WriteTempFile(LoopTrace(20, leak_from, 8 * kMiB, base, rank),
                                  absl::StrCat("rank_", rank, ".wst")));
  }
  absl::StatusOr<JobView> view = BuildJobView(paths);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->memory_outliers, std::vector<uint32_t>{2});
  EXPECT_EQ(view->median_peak_memory_bytes, 10 * kGiB + 512 * kMiB);
  const Report report = JobReport(*view);
  const Table* memory = report.FindTable("memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->num_rows(), 4u);
  std::string text;
  for (const std::string& line : report.text) absl::StrAppend(&text, line, "\n");
  EXPECT_THAT(text, HasSubstr("memory: rank 2 peaks at 14.50 GiB, 38% above the ranks' median "
                              "of 10.50 GiB"));
  EXPECT_THAT(text, HasSubstr("memory: rank 3 grows by"));
  EXPECT_THAT(text, HasSubstr("(a leak), most at model.py:88 train"));
}

}  // namespace
}  // namespace warpscope
