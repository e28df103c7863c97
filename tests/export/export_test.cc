// The exporters on tests/export/export_small.textproto: the Chrome trace-event JSON follows
// the format's rules (every event has ph/ts/pid/tid, complete events a duration, async and
// flow events pair up, counters carry numbers) and holds the fixture's events where they
// belong; the Kineto JSON has what Holistic Trace Analysis reads; the CLI checks its output
// before reading traces and hands Parquet to the Python package.
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analyzers/analyses/export_chrome.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "analyzers/analyses/export_kineto.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/export/export_fixture.h"
#include "tests/reader/cli_test_util.h"
#include "tests/reader/trace_test_util.h"

namespace warpscope {
namespace {

using ::google::protobuf::ListValue;
using ::google::protobuf::Struct;
using ::google::protobuf::Value;
using ::testing::HasSubstr;
using ::warpscope::testing::CliResult;
using ::warpscope::testing::CountLines;
using ::warpscope::testing::ExportFixturePath;
using ::warpscope::testing::MakeTempDir;
using ::warpscope::testing::ReadFileOrDie;
using ::warpscope::testing::RunCli;
using ::warpscope::testing::WriteFileOrDie;

TraceModel Load(const std::string& path) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

Struct ParseJson(const std::string& json) {
  Struct out;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &out);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json.substr(0, 500);
  return out;
}

const Value* Field(const Value& v, const std::string& key) {
  const auto& fields = v.struct_value().fields();
  auto it = fields.find(key);
  return it == fields.end() ? nullptr : &it->second;
}
std::string Str(const Value& v, const std::string& key) {
  const Value* f = Field(v, key);
  return f != nullptr ? f->string_value() : "";
}
double Num(const Value& v, const std::string& key) {
  const Value* f = Field(v, key);
  return f != nullptr ? f->number_value() : -1;
}
double Arg(const Value& v, const std::string& key) {
  const Value* args = Field(v, "args");
  return args != nullptr ? Num(*args, key) : -1;
}
bool HasArg(const Value& v, const std::string& key) {
  const Value* args = Field(v, "args");
  return args != nullptr && Field(*args, key) != nullptr;
}

std::vector<Value> Events(const Struct& root) {
  auto it = root.fields().find("traceEvents");
  EXPECT_NE(it, root.fields().end());
  if (it == root.fields().end()) return {};
  const ListValue& list = it->second.list_value();
  return {list.values().begin(), list.values().end()};
}

std::vector<Value> Select(const std::vector<Value>& events, const std::string& ph,
                          const std::string& name = "") {
  std::vector<Value> out;
  for (const Value& e : events) {
    if (Str(e, "ph") == ph && (name.empty() || Str(e, "name") == name)) out.push_back(e);
  }
  return out;
}

// The rules of the trace-event format that viewers rely on.
void ExpectWellFormed(const std::vector<Value>& events) {
  const std::set<std::string> known = {"X", "b", "e", "i", "s", "f", "C", "M"};
  std::map<std::tuple<double, std::string, double>, int> open_async;  // (pid, cat, id)
  std::map<double, int> flows;                                        // id -> s minus f
  for (const Value& e : events) {
    const std::string ph = Str(e, "ph");
    ASSERT_TRUE(known.count(ph)) << "ph " << ph;
    for (const char* key : {"ph", "ts", "pid", "tid", "name"}) {
      EXPECT_NE(Field(e, key), nullptr) << key << " missing in a " << ph << " event";
    }
    EXPECT_GE(Num(e, "ts"), 0);
    if (ph == "X") {
      EXPECT_GE(Num(e, "dur"), 0) << Str(e, "name");
    }
    if (ph == "b") ++open_async[{Num(e, "pid"), Str(e, "cat"), Num(e, "id")}];
    if (ph == "e") --open_async[{Num(e, "pid"), Str(e, "cat"), Num(e, "id")}];
    if (ph == "s") ++flows[Num(e, "id")];
    if (ph == "f") {
      --flows[Num(e, "id")];
      EXPECT_EQ(Str(e, "bp"), "e");
    }
    if (ph == "C") {
      const Value* args = Field(e, "args");
      ASSERT_NE(args, nullptr);
      ASSERT_FALSE(args->struct_value().fields().empty());
      for (const auto& [key, value] : args->struct_value().fields()) {
        EXPECT_EQ(value.kind_case(), Value::kNumberValue) << key;
      }
    }
  }
  for (const auto& [key, count] : open_async) EXPECT_EQ(count, 0) << "async id " << std::get<2>(key);
  for (const auto& [id, count] : flows) EXPECT_EQ(count, 0) << "flow id " << id;
}

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
  EXPECT_EQ(Num(*info, "world_size"), 1);
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
  EXPECT_EQ(Select(events, "s").size(), 4u);
  for (const Value& f : Select(events, "f")) EXPECT_EQ(Str(f, "cat"), "ac2g");
}

TEST(ExportKinetoTest, RanksClaimedTwiceFallBackToPositions) {
  TraceModel first = Load(ExportFixturePath(0, "3"));
  TraceModel second = Load(ExportFixturePath(0, "3"));
  const TraceModel* models[] = {&first, &second};
  const std::vector<KinetoTraceFile> files = ExportKinetoTraces(models);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].file_name, "rank0.trace.json");
  EXPECT_EQ(files[1].file_name, "rank1.trace.json");
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
  EXPECT_THAT(ReadFileOrDie(dir + "/hta/rank3.trace.json"), HasSubstr("\"rank\":3"));
  EXPECT_THAT(ReadFileOrDie(dir + "/hta/rank5.trace.json"), HasSubstr("\"world_size\":2"));
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

}  // namespace
}  // namespace warpscope
