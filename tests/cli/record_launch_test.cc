// `warpscope record` launching a program without a GPU: the program's exit status comes back,
// a command that cannot run is said once (127), a killed program's signal is reported (128 +
// signal), a refused trace name runs nothing, and SIGTERM sent to the launcher reaches the
// program. Needs the injected library beside the CLI (the full build; skipped in the
// analyzers-only build, which has none).
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/reader/cli_test_util.h"

namespace warpscope::testing {
namespace {

using ::testing::HasSubstr;

class RecordLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* build = std::getenv("WARPSCOPE_BUILD_DIR");
    build_ = build != nullptr ? build : ".";
    struct stat st;
    if (stat((build_ + "/lib/libwarpscope.so").c_str(), &st) != 0) {
      GTEST_SKIP() << "no lib/libwarpscope.so in " << build_ << " (analyzers-only build)";
    }
    dir_ = MakeTempDir();
  }
  static bool Exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0;
  }
  std::string build_, dir_;
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

}  // namespace
}  // namespace warpscope::testing
