// How a process names and opens its trace (libinject/trace_name.h) and what its header takes
// from the environment (libinject/header_environment.h): the pattern each process of a job
// expands, the step aside from a name another process of the run took (by the file's time),
// the removal of a trace without work, the job id and the rank variables.
#include "libinject/trace_name.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "libinject/header_environment.h"
#include "proto/settings/job_variables.h"
#include "tests/writer/packet_stream.h"

namespace warpscope {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;
using ::warpscope::testing::ParsePacketFile;
using ::warpscope::testing::TempDir;

using Env = std::map<std::string, std::string>;

GetEnvFn GetEnvOf(const Env& env) {
  return [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The environment `warpscope record` (pid 100) gives, with the user's pattern; `extra` added.
Env RecordEnv(const std::string& user_pattern, Env extra = {}) {
  extra["WARPSCOPE_LAUNCHER_PID"] = "100";
  extra["WARPSCOPE_START_NS"] = std::to_string(MonotonicNs() - 1'000'000'000);
  extra["WARPSCOPE_OUTPUT_PATTERN"] = user_pattern;
  return extra;
}

TEST(TraceNameTest, WithoutRecordEveryProcessExpandsItsPatternAsGiven) {
  const Env env = {{"RANK", "2"}};
  const TracePatternChoice choice = ChooseTracePattern("run_%q{RANK}.wst", 55, GetEnvOf(env));
  EXPECT_EQ(choice.pattern, "run_%q{RANK}.wst");
  EXPECT_FALSE(choice.step_aside_if_taken);
  // Nothing is appended even where every process would get the same name.
  EXPECT_EQ(ChooseTracePattern("run.wst", 55, GetEnvOf(env)).pattern, "run.wst");
}

TEST(TraceNameTest, RecordsOwnChildWritesTheNameRecordChecked) {
  const Env env = RecordEnv("run_%q{RANK}.wst");
  const TracePatternChoice choice = ChooseTracePattern("/t/run_.wst", 100, GetEnvOf(env));
  EXPECT_EQ(choice.pattern, "/t/run_.wst");
  EXPECT_FALSE(choice.step_aside_if_taken);
}

TEST(TraceNameTest, FilesPerWindowAndFlightDumpsFollowThePattern) {
  // record's child: the name record checked for window 1, but later windows need %w.
  Env env = RecordEnv("/t/run_w%w.wst");
  Config config;
  config.output_pattern = "/t/run_w1.wst";
  EXPECT_EQ(ChooseProcessPattern(config, 100, GetEnvOf(env)).pattern, "/t/run_w%w.wst");
  // A rank below it: its pattern as given.
  EXPECT_EQ(ChooseProcessPattern(config, 4000, GetEnvOf(env)).pattern, "/t/run_w%w_%p.wst");
  // Without %w, record's child keeps the checked name...
  env = RecordEnv("/t/run.wst");
  config.output_pattern = "/t/run.wst";
  EXPECT_EQ(ChooseProcessPattern(config, 100, GetEnvOf(env)).pattern, "/t/run.wst");
  // ...unless the flight recorder writes one file per dump: "_%w" before the extension.
  config.flight_recorder_s = 30;
  EXPECT_EQ(ChooseProcessPattern(config, 100, GetEnvOf(env)).pattern, "/t/run_%w.wst");
  EXPECT_EQ(WindowedPattern(config, "/t/job/"), "/t/job/rank%r_%w.wst");
  EXPECT_EQ(WindowedPattern(config, "/t/fr_%w_%p"), "/t/fr_%w_%p");
  // Without record: the pattern as given, made windowed.
  EXPECT_EQ(ChooseProcessPattern(config, 100, GetEnvOf({})).pattern, "/t/run_%w.wst");
}

TEST(TraceNameTest, ProcessesBelowItExpandTheUsersPattern) {
  // torchrun's ranks: RANK set in each, so the pattern names each apart as it is.
  Env env = RecordEnv("/t/run_%q{RANK}.wst", {{"RANK", "3"}});
  TracePatternChoice choice = ChooseTracePattern("/t/run_.wst", 4000, GetEnvOf(env));
  EXPECT_EQ(choice.pattern, "/t/run_%q{RANK}.wst");
  EXPECT_TRUE(choice.step_aside_if_taken);
  // The same pattern where RANK is unset (a data-loader worker, a compiler): "_%p" added.
  env.erase("RANK");
  EXPECT_EQ(ChooseTracePattern("/t/run_.wst", 4000, GetEnvOf(env)).pattern,
            "/t/run_%q{RANK}_%p.wst");
  env = RecordEnv("/t/run.wst");
  EXPECT_EQ(ChooseTracePattern("/t/run.wst", 4000, GetEnvOf(env)).pattern, "/t/run_%p.wst");
  // %p and %r (a rank, else the pid) always name each process apart; so does the folder form.
  for (const char* pattern : {"/t/run_%p.wst", "/t/run_%r.wst", "/t/job/"}) {
    env = RecordEnv(pattern);
    EXPECT_EQ(ChooseTracePattern("/t/x.wst", 4000, GetEnvOf(env)).pattern, pattern);
  }
  // A pattern without the user's original (an older launcher) falls back to the one given.
  env = {{"WARPSCOPE_LAUNCHER_PID", "100"}};
  EXPECT_EQ(ChooseTracePattern("/t/run_.wst", 4000, GetEnvOf(env)).pattern, "/t/run__%p.wst");
}

TEST(TraceNameTest, AFileIsTakenByThisRunWhenMadeAfterItsStart) {
  TempDir dir;
  const std::string path = dir.File("run_0.wst");
  { std::ofstream(path) << "x"; }
  const uint64_t now = RealtimeNs();
  EXPECT_TRUE(TakenByThisRun(path, now - 1'000'000'000));          // run began a second ago
  EXPECT_TRUE(TakenByThisRun(path, now + kFileClockSlackNs / 2));  // a clock a little behind
  EXPECT_FALSE(TakenByThisRun(path, now + 10'000'000'000));
  EXPECT_FALSE(TakenByThisRun(path, 0));  // start unknown
  EXPECT_FALSE(TakenByThisRun(dir.File("missing.wst"), now - 1'000'000'000));
  // A file from an hour ago is an older run's.
  const timespec hour_ago[2] = {{static_cast<time_t>(now / 1000000000 - 3600), 0},
                                {static_cast<time_t>(now / 1000000000 - 3600), 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), hour_ago, 0), 0);
  EXPECT_FALSE(TakenByThisRun(path, now - 1'000'000'000));
}

TEST(TraceNameTest, RunStartIsTheLaunchTimeInTheFileClock) {
  const uint64_t before = RealtimeNs();
  const Env env = {{"WARPSCOPE_START_NS", std::to_string(MonotonicNs() - 2'000'000'000)}};
  const uint64_t start = RunStartUnixNs(GetEnvOf(env));
  EXPECT_NEAR(static_cast<double>(before - start), 2e9, 5e7);
  EXPECT_EQ(RunStartUnixNs(GetEnvOf({})), 0u);
  const Env future = {{"WARPSCOPE_START_NS", std::to_string(MonotonicNs() + 10'000'000'000)}};
  EXPECT_EQ(RunStartUnixNs(GetEnvOf(future)), 0u);
}

TEST(TraceNameTest, OnlyAConfigWithoutWindowsRemovesATraceWithoutWork) {
  Config config;
  EXPECT_FALSE(CaptureWindowConfigured(config));
  config.delay_s = 1;
  EXPECT_TRUE(CaptureWindowConfigured(config));
  config = Config();
  config.duration_s = 1;
  EXPECT_TRUE(CaptureWindowConfigured(config));
  config = Config();
  config.capture_range = CaptureRange::kProfilerApi;
  EXPECT_TRUE(CaptureWindowConfigured(config));
}

// OpenProcessTrace for process `pid` (parent `ppid`) with the pattern `configured`; closes the
// trace after `kernels` kernels and returns the file it wrote ("" when it could not open;
// then *error says why).
std::string WriteProcessTrace(const Config& config, uint32_t pid, uint32_t ppid, const Env& env,
                              int kernels, std::string* error, bool* removed = nullptr) {
  HeaderRecord header;
  header.pid = pid;
  header.ppid = ppid;
  header.hostname = "node1";
  header.clock_domain = ClockDomain::kRealtime;
  header.time_base_ns = RealtimeNs();
  std::unique_ptr<TraceWriter> writer = OpenProcessTrace(config, header, GetEnvOf(env), error);
  if (writer == nullptr) return "";
  for (int i = 0; i < kernels; ++i) {
    writer->Write(KernelRecord{.start_ns = header.time_base_ns, .end_ns = header.time_base_ns + 5});
  }
  writer->Close(EndReason::kExit, RealtimeNs());
  if (removed != nullptr) *removed = writer->removed();
  return writer->path();
}

TEST(TraceNameTest, ASecondProcessWithTheSameNameStepsAsideToItsPid) {
  TempDir dir;
  Config config;
  config.output_pattern = dir.File("r.wst");  // what record's own child was given
  const Env env = RecordEnv(dir.File("run_%q{RANK}.wst"), {{"RANK", "0"}});
  std::string error;
  EXPECT_EQ(WriteProcessTrace(config, 201, 150, env, 1, &error), dir.File("run_0.wst")) << error;
  // Another process of the run with the same RANK (two launchers that both say 0).
  EXPECT_EQ(WriteProcessTrace(config, 202, 150, env, 1, &error), dir.File("run_0_202.wst"))
      << error;
  EXPECT_TRUE(ParsePacketFile(dir.File("run_0.wst")).packets[0].packet.has_header());
  // A file from before the run is an error, as without record, unless -f.
  const timespec old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, dir.File("run_0.wst").c_str(), old, 0), 0);
  EXPECT_EQ(WriteProcessTrace(config, 203, 150, env, 1, &error), "");
  EXPECT_THAT(error, HasSubstr(dir.File("run_0.wst") + " exists; pass -f/--force-overwrite"));
  config.force_overwrite = true;
  EXPECT_EQ(WriteProcessTrace(config, 204, 150, env, 1, &error), dir.File("run_0.wst")) << error;
  // record's own child never steps aside: its name was checked before the launch.
  config.force_overwrite = false;
  config.output_pattern = dir.File("run_0.wst");
  EXPECT_EQ(WriteProcessTrace(config, 205, 100, env, 1, &error), "");
  EXPECT_THAT(error, HasSubstr("exists"));
}

TEST(TraceNameTest, TheFolderFormMakesItsFolderAndNamesEachRank) {
  TempDir dir;
  Config config;
  config.output_pattern = dir.File("job/");  // exported WARPSCOPE_OUTPUT=DIR/, no record
  std::string error;
  EXPECT_EQ(WriteProcessTrace(config, 301, 1, {{"OMPI_COMM_WORLD_RANK", "4"}}, 1, &error),
            dir.File("job/rank4.wst"))
      << error;
  EXPECT_EQ(WriteProcessTrace(config, 302, 1, {}, 1, &error), dir.File("job/rankpid302.wst"))
      << error;
  unlink(dir.File("job/rank4.wst").c_str());
  unlink(dir.File("job/rankpid302.wst").c_str());
  rmdir(dir.File("job").c_str());
  config.output_pattern = dir.File("no/such/");
  EXPECT_EQ(WriteProcessTrace(config, 303, 1, {}, 1, &error), "");
  EXPECT_THAT(error, StartsWith("warpscope: cannot create the trace folder"));
  EXPECT_THAT(error, HasSubstr("running without profiling"));
}

TEST(TraceNameTest, ATraceWithoutWorkIsRemovedUnlessAWindowWasAskedFor) {
  TempDir dir;
  Config config;
  config.output_pattern = dir.File("launcher_%p.wst");
  std::string error;
  bool removed = false;
  const std::string path = WriteProcessTrace(config, 401, 1, {}, 0, &error, &removed);
  EXPECT_EQ(path, dir.File("launcher_401.wst")) << error;
  EXPECT_TRUE(removed);
  EXPECT_EQ(access(path.c_str(), F_OK), -1);
  config.capture_range = CaptureRange::kProfilerApi;
  EXPECT_EQ(WriteProcessTrace(config, 402, 1, {}, 0, &error, &removed),
            dir.File("launcher_402.wst"));
  EXPECT_FALSE(removed);
  EXPECT_EQ(access(dir.File("launcher_402.wst").c_str(), F_OK), 0);
}

TEST(HeaderEnvironmentTest, RankEnvironmentHasEveryJobVariableOnce) {
  Env env;
  int n = 0;
  for (std::span<const std::string_view> list :
       {std::span<const std::string_view>(kRankVariables),
        std::span<const std::string_view>(kWorldSizeVariables),
        std::span<const std::string_view>(kLocalRankVariables),
        std::span<const std::string_view>(kJobIdVariables)}) {
    for (std::string_view name : list) env[std::string(name)] = std::to_string(n++);
  }
  env["NODE_RANK"] = "1";
  env["CUDA_VISIBLE_DEVICES"] = "2,3";
  env["HOME"] = "/root";
  const KeyValueList rank_env = RankEnvironment(GetEnvOf(env));
  EXPECT_EQ(rank_env.size(), env.size() - 1);  // all but HOME
  for (const auto& [name, value] : env) {
    if (name != "HOME") {
      EXPECT_THAT(rank_env, Contains(Pair(name, value)));
    }
  }
  EXPECT_EQ(rank_env[0], std::make_pair(std::string("RANK"), env["RANK"]));
  EXPECT_TRUE(RankEnvironment(GetEnvOf({})).empty());
}

TEST(HeaderEnvironmentTest, JobIdIsTheLaunchersElseRecordsElseEmpty) {
  EXPECT_EQ(JobId(GetEnvOf({{"SLURM_JOB_ID", "81"}, {"TORCHELASTIC_RUN_ID", "abc"}}), "n1"),
            "TORCHELASTIC_RUN_ID=abc");
  EXPECT_EQ(JobId(GetEnvOf({{"PMIX_NAMESPACE", "ns"}, {"SLURM_JOB_ID", "81"}}), "n1"),
            "SLURM_JOB_ID=81");
  EXPECT_EQ(JobId(GetEnvOf({{"OMPI_MCA_ess_base_jobid", "7"}, {"TORCHELASTIC_RUN_ID", ""}}), "n1"),
            "OMPI_MCA_ess_base_jobid=7");
  EXPECT_EQ(
      JobId(GetEnvOf({{"WARPSCOPE_LAUNCHER_PID", "100"}, {"WARPSCOPE_START_NS", "5"}}), "node1"),
      "warpscope-record=node1:100:5");
  EXPECT_EQ(JobId(GetEnvOf({}), "n1"), "");
}

TEST(HeaderEnvironmentTest, HeaderGetsTheJobAndTheSettings) {
  std::vector<std::string> storage = {"RANK=1", "TORCHELASTIC_RUN_ID=r1",
                                      "WARPSCOPE_PM_INTERVAL=10us", "WARPSCOPE_OUTPUT=a.wst",
                                      "PATH=/bin"};
  std::vector<char*> environment;
  for (std::string& s : storage) environment.push_back(s.data());
  environment.push_back(nullptr);
  Config config;
  config.raw = {{"WARPSCOPE_OUTPUT", "a.wst"}};
  HeaderRecord header;
  header.hostname = "node1";
  AddEnvironmentToHeader(config, environment.data(), &header);
  EXPECT_EQ(header.job_id, "TORCHELASTIC_RUN_ID=r1");
  EXPECT_THAT(header.rank_env, Contains(Pair("RANK", "1")));
  EXPECT_THAT(header.rank_env, Contains(Pair("TORCHELASTIC_RUN_ID", "r1")));
  EXPECT_EQ(header.config, (KeyValueList{{"WARPSCOPE_OUTPUT", "a.wst"},
                                         {"WARPSCOPE_PM_INTERVAL", "10us"},
                                         {"effective.trace", TraceKindsString(config.trace)},
                                         {"effective.capture_range", "none"}}));
}

}  // namespace
}  // namespace warpscope
