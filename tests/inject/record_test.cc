// Tests for `warpscope record`'s planning (analyzers/launcher/record.h).
#include "analyzers/launcher/record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "analyzers/render/output_path.h"
#include "proto/writer/output_name.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::warpscope::testing::FixtureWire;
using ::warpscope::testing::MakeTempDir;
using ::warpscope::testing::WriteFileOrDie;

RecordRequest Req() {
  RecordRequest r;
  r.command = {"./app", "--flag"};
  return r;
}

TEST(RecordTest, BuildsEnvironmentAndKeepsUserPreload) {
  RecordRequest r = Req();
  r.delay = "2";
  r.duration = "500ms";
  r.trace = "cuda,nvtx,driver";
  auto plan = BuildRecordPlan(r, {{"LD_PRELOAD", "/usr/lib/libjemalloc.so"}}, "/opt/ws/lib/libwarpscope.so", 42, 7);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->env["LD_PRELOAD"], "/opt/ws/lib/libwarpscope.so:/usr/lib/libjemalloc.so");
  EXPECT_EQ(plan->env["CUDA_INJECTION64_PATH"], "/opt/ws/lib/libwarpscope.so");
  EXPECT_EQ(plan->env["NVTX_INJECTION64_PATH"], "/opt/ws/lib/libwarpscope.so");
  EXPECT_EQ(plan->env["WARPSCOPE_DELAY"], "2");
  EXPECT_EQ(plan->env["WARPSCOPE_DURATION"], "500ms");
  EXPECT_EQ(plan->env["WARPSCOPE_TRACE"], "cuda,nvtx,driver");
  EXPECT_EQ(plan->env["WARPSCOPE_LAUNCHER_PID"], "42");
  EXPECT_EQ(plan->env["WARPSCOPE_START_NS"], "7");
  EXPECT_TRUE(plan->warnings.empty());
}

TEST(RecordTest, FlightRecorderDumpsAreNamedPerDump) {
  RecordRequest r = Req();
  r.output = "run.wst";
  r.flight_recorder = "30";
  r.slow_step = "train_step";
  auto plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->output_pattern, "run_%w.wst");  // checked as run_1.wst, listed as run_*.wst
  EXPECT_EQ(plan->env["WARPSCOPE_FLIGHT_RECORDER"], "30");
  EXPECT_EQ(plan->env["WARPSCOPE_SLOW_STEP"], "train_step");
  r.output = "run_%w_%r.wst";
  plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->output_pattern, "run_%w_%r.wst");
  // A slow step without the flight recorder is refused before anything runs.
  r.flight_recorder.reset();
  plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("--slow-step"));
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("needs the flight recorder"));
}

TEST(RecordTest, PmSamplingFlagsBecomeEnvironment) {
  RecordRequest r = Req();
  r.pm_sampling = true;
  r.pm_interval = "20us";
  r.pm_buffer = "64M";
  auto plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->env["WARPSCOPE_PM_SAMPLING"], "1");
  EXPECT_EQ(plan->env["WARPSCOPE_PM_INTERVAL"], "20us");
  EXPECT_EQ(plan->env["WARPSCOPE_PM_BUFFER"], "64M");
  EXPECT_EQ(plan->env.count("WARPSCOPE_PM_METRICS"), 0u);
}

TEST(RecordTest, PcSamplingFlagsBecomeEnvironment) {
  RecordRequest r = Req();
  r.pc_sampling = true;
  auto plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->env["WARPSCOPE_PC_SAMPLING"], "1");
  EXPECT_EQ(plan->env.count("WARPSCOPE_PC_PERIOD"), 0u);
  r.pc_period = "12";
  plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->env["WARPSCOPE_PC_PERIOD"], "12");
  r.pc_period = "0";  // CUPTI's default
  EXPECT_TRUE(BuildRecordPlan(r, {}, "/s.so", 1, 1).ok());
  // An exported bad value is named as the variable.
  r.pc_period.reset();
  auto bad = BuildRecordPlan(r, {{"WARPSCOPE_PC_BUFFER_MB", "lots"}}, "/s.so", 1, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("WARPSCOPE_PC_BUFFER_MB='lots'"), std::string::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("set in the environment"), std::string::npos);
}

TEST(RecordTest, NvtxCaptureImpliesNvtxRange) {
  RecordRequest r = Req();
  r.nvtx_capture = "train@dom";
  auto plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->env["WARPSCOPE_CAPTURE_RANGE"], "nvtx");
  EXPECT_EQ(plan->env["WARPSCOPE_NVTX_CAPTURE"], "train@dom");
}

// A request that Req() turns bad with `set`, and a part of the error it must get.
struct BadRequest {
  void (*set)(RecordRequest&);
  std::string expect;
};

void ExpectRefused(const BadRequest& c) {
  RecordRequest r = Req();
  c.set(r);
  auto plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_FALSE(plan.ok()) << c.expect;
  EXPECT_NE(plan.status().message().find(c.expect), std::string::npos) << plan.status();
}

TEST(RecordTest, ClearErrors) {
  const BadRequest cases[] = {
      {[](RecordRequest& r) { r.delay = "soon"; }, "-y/--delay 'soon' is not a number of seconds"},
      {[](RecordRequest& r) { r.capture_range = "gpu"; }, "-c/--capture-range 'gpu' is not"},
      {[](RecordRequest& r) { r.capture_range = "nvtx"; }, "-c nvtx needs the range"},
      {[](RecordRequest& r) { r.capture_range_end = "repeat"; }, "needs -c cudaProfilerApi"},
      {[](RecordRequest& r) { r.trace = "cuda,osrt"; }, "-t/--trace 'cuda,osrt' is not"},
      {[](RecordRequest& r) { r.capture_signal = "KILL"; }, "--capture-signal 'KILL'"},
      {[](RecordRequest& r) { r.flush_interval_ms = "abc"; },
       "--flush-interval-ms 'abc' is not a flush interval in ms (10-600000); see warpscope "
       "record --help"},
      {[](RecordRequest& r) { r.buffer_size_mb = "300"; },
       "--buffer-size-mb '300' is not a buffer size in MiB (1-256)"},
      {[](RecordRequest& r) { r.device_buffer_mb = "0"; },
       "--device-buffer-mb '0' is not a device buffer size in MiB (1-1024)"},
      {[](RecordRequest& r) { r.log_level = "loud"; }, "--log-level 'loud' is not a log level"},
      {[](RecordRequest& r) { r.delay = "1e7m"; },
       "-y/--delay '1e7m' is not a number of seconds from 0 to 10000000"},
      {[](RecordRequest& r) { r.duration = "200000m"; }, "-d/--duration '200000m' is not"},
      {[](RecordRequest& r) { r.nvtx_capture = "@dom"; }, "-p/--nvtx-capture '@dom' is not"},
      {[](RecordRequest& r) {
         r.capture_range = "signal";
         r.capture_signal = "TERM";
       },
       "--capture-signal 'TERM' is also a termination signal"},
      {[](RecordRequest& r) { r.output = "run_%x"; }, "-o/--output: output name 'run_%x'"},
      {[](RecordRequest& r) { r.output = "/tmp"; },
       "-o/--output '/tmp' names a directory; write '/tmp/' for one trace per process in it, or "
       "name a file in it, e.g. '/tmp/run.wst'"},
      {[](RecordRequest& r) { r.output = "/tmp"; }, "names a directory"},
      {[](RecordRequest& r) { r.delay = std::string(5000, '7'); },
       absl::StrCat("-y/--delay '", std::string(80, '7'),
                    "...' (5000 bytes) is not a number of seconds")},
      {[](RecordRequest& r) { r.command.clear(); }, "needs a command"},
      {[](RecordRequest& r) { r.pm_interval = "20us"; }, "need --pm-sampling"},
      {[](RecordRequest& r) { r.pc_period = "12"; }, "--pc-period needs --pc-sampling"},
      {[](RecordRequest& r) {
         r.pc_sampling = true;
         r.pc_period = "4";
       },
       "--pc-period '4' is not an exponent N from 5 to 31"},
      {[](RecordRequest& r) {
         r.pc_sampling = true;
         r.pc_period = "fast";
       },
       "--pc-period 'fast' is not"},
      {[](RecordRequest& r) {
         r.pc_sampling = true;
         r.pm_sampling = true;
       },
       "--pc-sampling and --pm-sampling cannot share the GPU"},
      {[](RecordRequest& r) {
         r.pm_sampling = true;
         r.pm_interval = "5xs";
       },
       "--pm-interval '5xs': unknown unit 'xs'"},
      {[](RecordRequest& r) {
         r.pm_sampling = true;
         r.pm_buffer = "9G";
       },
       "--pm-buffer '9G': out of range"},
      {[](RecordRequest& r) {
         r.pm_sampling = true;
         r.pm_metrics = "a,,b";
       },
       "--pm-metrics 'a,,b'"},
      {[](RecordRequest& r) {
         r.capture_range = "signal";
         r.nvtx_capture = "x";
       },
       "only applies with -c nvtx"},
  };
  for (const BadRequest& c : cases) ExpectRefused(c);
}

TEST(RecordTest, TheTraceFileFollowsExportedVariablesWithoutFlags) {
  auto plain = BuildRecordPlan(Req(), {}, "/s.so", 1, 1);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->output_pattern, "warpscope_%p.wst");
  EXPECT_EQ(plain->output_name, "-o/--output");
  EXPECT_FALSE(plain->force_overwrite);

  const std::map<std::string, std::string> exported = {{"WARPSCOPE_OUTPUT", "/scratch/run_%p.wst"},
                                                       {"WARPSCOPE_FORCE_OVERWRITE", "yes"}};
  auto from_env = BuildRecordPlan(Req(), exported, "/s.so", 1, 1);
  ASSERT_TRUE(from_env.ok()) << from_env.status();
  EXPECT_EQ(from_env->output_pattern, "/scratch/run_%p.wst");
  EXPECT_EQ(from_env->output_name, "WARPSCOPE_OUTPUT");
  EXPECT_TRUE(from_env->force_overwrite);

  RecordRequest r = Req();
  r.output = "mine.wst";
  auto from_flag = BuildRecordPlan(r, exported, "/s.so", 1, 1);
  ASSERT_TRUE(from_flag.ok()) << from_flag.status();
  EXPECT_EQ(from_flag->output_pattern, "mine.wst");
  EXPECT_EQ(from_flag->output_name, "-o/--output");
  EXPECT_EQ(from_flag->env["WARPSCOPE_OUTPUT"], "mine.wst");

  auto dir = BuildRecordPlan(Req(), {{"WARPSCOPE_OUTPUT", "/tmp"}}, "/s.so", 1, 1);
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(std::string(dir.status().message()),
              StartsWith("WARPSCOPE_OUTPUT '/tmp' names a directory"));
}

TEST(RecordTest, WarnsWhenReplacingInjectionPaths) {
  auto plan = BuildRecordPlan(Req(), {{"NVTX_INJECTION64_PATH", "/usr/lib/libcupti.so"}}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_NE(plan->warnings[0].find("NVTX_INJECTION64_PATH"), std::string::npos);
}

TEST(RecordTest, UserWarpscopeVariablesAreValidatedToo) {
  auto plan = BuildRecordPlan(Req(), {{"WARPSCOPE_DELAY", "x"}}, "/s.so", 1, 1);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "WARPSCOPE_DELAY='x' is not a number of seconds (set in the environment; fix or "
            "unset it)");
  // A flag overrides the variable, and `-c none` overrides an exported capture range.
  RecordRequest r = Req();
  r.delay = "1";
  r.capture_range = "none";
  auto overridden = BuildRecordPlan(
      r, {{"WARPSCOPE_DELAY", "x"}, {"WARPSCOPE_CAPTURE_RANGE", "nvtx"}}, "/s.so", 1, 1);
  ASSERT_TRUE(overridden.ok()) << overridden.status();
  EXPECT_EQ(overridden->env["WARPSCOPE_CAPTURE_RANGE"], "none");
}

TEST(RecordTest, ExpectedTracePath) {
  auto p = ExpectedTracePath("/tmp/run_%p_%h.wst", 1234, "node7");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, "/tmp/run_1234_node7.wst");
  auto q = ExpectedTracePath("/tmp/run", 1, "h");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, "/tmp/run.wst");
}

TEST(RecordTest, ChildExitCode) {
  EXPECT_EQ(ChildExitCode(3 << 8), 3);
  EXPECT_EQ(ChildExitCode(SIGTERM), 128 + SIGTERM);
}

TEST(RecordTest, FindShimExplainsWhatIsMissing) {
  auto s = FindShim("/nonexistent/bin/warpscope", nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("WARPSCOPE_SHIM"), std::string::npos);
}

TEST(RecordTest, CheckOutputPathRefusesWhatCannotBeWritten) {
  const std::string dir = MakeTempDir();
  WriteFileOrDie(dir + "/file", "");
  EXPECT_EQ(CheckOutputPath("", "--svg", "tail.svg").status().message(), "--svg needs a file name");
  EXPECT_EQ(CheckOutputPath(dir + "/", "--svg", "tail.svg").status().message(),
            absl::StrCat("--svg '", dir, "/' is a directory; name a file in it, e.g. '", dir,
                         "/tail.svg'"));
  EXPECT_EQ(CheckOutputPath(dir + "/a/b.svg", "--svg", "tail.svg").status().message(),
            absl::StrCat("--svg '", dir, "/a/b.svg': directory '", dir,
                         "/a' does not exist; create it first or choose another path"));
  EXPECT_THAT(CheckOutputPath(dir + "/file/b.svg", "--svg", "tail.svg").status().message(),
              HasSubstr("is a file; choose another path"));
  EXPECT_THAT(
      std::string(
          CheckOutputPath(dir + "/" + std::string(5000, 'n'), "--svg", "t.svg").status().message()),
      HasSubstr(absl::StrCat("...' (", dir.size() + 5001,
                             " bytes): File name too long; choose another path")));
  absl::StatusOr<bool> fresh = CheckOutputPath(dir + "/new.svg", "--svg", "tail.svg");
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_FALSE(*fresh);
  absl::StatusOr<bool> existing = CheckOutputPath(dir + "/file", "--svg", "tail.svg");
  ASSERT_TRUE(existing.ok()) << existing.status();
  EXPECT_TRUE(*existing);
  absl::StatusOr<bool> bare = CheckOutputPath("new_in_cwd.svg", "--svg", "tail.svg");
  EXPECT_TRUE(bare.ok()) << bare.status();
}

TEST(RecordTest, CheckOutputPathRefusesADirectoryWithoutWritePermission) {
  if (geteuid() == 0) GTEST_SKIP() << "root may write in any directory";
  const std::string dir = MakeTempDir();
  ASSERT_EQ(chmod(dir.c_str(), 0500), 0);
  absl::StatusOr<bool> r = CheckOutputPath(dir + "/x.wst", "-o/--output", "run.wst");
  chmod(dir.c_str(), 0700);
  EXPECT_THAT(r.status().message(), HasSubstr("cannot create files in"));
}

TEST(RecordTest, CheckTraceDestinationRefusesAnExistingTraceWithoutForce) {
  const std::string dir = MakeTempDir();
  const std::string old = dir + "/old.wst";
  WriteFileOrDie(old, "x");
  absl::StatusOr<bool> refused = CheckTraceDestination(old, /*force_overwrite=*/false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(refused.status().message(),
            absl::StrCat("-o/--output '", old,
                         "' exists; pass -f/--force-overwrite to replace it, or choose another "
                         "name"));
  absl::StatusOr<bool> forced = CheckTraceDestination(old, /*force_overwrite=*/true);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_TRUE(*forced);
  absl::StatusOr<bool> fresh = CheckTraceDestination(dir + "/new.wst", false);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_FALSE(*fresh);
  EXPECT_THAT(CheckTraceDestination(dir + "/no/new.wst", true).status().message(),
              HasSubstr("does not exist"));
}

TEST(RecordTest, LiteralOutputPatternExpandsBackToThePath) {
  for (const std::string path :
       {"/tmp/run_100%_7.wst", "/tmp/a%%b%p%n.wst", "plain.wst", "/tmp/node1.cluster/x.wst", "%"}) {
    std::string out, error;
    ASSERT_TRUE(ExpandOutputPattern(
        LiteralOutputPattern(path), 99, "host", [](const char*) { return nullptr; },
        [](const std::string&) { return false; }, &out, &error))
        << path << ": " << error;
    // Names the CLI hands over always have an extension; "%" gets one on both sides.
    EXPECT_EQ(out, path == "%" ? "%.wst" : path);
  }
}

// The basic fixture with the two variables `record` sets, as the library writes them, and the
// rank `rank` ("": none).
std::string TraceOfLaunch(const std::string& launcher_pid, const std::string& start_ns,
                          const std::string& rank = "0") {
  return testing::TextprotoToWire(absl::StrReplaceAll(
      testing::ReadFileOrDie(testing::SourceDir() + "/tests/data/synthetic/basic.textproto"),
      {{"config { key: \"WARPSCOPE_OUTPUT\" value: \"trace-%p.wst\" }",
        absl::StrCat("config { key: \"WARPSCOPE_LAUNCHER_PID\" value: \"", launcher_pid,
                     "\" } config { key: \"WARPSCOPE_START_NS\" value: \"", start_ns, "\" }")},
       {"rank_env { key: \"RANK\" value: \"0\" }",
        rank.empty() ? "" : absl::StrCat("rank_env { key: \"RANK\" value: \"", rank, "\" }")}}));
}

// A run of launcher 10 that started at CLOCK_MONOTONIC 20.
RecordedRun RunOf(const std::string& pattern, const std::string& child_trace,
                  bool existed = false) {
  return RecordedRun{.output_pattern = pattern, .child_trace = child_trace,
                     .child_trace_existed = existed, .launcher_pid = 10, .start_ns = 20};
}

constexpr char kBasicFigures[] =
    "5 kernels, 3 memcpy/memset, 9 API calls, 2 NVTX ranges, 0.000 s span, 0 dropped";

TEST(RecordTest, RecordOutcomeDescribesOnlyATraceOfThisLaunch) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/run.wst";
  const std::string reason =
      "(no process launched GPU work or pushed an NVTX range, or warpscope stepped aside; see "
      "the messages above)";
  EXPECT_EQ(RecordOutcome(RunOf(path, path)),
            absl::StrCat("warpscope: no trace at ", path, " ", reason));

  WriteFileOrDie(path, TraceOfLaunch("10", "20"));
  EXPECT_EQ(RecordOutcome(RunOf(path, path)),
            absl::StrCat("warpscope: trace ", path, " (rank 0): ", kBasicFigures));
  // Replaced with -f: still this launch's.
  EXPECT_THAT(RecordOutcome(RunOf(path, path, true)), StartsWith("warpscope: trace "));

  // Another launch's trace, or one taken without `record`, left in place.
  for (const std::string& other : {TraceOfLaunch("10", "21"), TraceOfLaunch("11", "20"),
                                   FixtureWire("synthetic/basic.textproto"), std::string("junk")}) {
    WriteFileOrDie(path, other);
    EXPECT_EQ(RecordOutcome(RunOf(path, path, true)),
              absl::StrCat("warpscope: no trace from this run ", reason, "; ", path,
                           " is the earlier file, left as it was"));
  }
  WriteFileOrDie(path, TraceOfLaunch("10", "21"));
  EXPECT_THAT(RecordOutcome(RunOf(path, path)), HasSubstr("was written by another process"));
  // Created by this run but unreadable (killed before its first write).
  WriteFileOrDie(path, "");
  EXPECT_THAT(RecordOutcome(RunOf(path, path)),
              StartsWith(absl::StrCat("warpscope: trace ", path, ": unreadable: ")));
}

// torchrun under record: its own name (RANK unset) has no trace, its ranks wrote theirs.
TEST(RecordTest, RecordOutcomeListsEveryTraceOfTheRunInRankOrder) {
  const std::string dir = MakeTempDir();
  const std::string pattern = dir + "/run_%q{RANK}.wst";
  for (const std::string rank : {"2", "0", "10", "1"}) {
    WriteFileOrDie(absl::StrCat(dir, "/run_", rank, ".wst"), TraceOfLaunch("10", "20", rank));
  }
  WriteFileOrDie(dir + "/run_1_4242.wst", TraceOfLaunch("10", "20", "1"));  // stepped aside
  WriteFileOrDie(dir + "/run__999.wst", TraceOfLaunch("10", "20", ""));  // no rank: last
  WriteFileOrDie(dir + "/run_7.wst", TraceOfLaunch("11", "20", "7"));     // another launch
  WriteFileOrDie(dir + "/run_8.wst", "not a trace");
  WriteFileOrDie(dir + "/walk_3.wst", TraceOfLaunch("10", "20", "3"));    // another name
  const RecordedRun run = RunOf(pattern, dir + "/run_.wst");
  EXPECT_EQ(FindRunTraces(run),
            (std::vector<std::string>{dir + "/run_0.wst", dir + "/run_1.wst",
                                      dir + "/run_1_4242.wst", dir + "/run_2.wst",
                                      dir + "/run_10.wst", dir + "/run__999.wst"}));
  const std::string outcome = RecordOutcome(run);
  EXPECT_THAT(outcome, StartsWith(absl::StrCat("warpscope: trace ", dir, "/run_0.wst (rank 0): ",
                                               kBasicFigures, "\n")));
  EXPECT_THAT(outcome, HasSubstr(absl::StrCat("warpscope: trace ", dir, "/run__999.wst: ")));
  EXPECT_THAT(outcome, ::testing::EndsWith(
                           "\nwarpscope: 6 traces: 30 kernels, 18 memcpy/memset, 54 API calls, "
                           "12 NVTX ranges, 0 dropped"));
  EXPECT_EQ(std::count(outcome.begin(), outcome.end(), '\n'), 6);
  EXPECT_THAT(outcome, ::testing::Not(HasSubstr("did not initialize CUDA")));
}

TEST(RecordTest, RecordOutcomeFindsTheFolderFormsTraces) {
  const std::string dir = MakeTempDir();
  ASSERT_EQ(mkdir((dir + "/job").c_str(), 0755), 0);
  WriteFileOrDie(dir + "/job/rank1.wst", TraceOfLaunch("10", "20", "1"));
  WriteFileOrDie(dir + "/job/rank0.wst", TraceOfLaunch("10", "20", "0"));
  WriteFileOrDie(dir + "/job/notes.txt", "x");
  EXPECT_EQ(FindRunTraces(RunOf(dir + "/job/", dir + "/job/rankpid5.wst")),
            (std::vector<std::string>{dir + "/job/rank0.wst", dir + "/job/rank1.wst"}));
}

// The pattern as given travels to every process, from this directory: a process that a
// launcher starts elsewhere still writes here.
TEST(RecordTest, TheUsersPatternTravelsToEveryProcess) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  const std::string here = LiteralOutputPattern(cwd) + (std::string(cwd) == "/" ? "" : "/");
  for (const std::string pattern : {"run_%q{RANK}.wst", "out/", "run_%r", "/abs/run_%p"}) {
    RecordRequest r = Req();
    r.output = pattern;
    auto plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->env["WARPSCOPE_OUTPUT_PATTERN"], pattern[0] == '/' ? pattern : here + pattern);
    EXPECT_EQ(plan->output_pattern, pattern);
  }
  // Exported in the shell, it travels the same way.
  auto plan = BuildRecordPlan(Req(), {{"WARPSCOPE_OUTPUT", "job/"}}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->env["WARPSCOPE_OUTPUT_PATTERN"], here + "job/");
}

TEST(RecordTest, ADirectoryWithoutTheSlashIsRefusedWithTheFolderForm) {
  const std::string dir = MakeTempDir();
  RecordRequest r = Req();
  r.output = dir;
  auto refused = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  EXPECT_EQ(refused.status().message(),
            absl::StrCat("-o/--output '", dir, "' names a directory; write '", dir,
                         "/' for one trace per process in it, or name a file in it, e.g. '", dir,
                         "/run.wst'"));
  r.output = dir + "/..";
  EXPECT_THAT(BuildRecordPlan(r, {}, "/s.so", 1, 1).status().message(),
              HasSubstr("names a directory"));
  r.output = dir + "/";
  EXPECT_TRUE(BuildRecordPlan(r, {}, "/s.so", 1, 1).ok());
}

TEST(RecordTest, PrepareTraceDestinationMakesTheFolder) {
  const std::string dir = MakeTempDir();
  RecordRequest r = Req();
  r.output = dir + "/job/";
  auto plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<std::string> path = ExpectedTracePath(plan->output_pattern, 77, "h");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_THAT(*path, ::testing::MatchesRegex(".*/job/rank(pid77|[0-9]+)\\.wst"));
  absl::StatusOr<bool> existed = PrepareTraceDestination(*plan, *path);
  ASSERT_TRUE(existed.ok()) << existed.status();
  EXPECT_FALSE(*existed);
  struct stat st {};
  EXPECT_EQ(stat((dir + "/job").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  // One level only: a missing parent is said.
  r.output = dir + "/a/b/";
  plan = BuildRecordPlan(r, {}, "/s.so", 1, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(std::string(PrepareTraceDestination(*plan, dir + "/a/b/rank0.wst").status().message()),
              StartsWith(absl::StrCat("-o/--output: cannot create the trace folder '", dir,
                                      "/a/b': No such file or directory")));
}

}  // namespace
}  // namespace warpscope
