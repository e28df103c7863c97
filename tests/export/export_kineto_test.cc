// The Kineto JSON export: what Holistic Trace Analysis reads, laid out as Kineto writes it (the
// rank found the way HTA searches the text for it), a ProfilerStep#N range per step of a
// synthetic data-parallel job, and NCCL's calls carrying the launches of their kernels.
#include "analyzers/analyses/export/export_kineto.h"

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/export/export_fixture.h"
#include "tests/export/trace_event_json.h"
#include "tests/fixtures/synthetic_job.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::warpscope::testing::Arg;
using ::warpscope::testing::Events;
using ::warpscope::testing::ExpectWellFormed;
using ::warpscope::testing::ExportFixturePath;
using ::warpscope::testing::Field;
using ::warpscope::testing::HasArg;
using ::warpscope::testing::Load;
using ::warpscope::testing::MakeTempDir;
using ::warpscope::testing::Num;
using ::warpscope::testing::ParseJson;
using ::warpscope::testing::Select;
using ::warpscope::testing::Str;
using ::warpscope::testing::Struct;
using ::warpscope::testing::TextprotoToWire;
using ::warpscope::testing::Value;
using ::warpscope::testing::WriteTempFile;

std::vector<Value> ExportOne(const std::string& path, std::string_view step = "") {
  TraceModel model = Load(path);
  const TraceModel* models[] = {&model};
  const std::vector<KinetoTraceFile> files = ExportKinetoTraces(models, step);
  EXPECT_EQ(files.size(), 1u);
  const std::vector<Value> events = Events(ParseJson(files.at(0).json));
  ExpectWellFormed(events);
  return events;
}

// Complete events whose name starts with `prefix`, in file order.
std::vector<Value> Named(const std::vector<Value>& events, const std::string& prefix) {
  std::vector<Value> out;
  for (const Value& e : Select(events, "X")) {
    if (Str(e, "name").rfind(prefix, 0) == 0) out.push_back(e);
  }
  return out;
}

TEST(ExportKinetoTest, HasWhatHolisticTraceAnalysisReads) {
  TraceModel model = Load(ExportFixturePath());
  const TraceModel* models[] = {&model};
  const std::vector<KinetoTraceFile> files = ExportKinetoTraces(models);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].file_name, "rank3.trace.json");
  const Struct root = ParseJson(files[0].json);
  Value root_value;
  *root_value.mutable_struct_value() = root;
  const Value* info = Field(root_value, "distributedInfo");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(Num(*info, "rank"), 3);
  EXPECT_EQ(Num(*info, "world_size"), 4);  // the header's WORLD_SIZE, not the traces given
  const Value* devices = Field(root_value, "deviceProperties");
  ASSERT_NE(devices, nullptr);
  ASSERT_EQ(devices->list_value().values_size(), 1);
  EXPECT_EQ(Num(devices->list_value().values(0), "numSms"), 132);
  EXPECT_EQ(Num(devices->list_value().values(0), "maxThreadsPerMultiprocessor"), 2048);
  EXPECT_EQ(Num(root_value, "baseTimeNanoseconds"), 1763684401000000000.0);

  const std::vector<Value> events = Events(root);
  ExpectWellFormed(events);
  const std::vector<Value> gemm = Select(events, "X", "void gemm<float, 4>(float const*, int)");
  ASSERT_EQ(gemm.size(), 1u);
  EXPECT_EQ(Str(gemm[0], "cat"), "kernel");
  EXPECT_EQ(Num(gemm[0], "pid"), 0);  // the device
  EXPECT_EQ(Num(gemm[0], "tid"), 7);  // the stream
  EXPECT_EQ(Arg(gemm[0], "stream"), 7);
  EXPECT_EQ(Arg(gemm[0], "correlation"), 1);
  EXPECT_EQ(Arg(gemm[0], "External id"), 1);
  const std::vector<Value> copy = Select(events, "X", "Memcpy HtoD (Pinned -> Device)");
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(Str(copy[0], "cat"), "gpu_memcpy");
  const std::vector<Value> memset = Select(events, "X", "Memset (Device)");
  ASSERT_EQ(memset.size(), 1u);
  EXPECT_EQ(Str(memset[0], "cat"), "gpu_memset");
  // Host events carry no stream: HTA tells GPU events from host events by it.
  for (const Value& call : Select(events, "X", "cudaLaunchKernel")) {
    EXPECT_EQ(Str(call, "cat"), "cuda_runtime");
    EXPECT_EQ(Num(call, "pid"), 4242);
    EXPECT_FALSE(HasArg(call, "stream"));
    EXPECT_GT(Arg(call, "correlation"), 0);
  }
  const std::vector<Value> step = Select(events, "X", "step");
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(Str(step[0], "cat"), "user_annotation");
  EXPECT_TRUE(Named(events, "ProfilerStep#").empty());  // one "step" range: no steps
  // Every GPU work has its launch flow: the orphan kernel, whose launch was not recorded,
  // from its stand-in launch (below).
  EXPECT_EQ(Select(events, "s").size(), 5u);
  const std::vector<Value> stand_ins = Select(events, "X", "launch not recorded");
  ASSERT_EQ(stand_ins.size(), 1u);
  EXPECT_EQ(Arg(stand_ins[0], "correlation"), 99);
  for (const Value& f : Select(events, "f")) EXPECT_EQ(Str(f, "cat"), "ac2g");
  // The host process and the GPU say which rank they are.
  const std::vector<Value> names = Select(events, "M", "process_name");
  ASSERT_EQ(names.size(), 2u);
  for (const Value& n : names) {
    EXPECT_EQ(Str(*Field(n, "args"), "name"), "rank 3: node-7 (pid 4242)");
  }
}

// The fixture exported as two traces whose headers say ranks `a` and `b`.
std::vector<KinetoTraceFile> ExportTwoRanks(const std::string& a, const std::string& b) {
  TraceModel first = Load(ExportFixturePath(0, a));
  TraceModel second = Load(ExportFixturePath(0, b));
  const TraceModel* models[] = {&first, &second};
  return ExportKinetoTraces(models);
}

TEST(ExportKinetoTest, RanksClaimedTwiceFallBackToPositions) {
  const std::vector<KinetoTraceFile> files = ExportTwoRanks("3", "3");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].file_name, "rank0.trace.json");
  EXPECT_EQ(files[1].file_name, "rank1.trace.json");
}

// HTA 0.5 (hta/common/trace_file.py) reads a file line by line and takes the first match of
// `"rank":\s+(\d+)` for its rank, rank 0 when none matches; it never parses distributedInfo
// for it. Kineto's layout (a space after each colon, an event a line) is what that finds.
TEST(ExportKinetoTest, RankIsFoundAsHolisticTraceAnalysisSearchesForIt) {
  const std::vector<KinetoTraceFile> files = ExportTwoRanks("3", "5");
  ASSERT_EQ(files.size(), 2u);
  const std::regex hta_rank(R"re("rank":\s+(\d+))re");
  for (const KinetoTraceFile& file : files) {
    std::istringstream lines(file.json);
    std::string line, found;
    size_t events = 0;
    while (std::getline(lines, line)) {
      std::smatch m;
      if (found.empty() && std::regex_search(line, m, hta_rank)) found = m[1];
      if (line.rfind("{\"ph\": ", 0) == 0) ++events;  // an event starts each line
    }
    EXPECT_EQ(found, std::to_string(file.rank)) << file.file_name;
    EXPECT_THAT(file.json, HasSubstr("\n\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " +
                                     std::to_string(file.rank) + ", \"world_size\": 4},\n"));
    size_t complete_and_flows = 0;
    for (const Value& e : Events(ParseJson(file.json))) complete_and_flows += Str(e, "ph") != "M";
    EXPECT_EQ(events, complete_and_flows) << file.file_name;
  }
}

// A ProfilerStep#N per step_<N> range of a synthetic data-parallel job, on the step's thread,
// from the step's start to the next step's start; every NCCL kernel is reached from the NCCL
// call that launched it (its driver API launch is not in the trace).
TEST(ExportKinetoTest, MarksStepsAndNcclLaunchesOfADataParallelJob) {
  fixtures::DdpJobSpec spec;
  spec.ranks = 2;
  spec.steps = 4;
  spec.late_rank = 1;
  spec.kernels_per_phase = 4;
  std::string error;
  const std::vector<std::string> paths = fixtures::WriteDdpJob(spec, MakeTempDir(), &error);
  ASSERT_EQ(paths.size(), 2u) << error;
  const std::vector<Value> events = ExportOne(paths[1]);

  const std::vector<Value> steps = Named(events, "ProfilerStep#");
  const std::vector<Value> user = Named(events, "step_");
  ASSERT_EQ(steps.size(), 4u);
  ASSERT_EQ(user.size(), 4u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(Str(steps[i], "name"), "ProfilerStep#" + std::to_string(i));
    EXPECT_EQ(Str(steps[i], "cat"), "user_annotation");
    EXPECT_EQ(Num(steps[i], "tid"), Num(user[i], "tid"));
    EXPECT_EQ(Num(steps[i], "ts"), Num(user[i], "ts"));
    const double end =
        i + 1 < user.size() ? Num(user[i + 1], "ts") : Num(user[i], "ts") + Num(user[i], "dur");
    EXPECT_NEAR(Num(steps[i], "ts") + Num(steps[i], "dur"), end, 1e-6) << i;
  }

  const std::vector<Value> calls = Named(events, "ncclAllReduce");
  const std::vector<Value> kernels = Named(events, "ncclDevKernel_AllReduce");
  ASSERT_EQ(kernels.size(), 4u * spec.buckets);
  ASSERT_EQ(calls.size(), kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ(Str(calls[i], "cat"), "user_annotation");
    EXPECT_EQ(Str(*Field(calls[i], "args"), "domain"), "NCCL");
    EXPECT_EQ(Arg(calls[i], "correlation"), Arg(kernels[i], "correlation"));
    EXPECT_EQ(Arg(calls[i], "bytes"), static_cast<double>(spec.bucket_bytes));
    EXPECT_FALSE(HasArg(calls[i], "stream"));
    int flows_from_call = 0;
    for (const Value& s : Select(events, "s")) {
      flows_from_call += Num(s, "id") == Arg(kernels[i], "correlation") &&
                         Num(s, "ts") == Num(calls[i], "ts") &&
                         Num(s, "tid") == Num(calls[i], "tid");
    }
    EXPECT_EQ(flows_from_call, 1) << i;
  }
}

// A trace whose steps are an unnumbered "train_iter" range, plus NCCL's NVTX range of a call
// that is also an NcclCallEvent, and one (ncclCommInitRank) that is not.
// clang-format off
constexpr char kIterationsAndNccl[] = R"pb(
  packet { header { format_major: 1 pid: 77 hostname: "h" clock_domain: CLOCK_DOMAIN_SYNTHETIC
                    time_base_ns: 1000 rank_env { key: "RANK" value: "1" } } }
  packet { device { id: 0 name: "NVIDIA H200" sm_count: 132 } }
  packet { thread { id: 1 os_tid: 700 name: "main" } }
  packet { interned_string { id: 1 value: "train_iter" } }
  packet { interned_string { id: 2 value: "ncclAllReduce" } }
  packet { interned_string { id: 3 value: "NCCL" } }
  packet { interned_string { id: 4 value: "ncclCommInitRank" } }
  packet { interned_string { id: 5 value: "ncclDevKernel_AllReduce_Sum_f32_RING_LL(int)" } }
  packet { nvtx_range { name_id: 4 domain_id: 3 start_ns: 100 duration_ns: 500 thread_id: 1
                        end_thread_id: 1 is_push_pop: true } }
  packet { nvtx_range { name_id: 1 start_ns: 1000 duration_ns: 3000 thread_id: 1
                        end_thread_id: 1 is_push_pop: true } }
  packet { nvtx_range { name_id: 1 start_ns: 5000 duration_ns: 3000 thread_id: 1
                        end_thread_id: 1 is_push_pop: true } }
  packet { nvtx_range { name_id: 1 start_ns: 9000 duration_ns: 2500 thread_id: 1
                        end_thread_id: 1 is_push_pop: true } }
  packet { nvtx_range { name_id: 2 domain_id: 3 start_ns: 2000 duration_ns: 300 thread_id: 1
                        end_thread_id: 1 is_push_pop: true depth: 1 } }
  packet { nccl_call { name_id: 2 start_ns: 2010 duration_ns: 280 thread_id: 1
                       comm_hash: 0xabc bytes: 4096 comm_size: 2 comm_rank: 1
                       launch_correlation_id: 9 launches: 1 } }
  packet { kernel { name_id: 5 start_ns: 2500 duration_ns: 1000 device_id: 0 stream_id: 21
                    correlation_id: 9 } }
)pb";
// clang-format on

TEST(ExportKinetoTest, UnnumberedStepsAndNcclCallsWrittenOnce) {
  const std::vector<Value> events =
      ExportOne(WriteTempFile(TextprotoToWire(kIterationsAndNccl), "iterations.wst"));
  const std::vector<Value> steps = Named(events, "ProfilerStep#");
  ASSERT_EQ(steps.size(), 3u);
  const double starts[] = {1, 5, 9}, durations[] = {4, 4, 2.5};  // us
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(Str(steps[i], "name"), "ProfilerStep#" + std::to_string(i));
    EXPECT_DOUBLE_EQ(Num(steps[i], "ts"), starts[i]);
    EXPECT_DOUBLE_EQ(Num(steps[i], "dur"), durations[i]);
    EXPECT_EQ(Num(steps[i], "tid"), 700);
  }
  // The call once, from its event: its payload's figures and its launch.
  const std::vector<Value> calls = Named(events, "ncclAllReduce");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_DOUBLE_EQ(Num(calls[0], "ts"), 2.01);
  EXPECT_EQ(Arg(calls[0], "correlation"), 9);
  EXPECT_EQ(Str(*Field(calls[0], "args"), "comm"), "0x0000000000000abc");
  EXPECT_EQ(Arg(calls[0], "bytes"), 4096);
  EXPECT_EQ(Arg(calls[0], "comm_size"), 2);
  EXPECT_EQ(Arg(calls[0], "comm_rank"), 1);
  // NCCL's range with no call event stays.
  const std::vector<Value> init = Named(events, "ncclCommInitRank");
  ASSERT_EQ(init.size(), 1u);
  EXPECT_EQ(Str(*Field(init[0], "args"), "domain"), "NCCL");
  EXPECT_FALSE(HasArg(init[0], "correlation"));

  // With NCCL's driver launch recorded (today's defaults), the launch alone carries the id: a
  // tool joining GPU work to host events by correlation finds one host event for the kernel.
  std::string with_launch = kIterationsAndNccl;
  with_launch += R"pb(
  packet { interned_string { id: 6 value: "cuLaunchKernelEx" } }
  packet { api_call { domain: API_DOMAIN_DRIVER name_id: 6 start_ns: 2100 duration_ns: 50
                      thread_id: 1 correlation_id: 9 } })pb";
  const std::vector<Value> recorded =
      ExportOne(WriteTempFile(TextprotoToWire(with_launch), "launch.wst"));
  const std::vector<Value> launch = Named(recorded, "cuLaunchKernelEx");
  ASSERT_EQ(launch.size(), 1u);
  EXPECT_EQ(Arg(launch[0], "correlation"), 9);
  const std::vector<Value> call = Named(recorded, "ncclAllReduce");
  ASSERT_EQ(call.size(), 1u);
  EXPECT_FALSE(HasArg(call[0], "correlation"));
  int carrying = 0;
  for (const Value& e : recorded) {
    carrying += Str(e, "ph") == "X" && Str(e, "cat") != "kernel" && HasArg(e, "correlation") &&
                Arg(e, "correlation") == 9;
  }
  EXPECT_EQ(carrying, 1);

  // --step-range names another range: no repeated range of that name, no steps.
  EXPECT_TRUE(
      Named(ExportOne(WriteTempFile(TextprotoToWire(kIterationsAndNccl), "it2.wst"), "epoch"),
            "ProfilerStep#")
          .empty());
}

TEST(ExportKinetoTest, ProgramsOwnProfilerStepsAreNotWrittenTwice) {
  std::string text = kIterationsAndNccl;
  text.replace(text.find("\"train_iter\""), 12, "\"ProfilerStep#7\"");
  const std::vector<Value> events = ExportOne(WriteTempFile(TextprotoToWire(text), "ps.wst"));
  EXPECT_EQ(Named(events, "ProfilerStep#").size(), 3u);  // the program's own three
}

// Two numbered steps. Stream 7: a recorded launch and its kernel in each step, each followed
// by a kernel whose launch was not recorded (the driver API's, untraced), and two kernels of
// one correlation id (a graph launched through the driver API). Stream 9: an unrecorded
// kernel with no recorded launch before it, and an unrecorded copy. Stream 21: an NCCL kernel
// launched from an NCCL call, then an unrecorded kernel.
// clang-format off
constexpr char kUnrecordedLaunches[] = R"pb(
  packet { header { format_major: 1 pid: 77 hostname: "h" clock_domain: CLOCK_DOMAIN_SYNTHETIC
                    time_base_ns: 1000 rank_env { key: "RANK" value: "0" } } }
  packet { device { id: 0 name: "NVIDIA H200" sm_count: 132 } }
  packet { thread { id: 1 os_tid: 700 name: "main" } }
  packet { interned_string { id: 1 value: "step_0" } }
  packet { interned_string { id: 2 value: "step_1" } }
  packet { interned_string { id: 3 value: "cudaLaunchKernel" } }
  packet { interned_string { id: 4 value: "gemm(float*)" } }
  packet { interned_string { id: 5 value: "cutlass_80_tensorop_gemm(Params)" } }
  packet { interned_string { id: 6 value: "ncclAllReduce" } }
  packet { interned_string { id: 7 value: "ncclDevKernel_AllReduce_Sum_f32_RING_LL(int)" } }
  packet { nvtx_range { name_id: 1 start_ns: 1000 duration_ns: 4000 thread_id: 1
                        end_thread_id: 1 is_push_pop: true } }
  packet { nvtx_range { name_id: 2 start_ns: 5000 duration_ns: 4000 thread_id: 1
                        end_thread_id: 1 is_push_pop: true } }
  packet { api_call { domain: API_DOMAIN_RUNTIME name_id: 3 start_ns: 1500 duration_ns: 200
                      thread_id: 1 correlation_id: 1 } }
  packet { api_call { domain: API_DOMAIN_RUNTIME name_id: 3 start_ns: 5500 duration_ns: 200
                      thread_id: 1 correlation_id: 3 } }
  packet { nccl_call { name_id: 6 start_ns: 2500 duration_ns: 300 thread_id: 1 bytes: 64
                       launch_correlation_id: 8 launches: 1 } }
  packet { kernel { name_id: 5 start_ns: 7000 duration_ns: 400 device_id: 0 stream_id: 7
                    correlation_id: 4 } }
  packet { kernel { name_id: 4 start_ns: 2000 duration_ns: 1000 device_id: 0 stream_id: 7
                    correlation_id: 1 } }
  packet { kernel { name_id: 5 start_ns: 3500 duration_ns: 500 device_id: 0 stream_id: 7
                    correlation_id: 2 } }
  packet { kernel { name_id: 4 start_ns: 6000 duration_ns: 500 device_id: 0 stream_id: 7
                    correlation_id: 3 } }
  packet { kernel { name_id: 5 start_ns: 7800 duration_ns: 100 device_id: 0 stream_id: 7
                    correlation_id: 7 } }
  packet { kernel { name_id: 5 start_ns: 7600 duration_ns: 100 device_id: 0 stream_id: 7
                    correlation_id: 7 } }
  packet { kernel { name_id: 5 start_ns: 4800 duration_ns: 400 device_id: 0 stream_id: 9
                    correlation_id: 5 } }
  packet { memcpy { copy_kind: COPY_KIND_DTOD src_kind: MEMORY_KIND_DEVICE
                    dst_kind: MEMORY_KIND_DEVICE bytes: 64 start_ns: 8000 duration_ns: 100
                    device_id: 0 stream_id: 9 correlation_id: 6 } }
  packet { kernel { name_id: 7 start_ns: 3000 duration_ns: 1500 device_id: 0 stream_id: 21
                    correlation_id: 8 } }
  packet { kernel { name_id: 5 start_ns: 6200 duration_ns: 100 device_id: 0 stream_id: 21
                    correlation_id: 9 } }
)pb";
// clang-format on

// HTA keeps only GPU work whose launch is in the file once it has steps: work whose launch was
// not recorded gets a stand-in, one per correlation id, on a row of its own per stream, at the
// time launch_times.h places it (so in the step the job view counts it in), linked by a flow;
// recorded launches stay as they were.
TEST(ExportKinetoTest, WorkWhoseLaunchWasNotRecordedGetsAStandIn) {
  const std::vector<Value> events =
      ExportOne(WriteTempFile(TextprotoToWire(kUnrecordedLaunches), "unrecorded.wst"));
  ASSERT_EQ(Named(events, "ProfilerStep#").size(), 2u);
  constexpr double kRow = 1 << 24;  // above any Linux thread id
  struct Expected {
    double correlation, ts_us, tid;
    std::string placed_at;
  };
  const std::string after_known = "the recorded launch of the kernel before it on its stream";
  const std::string at_start = "its start on the GPU";
  const std::vector<Expected> expected = {
      {2, 1.5, kRow, after_known},      // after kernel 1 on stream 7: its launch, in step 0
      {4, 5.5, kRow, after_known},      // after kernel 3: in step 1, not at its start
      {5, 4.8, kRow + 1, at_start},     // stream 9 has no recorded launch
      {6, 8.0, kRow + 1, at_start},     // a copy, placed alike
      {7, 5.5, kRow, after_known},      // one for the two kernels of correlation 7
      {9, 2.5, kRow + 2, after_known},  // after the NCCL kernel: its NCCL call
  };
  const std::vector<Value> stand_ins = Select(events, "X", "launch not recorded");
  ASSERT_EQ(stand_ins.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const Value& e = stand_ins[i];
    SCOPED_TRACE(expected[i].correlation);
    EXPECT_EQ(Arg(e, "correlation"), expected[i].correlation);
    EXPECT_EQ(Arg(e, "External id"), expected[i].correlation);
    EXPECT_EQ(Str(e, "cat"), "launch_not_recorded");
    EXPECT_EQ(Num(e, "pid"), 77);
    EXPECT_EQ(Num(e, "tid"), expected[i].tid);
    EXPECT_DOUBLE_EQ(Num(e, "ts"), expected[i].ts_us);
    EXPECT_EQ(Num(e, "dur"), 0);
    EXPECT_EQ(Str(*Field(e, "args"), "launch"), "not recorded");
    EXPECT_EQ(Str(*Field(e, "args"), "placed at"), expected[i].placed_at);
    EXPECT_FALSE(HasArg(e, "stream"));  // host events carry none: HTA tells GPU work by it
    // Its work's flow starts on it.
    size_t flows = 0;
    for (const Value& s : Select(events, "s")) {
      if (Num(s, "id") != expected[i].correlation) continue;
      ++flows;
      EXPECT_EQ(Num(s, "tid"), expected[i].tid);
      EXPECT_DOUBLE_EQ(Num(s, "ts"), expected[i].ts_us);
    }
    EXPECT_EQ(flows, expected[i].correlation == 7 ? 2u : 1u);
  }
  std::map<double, std::string> rows;
  for (const Value& m : Select(events, "M", "thread_name")) {
    if (Num(m, "pid") == 77) rows[Num(m, "tid")] = Str(*Field(m, "args"), "name");
  }
  EXPECT_EQ(rows[700], "main");
  EXPECT_EQ(rows[kRow], "launches not recorded: GPU 0 stream 7");
  EXPECT_EQ(rows[kRow + 1], "launches not recorded: GPU 0 stream 9");
  EXPECT_EQ(rows[kRow + 2], "launches not recorded: GPU 0 stream 21");
  // Recorded launches are as they were: on their thread, at their time, one flow each.
  const std::vector<Value> calls = Select(events, "X", "cudaLaunchKernel");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(Num(calls[0], "tid"), 700);
  EXPECT_DOUBLE_EQ(Num(calls[0], "ts"), 1.5);
  EXPECT_EQ(Arg(calls[0], "correlation"), 1);
  // Every kernel and copy has a flow: 9 kernels and the copy.
  EXPECT_EQ(Select(events, "s").size(), 10u);
}

// clang-format off
constexpr char kNestedDriverCalls[] = R"pb(
  packet { header { format_major: 1 pid: 77 hostname: "h" clock_domain: CLOCK_DOMAIN_SYNTHETIC
                    time_base_ns: 1000 } }
  packet { device { id: 0 name: "NVIDIA H200" sm_count: 132 } }
  packet { thread { id: 1 os_tid: 700 name: "main" } }
  packet { interned_string { id: 1 value: "cudaLaunchKernel" } }
  packet { interned_string { id: 2 value: "cuLaunchKernel" } }
  packet { interned_string { id: 3 value: "gemm(float*)" } }
  packet { api_call { domain: API_DOMAIN_RUNTIME name_id: 1 start_ns: 1500 duration_ns: 200
                      thread_id: 1 correlation_id: 1 } }
  packet { api_call { domain: API_DOMAIN_DRIVER name_id: 2 start_ns: 1550 duration_ns: 100
                      thread_id: 1 correlation_id: 1 } }
  packet { api_call { domain: API_DOMAIN_DRIVER name_id: 2 start_ns: 2500 duration_ns: 100
                      thread_id: 1 correlation_id: 2 } }
  packet { kernel { name_id: 3 start_ns: 2000 duration_ns: 1000 device_id: 0 stream_id: 7
                    correlation_id: 1 } }
  packet { kernel { name_id: 3 start_ns: 3000 duration_ns: 1000 device_id: 0 stream_id: 7
                    correlation_id: 2 } }
)pb";
// clang-format on

// With -t driver, the runtime's own driver call shares the runtime call's correlation id. Only
// one host event per kernel may carry it (HTA joins by it), and it is the runtime call; a
// driver call made by the program itself (correlation 2) keeps its id.
TEST(ExportKinetoTest, DriverCallsInsideRuntimeCallsDoNotClaimTheirKernel) {
  const std::vector<Value> events =
      ExportOne(WriteTempFile(TextprotoToWire(kNestedDriverCalls), "nested.wst"));
  std::map<double, int> claims;
  for (const Value& e : Select(events, "X")) {
    const std::string cat = Str(e, "cat");
    if (cat != "cuda_runtime" && cat != "cuda_driver") continue;
    if (HasArg(e, "correlation")) ++claims[Arg(e, "correlation")];
  }
  EXPECT_EQ(claims, (std::map<double, int>{{1, 1}, {2, 1}}));
  const std::vector<Value> driver = Select(events, "X", "cuLaunchKernel");
  ASSERT_EQ(driver.size(), 2u);
  EXPECT_FALSE(HasArg(driver[0], "correlation"));
  EXPECT_FALSE(HasArg(driver[0], "External id"));
  EXPECT_EQ(Arg(driver[1], "correlation"), 2);
  const std::vector<Value> runtime = Select(events, "X", "cudaLaunchKernel");
  ASSERT_EQ(runtime.size(), 1u);
  EXPECT_EQ(Arg(runtime[0], "correlation"), 1);
  EXPECT_EQ(Select(events, "s").size(), 2u);  // one flow a kernel
}

}  // namespace
}  // namespace warpscope

namespace warpscope {
namespace {

// The Kineto file carries an API call's stack as the Chrome export does (export_common's
// WriteCallStackArgs), for the tools that read Kineto's JSON.
TEST(ExportKinetoStacksTest, ApiCallsCarryTheirCallSiteAndStack) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(
      testing::WriteTempFile(testing::FixtureWire("synthetic/stacks.textproto")));
  ASSERT_TRUE(model.ok()) << model.status();
  const TraceModel* models[] = {&*model};
  const std::vector<KinetoTraceFile> files = ExportKinetoTraces(models);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_THAT(files[0].json, ::testing::HasSubstr(
                                 "\"call_site\": \"train.py:61 train_step\", \"stack\": ["
                                 "\"train.py:61 train_step\", \"train.py:80 <module>\"]"));
  // cudaDeviceSynchronize has no stack: no stack args.
  EXPECT_THAT(files[0].json,
              ::testing::HasSubstr("\"correlation\": 7, \"External id\": 7}"));
}

}  // namespace
}  // namespace warpscope
