// The exporters on tests/export/export_small.textproto: the Chrome trace-event JSON follows
// the format's rules (every event has ph/ts/pid/tid, complete events a duration, async and
// flow events pair up, counters carry numbers) and holds the fixture's events where they
// belong; the CLI checks its output before reading traces and hands Parquet to the Python
// package. The Kineto JSON: export_kineto_test.cc.
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analyzers/analyses/export/export_chrome.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/export/export_fixture.h"
#include "tests/export/trace_event_json.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::warpscope::testing::Arg;
using ::warpscope::testing::CliResult;
using ::warpscope::testing::CountLines;
using ::warpscope::testing::Events;
using ::warpscope::testing::ExpectWellFormed;
using ::warpscope::testing::ExportFixturePath;
using ::warpscope::testing::Field;
using ::warpscope::testing::Load;
using ::warpscope::testing::Num;
using ::warpscope::testing::ParseJson;
using ::warpscope::testing::Select;
using ::warpscope::testing::Str;
using ::warpscope::testing::Value;
using ::warpscope::testing::MakeTempDir;
using ::warpscope::testing::ReadFileOrDie;
using ::warpscope::testing::RunCli;
using ::warpscope::testing::WriteFileOrDie;

// The thread id a thread_name metadata event gives `name` in process `pid`.
double TidNamed(const std::vector<Value>& events, double pid, const std::string& name) {
  for (const Value& e : Select(events, "M", "thread_name")) {
    if (Num(e, "pid") == pid && Str(*Field(e, "args"), "name") == name) return Num(e, "tid");
  }
  return -1;
}

// The fixture's trace exported alone: the events, its process and its two streams' threads.
class ExportChromeEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const TraceModel model = Load(ExportFixturePath());
    const TraceModel* models[] = {&model};
    events = Events(ParseJson(ExportChromeTraceJson(models)));
    const std::vector<Value> process = Select(events, "M", "process_name");
    ASSERT_EQ(process.size(), 1u);
    process_name = Str(*Field(process[0], "args"), "name");
    pid = Num(process[0], "pid");
    stream7 = TidNamed(events, pid, "GPU 0 stream 7");
    stream9 = TidNamed(events, pid, "GPU 0 stream 9");
  }

  std::vector<Value> events;
  std::string process_name;
  double pid = -1, stream7 = -1, stream9 = -1;
};

TEST_F(ExportChromeEventsTest, FollowsTheFormatWithAProcessAndAThreadPerStreamAndHostThread) {
  ExpectWellFormed(events);
  EXPECT_EQ(process_name, "rank 3: node-7 (pid 4242)");
  EXPECT_GT(stream7, 0);
  EXPECT_GT(stream9, 0);
  EXPECT_EQ(TidNamed(events, pid, "main 100"), 100);
}

// GPU work: one slice each on its stream's thread, with its launch details as args.
TEST_F(ExportChromeEventsTest, PlacesKernelsCopiesAndMemsetsOnTheirStreams) {
  const std::vector<Value> gemm = Select(events, "X", "void gemm<float, 4>(float const*, int)");
  ASSERT_EQ(gemm.size(), 1u);
  EXPECT_EQ(Num(gemm[0], "ts"), 10.0);
  EXPECT_EQ(Num(gemm[0], "dur"), 20.0);
  EXPECT_EQ(Num(gemm[0], "tid"), stream7);
  EXPECT_EQ(Str(gemm[0], "cat"), "kernel");
  EXPECT_EQ(Arg(gemm[0], "registers per thread"), 64);
  EXPECT_EQ(Arg(gemm[0], "shared memory"), 3072);
  const std::vector<Value> copy = Select(events, "X", "[CUDA memcpy HtoD]");
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(Arg(copy[0], "bytes"), 4096);
  EXPECT_DOUBLE_EQ(Arg(copy[0], "GB/s"), 4096.0 / 4000.0);
  const std::vector<Value> memset = Select(events, "X", "[CUDA memset]");
  ASSERT_EQ(memset.size(), 1u);
  EXPECT_EQ(Num(memset[0], "tid"), stream9);
}

// API calls on their threads; the driver call beneath a runtime launch is its own slice.
TEST_F(ExportChromeEventsTest, PlacesApiCallsOnTheirThreads) {
  EXPECT_EQ(Select(events, "X", "cudaLaunchKernel").size(), 2u);
  const std::vector<Value> driver = Select(events, "X", "cuLaunchKernel");
  ASSERT_EQ(driver.size(), 1u);
  EXPECT_EQ(Str(driver[0], "cat"), "cuda_driver");
  EXPECT_EQ(Num(Select(events, "X", "cudaMemsetAsync")[0], "tid"), 200);
}

// The recording's own time: an overhead record is a slice on the thread it took.
TEST_F(ExportChromeEventsTest, PlacesOverheadOnItsThread) {
  const std::vector<Value> flush = Select(events, "X", "WARPSCOPE_FLUSH");
  ASSERT_EQ(flush.size(), 1u);
  EXPECT_EQ(Str(flush[0], "cat"), "overhead");
  EXPECT_EQ(Num(flush[0], "tid"), 300);
  EXPECT_DOUBLE_EQ(Num(flush[0], "dur"), 2.5);
}

// Flows: from the runtime launch (not the driver call) to each piece of GPU work that has
// an API call; the orphan kernel has none.
TEST_F(ExportChromeEventsTest, LinksLaunchesToTheirWork) {
  const std::vector<Value> starts = Select(events, "s");
  const std::vector<Value> ends = Select(events, "f");
  ASSERT_EQ(starts.size(), 4u);
  ASSERT_EQ(ends.size(), 4u);
  std::map<double, std::pair<Value, Value>> by_id;
  for (const Value& s : starts) by_id[Num(s, "id")].first = s;
  for (const Value& f : ends) by_id[Num(f, "id")].second = f;
  std::set<std::tuple<double, double, double, double>> links;  // (s tid, s ts, f tid, f ts)
  for (const auto& [id, pair] : by_id) {
    links.insert({Num(pair.first, "tid"), Num(pair.first, "ts"), Num(pair.second, "tid"),
                  Num(pair.second, "ts")});
  }
  EXPECT_TRUE(links.count({100, 4.0, stream7, 10.0}));   // gemm
  EXPECT_TRUE(links.count({100, 6.0, stream7, 32.0}));   // softmax
  EXPECT_TRUE(links.count({100, 8.0, stream7, 37.0}));   // copy
  EXPECT_TRUE(links.count({200, 11.0, stream9, 12.0}));  // memset
}

// NVTX: the push/pop range is a slice, the start/end range an async pair, the mark an
// instant.
TEST_F(ExportChromeEventsTest, PlacesNvtxRangesAndMarks) {
  const std::vector<Value> step = Select(events, "X", "step");
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(Num(step[0], "dur"), 49.0);
  ASSERT_EQ(Select(events, "b", "load").size(), 1u);
  EXPECT_EQ(Num(Select(events, "e", "load")[0], "ts"), 9.0);
  EXPECT_EQ(Select(events, "i", "tick").size(), 1u);
}

// GPU-wide active warps: 32 per SM x 132 SMs x (active / elapsed cycles), then 0 after the
// last sample.
TEST_F(ExportChromeEventsTest, DrawsActiveWarpsAndMetricsAsCounters) {
  const std::vector<Value> warps = Select(events, "C", "GPU 0 active warps");
  ASSERT_EQ(warps.size(), 3u);
  EXPECT_DOUBLE_EQ(Arg(warps[0], "value"), 4224);
  EXPECT_DOUBLE_EQ(Arg(warps[1], "value"), 16 * 132 * 0.5);
  EXPECT_EQ(Num(warps[2], "ts"), 30.0);
  EXPECT_EQ(Arg(warps[2], "value"), 0);
  EXPECT_EQ(Select(events, "C", "GPU 0 sm__cycles_active.avg").size(), 2u);
}

// Capture windows: the closed one a range, the open one an instant.
TEST_F(ExportChromeEventsTest, MarksCaptureWindows) {
  const std::vector<Value> window = Select(events, "b", "capture window 1");
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(Num(window[0], "ts"), 0.5);
  EXPECT_EQ(Num(Select(events, "e", "capture window 1")[0], "ts"), 45.0);
  EXPECT_EQ(Select(events, "i", "capture window 2").size(), 1u);
}

TEST(ExportChromeTest, SeveralTracesShareOneTimeLineAsProcesses) {
  TraceModel first = Load(ExportFixturePath(0, "3"));
  TraceModel second = Load(ExportFixturePath(1000000, "5"));  // started 1 ms later
  const TraceModel* models[] = {&first, &second};
  const std::vector<Value> events = Events(ParseJson(ExportChromeTraceJson(models)));
  ExpectWellFormed(events);
  const std::vector<Value> processes = Select(events, "M", "process_name");
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_NE(Num(processes[0], "pid"), Num(processes[1], "pid"));
  EXPECT_EQ(Str(*Field(processes[1], "args"), "name"), "rank 5: node-7 (pid 4242)");
  const std::vector<Value> gemm = Select(events, "X", "void gemm<float, 4>(float const*, int)");
  ASSERT_EQ(gemm.size(), 2u);
  EXPECT_EQ(Num(gemm[0], "ts"), 10.0);
  EXPECT_EQ(Num(gemm[1], "ts"), 1010.0);
  EXPECT_EQ(Num(gemm[1], "pid"), Num(processes[1], "pid"));
}

TEST(ExportCliTest, WritesEachFormat) {
  const std::string trace = ExportFixturePath();
  const std::string dir = MakeTempDir();
  CliResult chrome = RunCli("export " + trace + " --format chrome -o " + dir + "/t.json");
  ASSERT_EQ(chrome.exit_code, 0) << chrome.err;
  EXPECT_EQ(chrome.err, "warpscope: wrote " + dir + "/t.json\n");
  ExpectWellFormed(Events(ParseJson(ReadFileOrDie(dir + "/t.json"))));

  const std::string other = ExportFixturePath(0, "5");
  CliResult kineto = RunCli("export " + trace + " " + other + " -f kineto -o " + dir + "/hta");
  ASSERT_EQ(kineto.exit_code, 0) << kineto.err;
  EXPECT_THAT(ReadFileOrDie(dir + "/hta/rank3.trace.json"), HasSubstr("\"rank\": 3"));
  EXPECT_THAT(ReadFileOrDie(dir + "/hta/rank5.trace.json"), HasSubstr("\"rank\": 5"));
  CliResult one = RunCli("export " + trace + " -f kineto -o " + dir + "/one.json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(ReadFileOrDie(dir + "/one.json"), HasSubstr("\"distributedInfo\""));
}

TEST(ExportCliTest, UsageErrorsComeBeforeReadingTraces) {
  const std::string dir = MakeTempDir();
  // The trace does not exist: the output problem is what is reported, with exit status 2.
  for (const std::string& args :
       {"export missing.wst -o " + dir + "/x.json",  // no --format
        "export missing.wst --format svg -o " + dir + "/x.json",
        std::string("export missing.wst --format chrome"),  // no -o
        "export missing.wst --format chrome -o " + dir + "/no/such/dir/x.json",
        "export missing.wst --format chrome -o " + dir}) {
    CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(CountLines(r.err), 1) << r.err;
    EXPECT_THAT(r.err, ::testing::StartsWith("warpscope: ")) << r.err;
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("missing.wst"))) << r.err;
  }
  CliResult bad_trace = RunCli("export " + dir + "/missing.wst -f chrome -o " + dir + "/x.json");
  EXPECT_EQ(bad_trace.exit_code, 1);
}

// Runs the CLI with PATH set to `path` alone (the shell and the CLI are named by absolute
// paths), so that the python3 it finds is the test's.
CliResult RunCliWithPath(const std::string& path, const std::string& args) {
  const std::string saved = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  setenv("PATH", path.c_str(), 1);
  CliResult r = RunCli(args);
  setenv("PATH", saved.c_str(), 1);
  return r;
}

void WriteScript(const std::string& path, const std::string& body) {
  WriteFileOrDie(path, "#!/bin/sh\n" + body);
  ASSERT_EQ(chmod(path.c_str(), 0755), 0);
}

TEST(ExportCliTest, ParquetNeedsPythonWithThePackageAndPyarrow) {
  const std::string trace = ExportFixturePath();
  const std::string empty = MakeTempDir();
  CliResult no_python = RunCliWithPath(empty, "export " + trace + " -f parquet -o " + empty + "/pq");
  EXPECT_EQ(no_python.exit_code, 2);
  EXPECT_EQ(CountLines(no_python.err), 1) << no_python.err;
  EXPECT_THAT(no_python.err, HasSubstr("warpscope: no python3 on PATH; --format parquet is written "
                                       "by the warpscope Python package with pyarrow"));

  // A python3 without pyarrow or the package: its probe fails, and nothing else is run.
  const std::string bare = MakeTempDir();
  WriteScript(bare + "/python3", "echo \"$@\" >> " + bare + "/calls\nexit 3\n");
  CliResult missing = RunCliWithPath(bare, "export " + trace + " -f parquet -o " + bare + "/pq");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(CountLines(missing.err), 1) << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("install both (pip install ./python pyarrow)"));
  EXPECT_EQ(CountLines(ReadFileOrDie(bare + "/calls")), 1);  // the probe only
}

TEST(ExportCliTest, ParquetRunsThePythonPackage) {
  const std::string trace = ExportFixturePath();
  const std::string dir = MakeTempDir();
  // Passes the probe (-c ...), records the real call and fails with status 4 as a writer might.
  WriteScript(dir + "/python3",
              "if [ \"$1\" = -c ]; then exit 0; fi\necho \"$@\" > " + dir + "/call\nexit 4\n");
  CliResult r = RunCliWithPath(dir, "export " + trace + " -f parquet -o " + dir + "/pq");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(ReadFileOrDie(dir + "/call"),
            "-m warpscope export --format parquet -o " + dir + "/pq " + trace + "\n");
}

// The package beside the CLI (build/python: a link to python/warpscope, made by CMake) comes
// first on the PYTHONPATH that python3 gets, before the one the user had.
TEST(ExportCliTest, ParquetRunsThePackageBesideTheCli) {
  const std::string trace = ExportFixturePath();
  const std::string dir = MakeTempDir();
  WriteScript(dir + "/python3", "echo \"$PYTHONPATH\" >> " + dir + "/paths\n");
  setenv("PYTHONPATH", "/elsewhere", 1);
  CliResult r = RunCliWithPath(dir, "export " + trace + " -f parquet -o " + dir + "/pq");
  unsetenv("PYTHONPATH");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string paths = ReadFileOrDie(dir + "/paths");
  ASSERT_EQ(CountLines(paths), 2) << paths;  // the probe, then the export
  const std::string first = paths.substr(0, paths.find(':'));
  char* beside = realpath(first.c_str(), nullptr);
  char* built = realpath((std::string(std::getenv("WARPSCOPE_BUILD_DIR")) + "/python").c_str(),
                         nullptr);
  ASSERT_NE(beside, nullptr) << paths;
  ASSERT_NE(built, nullptr);
  EXPECT_EQ(std::string(beside), std::string(built));
  free(beside);
  free(built);
  EXPECT_THAT(paths, HasSubstr(":/elsewhere\n"));
}

// -o DIR is checked as every output path is, before python3 runs: a new directory goes into
// one that exists (no tree of directories is made for a mistyped path); a file is refused.
TEST(ExportCliTest, ParquetOutputIsCheckedAsEveryOutput) {
  const std::string trace = ExportFixturePath();
  const std::string dir = MakeTempDir();
  WriteScript(dir + "/python3", "echo \"$@\" >> " + dir + "/calls\n");
  CliResult deep = RunCliWithPath(dir, "export " + trace + " -f parquet -o " + dir + "/a/b/pq");
  EXPECT_EQ(deep.exit_code, 2);
  EXPECT_EQ(deep.err, "warpscope: -o '" + dir + "/a/b/pq': directory '" + dir +
                          "/a/b' does not exist; create it first or choose another path\n");
  struct stat st {};
  EXPECT_NE(stat((dir + "/a").c_str(), &st), 0);
  // The same words as a file output's (record -o) in the same place.
  CliResult file = RunCli("export " + trace + " -f chrome -o " + dir + "/a/b/x.json");
  EXPECT_THAT(file.err, HasSubstr("/a/b' does not exist; create it first or choose another path"));

  WriteFileOrDie(dir + "/taken", "not a directory");
  CliResult taken = RunCliWithPath(dir, "export " + trace + " -f parquet -o " + dir + "/taken");
  EXPECT_EQ(taken.exit_code, 2);
  EXPECT_EQ(taken.err, "warpscope: -o '" + dir +
                           "/taken' is a file, not a directory; choose another path\n");
  struct stat calls {};
  EXPECT_NE(stat((dir + "/calls").c_str(), &calls), 0);  // python3 never ran
}

}  // namespace
}  // namespace warpscope

namespace warpscope {
namespace {

// An API call recorded with its stack carries it in its args, for Perfetto's details panel.
TEST(ExportChromeStacksTest, ApiCallsCarryTheirCallSiteAndStack) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(
      testing::WriteTempFile(testing::FixtureWire("synthetic/stacks.textproto")));
  ASSERT_TRUE(model.ok()) << model.status();
  const TraceModel* models[] = {&*model};
  const std::string json = ExportChromeTraceJson(models);
  EXPECT_THAT(json, ::testing::HasSubstr(
                        "\"call_site\":\"train.py:57 train_step\",\"stack\":[\"_tensor.py:1030 "
                        "Tensor.item\",\"train.py:57 train_step\",\"train.py:80 <module>\"]"));
  EXPECT_THAT(json, ::testing::HasSubstr(
                        "\"call_site\":\"launched from a thread with no Python frames\",\"stack\":"
                        "[\"libtorch_cuda.so+0x1234\",\"libc.so.6+0x94ac3\"]"));
  // cudaDeviceSynchronize has no stack: no stack args.
  const size_t device_sync = json.find("\"name\":\"cudaDeviceSynchronize\"");
  ASSERT_NE(device_sync, std::string::npos);
  EXPECT_EQ(json.substr(device_sync, json.find('}', device_sync) - device_sync).find("stack"),
            std::string::npos);
}

// Loaded as the command loads it (no event kept, no index from calls to stacks) with a slice
// that starts inside a call: the call's stack, recorded as it began, before the slice, is
// still joined to it.
TEST(ExportChromeStacksTest, ACallThatBeganBeforeTheSliceKeepsItsStack) {
  TraceModelOptions options;
  options.keep_events = 0;
  options.index_call_stacks = false;
  options.slice = TimeSlice{10000, 20000};  // inside the copy's call, 5000 to 30000
  absl::StatusOr<TraceModel> model = TraceModel::Load(
      testing::WriteTempFile(testing::FixtureWire("synthetic/stacks.textproto")), options);
  ASSERT_TRUE(model.ok()) << model.status();
  const TraceModel* models[] = {&*model};
  const std::string json = ExportChromeTraceJson(models);
  const size_t call = json.find("\"correlation\":3,");
  ASSERT_NE(call, std::string::npos) << json;
  EXPECT_THAT(json.substr(call, json.find('}', call) - call),
              ::testing::HasSubstr("\"call_site\":\"train.py:57 train_step\""));
  EXPECT_EQ(json.find("\"correlation\":1,"), std::string::npos);  // outside the slice
}

}  // namespace
}  // namespace warpscope
