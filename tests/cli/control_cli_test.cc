// `warpscope start|stop|dump|status` against two processes that listen as injected ones do
// (control_listening_process: ranks 0 and 1 of one job, with a fake capture state): the lines,
// the table and the exit statuses, then the usage and input errors. Also the client's pure
// parts: /proc/net/unix lines, rank lists and the choice by rank and job.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzers/launcher/control_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"

namespace warpscope::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

// A listening process with RANK=rank and SLURM_JOB_ID=job; its pid once it listens, or -1.
pid_t StartListener(const std::string& program, int rank, const std::string& job, bool flight) {
  int out[2];
  if (pipe(out) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("SLURM_JOB_ID", job.c_str(), 1);
    setenv("WARPSCOPE_TEST_FLIGHT", flight ? "1" : "0", 1);
    execl(program.c_str(), program.c_str(), nullptr);
    _exit(127);
  }
  close(out[1]);
  char line[32] = {0};
  FILE* from = fdopen(out[0], "r");
  const bool listening = from != nullptr && std::fgets(line, sizeof line, from) != nullptr &&
                         std::string(line) == "listening\n";
  if (from != nullptr) std::fclose(from);
  if (!listening) {
    if (child > 0) waitpid(child, nullptr, 0);
    return -1;
  }
  return child;
}

class ControlCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* build = std::getenv("WARPSCOPE_BUILD_DIR");
    const std::string program =
        std::string(build != nullptr ? build : ".") + "/bin/control_listening_process";
    job_ = absl::StrCat("ctl-test-", getpid());
    rank0_ = StartListener(program, 0, job_, /*flight=*/true);
    rank1_ = StartListener(program, 1, job_, /*flight=*/false);
    ASSERT_GT(rank0_, 0) << program << " did not start listening";
    ASSERT_GT(rank1_, 0) << program << " did not start listening";
  }
  void TearDown() override {
    for (pid_t pid : {rank0_, rank1_}) {
      if (pid <= 0) continue;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  std::string Line(pid_t pid, int rank, const std::string& what) const {
    return absl::StrCat("warpscope: pid ", pid, " (rank ", rank, "): ", what, "\n");
  }

  std::string job_;
  pid_t rank0_ = -1;
  pid_t rank1_ = -1;
};

TEST_F(ControlCliTest, StatusListsBothProcessesOfTheJob) {
  CliResult r = RunCli("status --job " + job_);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CountLines(r.out), 4) << r.out;  // header, rule and two rows
  EXPECT_THAT(r.out, MatchesRegex("(.|\n)*pid +rank +host +job +trace +window(.|\n)*"));
  EXPECT_THAT(r.out, MatchesRegex(absl::StrCat("(.|\n)*", rank0_, " +0 .*SLURM_JOB_ID=", job_,
                                               " +/tmp/control listening ", rank0_,
                                               "\\.wst +closed +0 +signal +on(.|\n)*")));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("SLURM_JOB_ID=", job_)));
  // Every process found, ours among them (other tests' may be listening too).
  CliResult all = RunCli("status --format csv");
  EXPECT_THAT(all.out, HasSubstr(absl::StrCat("\n", rank0_, ",0,")));
  EXPECT_THAT(all.out, HasSubstr(absl::StrCat("\n", rank1_, ",1,")));
}

TEST_F(ControlCliTest, StartByRankStopByPidDumpByJob) {
  CliResult start = RunCli("start --rank 0 --job " + job_);
  EXPECT_EQ(start.exit_code, 0) << start.err;
  EXPECT_EQ(start.out, Line(rank0_, 0, "window 1 opened"));

  CliResult status = RunCli("status --format csv --job SLURM_JOB_ID=" + job_);
  EXPECT_THAT(status.out, HasSubstr(",open,1,signal,on"));
  EXPECT_THAT(status.out, HasSubstr(",closed,0,signal,off"));

  CliResult stop = RunCli(absl::StrCat("stop ", rank0_));
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(stop.out, Line(rank0_, 0, "window 1 closed"));
  CliResult again = RunCli(absl::StrCat("stop ", rank0_));
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.out, Line(rank0_, 0, "error: no window is open"));

  // Rank 1 has no flight recorder: one process did it, one did not.
  CliResult dump = RunCli("dump --job " + job_);
  EXPECT_EQ(dump.exit_code, 1);
  EXPECT_EQ(dump.out, Line(rank0_, 0, "flight recorder written to /tmp/flight.wst") +
                          Line(rank1_, 1, "error: the flight recorder is off"));
  CliResult both = RunCli(absl::StrCat("start --rank 0-1 --job ", job_));
  EXPECT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(both.out, Line(rank0_, 0, "window 2 opened") + Line(rank1_, 1, "window 1 opened"));
}

TEST_F(ControlCliTest, ProcessesThatCannotBeAddressed) {
  CliResult none = RunCli("start 2147483647");  // above any pid_max
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.out, "warpscope: no process 2147483647\n");
  CliResult plain = RunCli(absl::StrCat("stop ", getpid(), " ", rank1_));
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_THAT(plain.out, StartsWith(absl::StrCat("warpscope: no warpscope in pid ", getpid())));
  EXPECT_THAT(plain.out, HasSubstr(Line(rank1_, 1, "error: no window is open")));
  CliResult unmatched = RunCli("status --job no-such-job-" + job_);
  EXPECT_EQ(unmatched.exit_code, 1);
  EXPECT_THAT(unmatched.err, StartsWith("warpscope: no process with warpscope matches --job"));
  EXPECT_EQ(unmatched.out, "");
}

TEST_F(ControlCliTest, UsageErrors) {
  for (const char* args : {"start --rank 2-1", "start --rank x", "start --rank 1,", "start abc",
                           "start 12 --all", "start --all --rank 0", "dump --job ''",
                           "status --format xml", "start --frobnicate"}) {
    CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_THAT(r.err, StartsWith("warpscope: ")) << args;
    EXPECT_EQ(CountLines(r.err), 1) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
  EXPECT_THAT(RunCli("start --rank 2-1").err, HasSubstr("is not a rank or a range LO-HI"));
  // Two of ours at least: a command that changes state needs a choice.
  CliResult unchosen = RunCli("start");
  EXPECT_EQ(unchosen.exit_code, 2);
  EXPECT_THAT(unchosen.err, HasSubstr("name PIDs, or choose with --rank, --job or --all"));
  CliResult help = RunCli("help start");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("usage: warpscope start [PID...]"));
}

TEST(ControlClientTest, PidsFromProcNetUnix) {
  const std::string text =
      "Num       RefCount Protocol Flags    Type St Inode Path\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01 2001 @warpscope-ctl.42\n"
      "0000000000000000: 00000003 00000000 00000000 0001 03 2002 @warpscope-ctl.42\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01 2003 /run/a socket\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01 2004 @warpscope-ctl.7\n"
      "0000000000000000: 00000002 00000000 00000000 0002 01 2005\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01 2006 @warpscope-ctl.x\n";
  EXPECT_EQ(ControlPidsFromProcNetUnix(text), (std::vector<int64_t>{7, 42}));
  EXPECT_TRUE(ControlPidsFromProcNetUnix("").empty());
}

TEST(ControlClientTest, RankLists) {
  absl::StatusOr<RankList> list = RankList::Parse("0,2-3,10");
  ASSERT_TRUE(list.ok()) << list.status();
  for (int64_t r : {0, 2, 3, 10}) EXPECT_TRUE(list->Contains(r)) << r;
  for (int64_t r : {1, 4, 9, 11}) EXPECT_FALSE(list->Contains(r)) << r;
  for (const char* bad : {"", ",", "1,", "-1", "3-2", "1-", "a", "1-2-3", "+1", "1 ,2"}) {
    EXPECT_FALSE(RankList::Parse(bad).ok()) << bad;
  }
}

TEST(ControlClientTest, SelectionByRankAndJob) {
  ControlStatus s;
  s.pid = 1;
  s.rank = 2;
  s.job_id = "SLURM_JOB_ID=77";
  ControlSelection by_job;
  by_job.job = "77";
  EXPECT_TRUE(by_job.Matches(s));
  by_job.job = "SLURM_JOB_ID=77";
  EXPECT_TRUE(by_job.Matches(s));
  by_job.job = "7";
  EXPECT_FALSE(by_job.Matches(s));
  ControlSelection by_rank;
  by_rank.ranks = *RankList::Parse("0-1");
  EXPECT_FALSE(by_rank.Matches(s));
  by_rank.ranks = *RankList::Parse("2");
  EXPECT_TRUE(by_rank.Matches(s));
  s.rank.reset();
  EXPECT_FALSE(by_rank.Matches(s));  // no rank, no match
  EXPECT_EQ(ControlProcessName(5, &s), "pid 5");
}

}  // namespace
}  // namespace warpscope::testing
