// `warpscope record` launching a program without a GPU: the program's exit status comes back,
// a command that cannot run is said once (127), a killed program's signal is reported (128 +
// signal), a refused trace name runs nothing, and SIGTERM sent to the launcher reaches the
// program. On a job of many processes: each rank expands the user's pattern in its own
// environment, the launched process that did no work leaves no trace, a name two ranks share
// gets "_<pid>" for the second, every trace carries one job id, and `record` lists every trace
// of the run with its rank and a total. Needs the injected library beside the CLI (the full
// build; skipped in the analyzers-only build, which has none).
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"

namespace warpscope::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::StartsWith;

// The names in a directory.
std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.insert(name);
    }
    closedir(d);
  }
  return names;
}

std::string ConfigValue(const TraceHeader& h, const std::string& key) {
  for (const auto& [k, v] : h.config) {
    if (k == key) return v;
  }
  return "";
}

class RecordLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* build = std::getenv("WARPSCOPE_BUILD_DIR");
    build_ = build != nullptr ? build : ".";
    struct stat st;
    if (stat((build_ + "/lib/libwarpscope.so").c_str(), &st) != 0) {
      GTEST_SKIP() << "no lib/libwarpscope.so in " << build_ << " (analyzers-only build)";
    }
    process_ = build_ + "/bin/trace_writing_process";
    dir_ = MakeTempDir();
  }
  static bool Exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0;
  }

  // Loads each trace and checks what every rank's header says: its rank, the launch's
  // variables, and one job id for all. Returns the job id.
  std::string ExpectRanks(const std::vector<std::pair<std::string, int64_t>>& traces) {
    std::string job_id;
    for (const auto& [name, rank] : traces) {
      absl::StatusOr<TraceModel> m = TraceModel::Load(dir_ + "/" + name);
      EXPECT_TRUE(m.ok()) << name << ": " << m.status();
      if (!m.ok()) continue;
      EXPECT_EQ(HeaderRank(m->header), rank) << name;
      EXPECT_EQ(m->kernels.size(), 5u) << name;
      EXPECT_NE(ConfigValue(m->header, "WARPSCOPE_LAUNCHER_PID"), "") << name;
      if (job_id.empty()) job_id = m->header.job_id;
      EXPECT_EQ(m->header.job_id, job_id) << name;
    }
    return job_id;
  }

  std::string build_, process_, dir_;
};

TEST_F(RecordLaunchTest, ProgramsExitStatusComesBack) {
  CliResult r = RunCli(absl::StrCat("record -q -o ", dir_, "/t.wst -- sh -c 'exit 3'"));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(RecordLaunchTest, ACommandThatCannotRunIsSaidOnce) {
  CliResult r = RunCli(absl::StrCat("record -o ", dir_, "/t.wst -- ", dir_, "/no_such_program"));
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warpscope: cannot run"));
  EXPECT_THAT(r.err, HasSubstr("No such file or directory; check the command and PATH"));
}

TEST_F(RecordLaunchTest, AKilledProgramGives128PlusItsSignal) {
  CliResult r = RunCli(absl::StrCat("record -o ", dir_, "/t.wst -- sh -c 'kill -TERM $$'"));
  EXPECT_EQ(r.exit_code, 128 + 15) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warpscope: sh was killed by signal 15"));
}

TEST_F(RecordLaunchTest, ARefusedTraceNameRunsNothing) {
  std::ofstream(dir_ + "/old.wst") << "an earlier trace";
  const std::string marker = dir_ + "/ran";
  CliResult r = RunCli(absl::StrCat("record -o ", dir_, "/old.wst -- touch ", marker));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("exists; pass -f/--force-overwrite to replace it"));
  EXPECT_FALSE(Exists(marker)) << "the program ran";
  // With -f the same run goes ahead.
  r = RunCli(absl::StrCat("record -q -f -o ", dir_, "/old.wst -- touch ", marker));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Exists(marker));
}

// SIGTERM to the launcher is forwarded: the program (which would wait 30 s) handles it and
// exits 7, and `record` returns that. (A launcher killed by the signal itself would give 143
// and the program would not see it.)
TEST_F(RecordLaunchTest, SigtermToTheLauncherReachesTheProgram) {
  const std::string marker = dir_ + "/got_term";
  const std::string script = absl::StrCat(
      build_, "/bin/warpscope record -q -o ", dir_, "/t.wst -- sh -c 'trap \"touch ", marker,
      "; exit 7\" TERM; sleep 30 & wait' & p=$!; sleep 0.5; kill -TERM $p; wait $p");
  const int status = std::system(script.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_TRUE(Exists(marker));
}

// ---------------------------------------------------------------------------------------
// A job of many processes. Each rank is trace_writing_process, which names, opens and closes
// its trace with the library's own code (the real shim cannot start a session without a GPU).

// A script starts three processes with RANK=0..2.
TEST_F(RecordLaunchTest, EachRankOfAScriptExpandsThePatternItself) {
  CliResult r = RunCli(absl::StrCat(
      "record -o '", dir_, "/run_%q{RANK}.wst' -- sh -c 'for r in 0 1 2; do RANK=$r ", process_,
      " --kernels 5 & done; wait'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Names(dir_), (std::set<std::string>{"run_0.wst", "run_1.wst", "run_2.wst"}));
  const std::string job_id =
      ExpectRanks({{"run_0.wst", 0}, {"run_1.wst", 1}, {"run_2.wst", 2}});
  EXPECT_THAT(job_id, MatchesRegex("warpscope-record=.+:[0-9]+:[0-9]+"));
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_THAT(r.err, HasSubstr(absl::StrCat("warpscope: trace ", dir_, "/run_", rank,
                                              ".wst (rank ", rank,
                                              "): 5 kernels, 0 memcpy/memset, 0 API calls, 0 NVTX "
                                              "ranges, ")));
  }
  EXPECT_THAT(r.err, HasSubstr("\nwarpscope: 3 traces: 15 kernels, 0 memcpy/memset, 0 API calls, "
                               "0 NVTX ranges, 0 dropped\n"));
  EXPECT_EQ(CountLines(r.err), 4) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("no trace")));
}

// torchrun's shape: the launched process opens a trace too (it initializes CUDA) but launches
// nothing; its ranks do the work. Its trace is removed, and record says nothing about it.
TEST_F(RecordLaunchTest, ALauncherWithoutWorkLeavesNoTrace) {
  CliResult r = RunCli(absl::StrCat("record -o '", dir_, "/run_%q{RANK}.wst' -- ", process_,
                                    " --children 3"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Names(dir_), (std::set<std::string>{"run_0.wst", "run_1.wst", "run_2.wst"}));
  ExpectRanks({{"run_0.wst", 0}, {"run_1.wst", 1}, {"run_2.wst", 2}});
  EXPECT_THAT(r.err, StartsWith(absl::StrCat("warpscope: trace ", dir_, "/run_0.wst (rank 0)")));
  EXPECT_THAT(r.err, Not(AnyOf(HasSubstr("run_.wst"), HasSubstr("did not initialize"))));
}

TEST_F(RecordLaunchTest, TheFolderFormWritesOneTracePerRankInANewFolder) {
  CliResult r = RunCli(absl::StrCat("record -o ", dir_, "/job/ -- ", process_, " --children 2"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Names(dir_ + "/job"), (std::set<std::string>{"rank0.wst", "rank1.wst"}));
  ExpectRanks({{"job/rank0.wst", 0}, {"job/rank1.wst", 1}});
  EXPECT_THAT(r.err, HasSubstr("warpscope: 2 traces: 10 kernels"));
}

// Two processes that both say RANK=0: the second steps aside to <name>_<pid>, and both are
// listed.
TEST_F(RecordLaunchTest, ANameTwoRanksShareGetsThePidForTheSecond) {
  CliResult r = RunCli(absl::StrCat("record -o '", dir_, "/run_%q{RANK}.wst' -- sh -c 'RANK=0 ",
                                    process_, " --kernels 5; RANK=0 ", process_,
                                    " --kernels 5'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::set<std::string> names = Names(dir_);
  ASSERT_EQ(names.size(), 2u) << r.err;
  EXPECT_EQ(*names.begin(), "run_0.wst");
  EXPECT_THAT(*names.rbegin(), MatchesRegex("run_0_[0-9]+\\.wst"));
  ExpectRanks({{"run_0.wst", 0}, {*names.rbegin(), 0}});
  EXPECT_THAT(r.err, HasSubstr("warpscope: 2 traces: 10 kernels"));
}

// The launched process with work of its own keeps the name record checked; processes below it
// get "_<pid>" where the pattern does not name them apart.
TEST_F(RecordLaunchTest, ThePatternWithoutEscapesNamesTheLaunchedProcessAndSuffixesTheOthers) {
  CliResult r = RunCli(absl::StrCat("record -o ", dir_, "/t.wst -- ", process_,
                                    " --kernels 5 --children 2"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::set<std::string> names = Names(dir_);
  ASSERT_EQ(names.size(), 3u) << r.err;
  EXPECT_EQ(names.count("t.wst"), 1u);
  for (const std::string& name : names) EXPECT_THAT(name, MatchesRegex("t(_[0-9]+)?\\.wst"));
  EXPECT_THAT(r.err, HasSubstr("warpscope: 3 traces: 15 kernels"));
}

// A relative pattern names files in the directory record ran in, also for a rank that its
// launcher starts in another directory.
TEST_F(RecordLaunchTest, ARankStartedElsewhereWritesWhereRecordRan) {
  const std::string command = absl::StrCat(
      "cd ", dir_, " && ", build_, "/bin/warpscope record -q -o 'run_%q{RANK}.wst' -- sh -c 'cd / "
      "&& RANK=4 ", process_, " --kernels 5'");
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
  EXPECT_EQ(Names(dir_), (std::set<std::string>{"run_4.wst"}));
}

// Without record (WARPSCOPE_OUTPUT exported, as with a plain LD_PRELOAD): each process expands
// the pattern in its own environment; the launcher's job id names the run.
TEST_F(RecordLaunchTest, WithoutRecordEachProcessExpandsItsOwnPattern) {
  const std::string command = absl::StrCat(
      "env -u RANK -u WARPSCOPE_LAUNCHER_PID -u WARPSCOPE_START_NS TORCHELASTIC_RUN_ID=abc "
      "WARPSCOPE_OUTPUT='", dir_, "/run_%q{RANK}.wst' ", process_, " --children 3");
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
  EXPECT_EQ(Names(dir_), (std::set<std::string>{"run_0.wst", "run_1.wst", "run_2.wst"}));
  for (int rank = 0; rank < 3; ++rank) {
    absl::StatusOr<TraceModel> m = TraceModel::Load(absl::StrCat(dir_, "/run_", rank, ".wst"));
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->header.job_id, "TORCHELASTIC_RUN_ID=abc");
    EXPECT_EQ(HeaderRank(m->header), rank);
  }
}

}  // namespace
}  // namespace warpscope::testing
