// `warpscope record` as users run it, with programs that never initialize CUDA (so the
// library is injected but never starts): what is refused before the launch (exit 2, one
// line, the program not run), exit statuses, and what is said about the trace at the end.
#include <sys/stat.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// A command that leaves `marker` behind when it runs.
std::string Touch(const std::string& marker) { return absl::StrCat("touch ", marker); }

// Expects a refusal before the launch: exit 2, one `warpscope:` line containing `expect`,
// and the program not run.
void ExpectRefused(const std::string& flags, const std::string& expect) {
  SCOPED_TRACE(flags);
  const std::string dir = MakeTempDir();
  const std::string marker = dir + "/program_ran";
  CliResult r = RunCli(absl::StrCat("record ", flags, " -- ", Touch(marker)));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, StartsWith("warpscope: "));
  EXPECT_THAT(r.err, HasSubstr(expect));
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_FALSE(Exists(marker)) << "the program ran";
}

TEST(RecordCliTest, ExistingTraceWithoutForceIsRefusedBeforeTheLaunch) {
  const std::string dir = MakeTempDir();
  const std::string old_trace = dir + "/old.wst";
  const std::string old_bytes = FixtureWire("synthetic/basic.textproto");
  WriteFileOrDie(old_trace, old_bytes);
  ExpectRefused("-o " + old_trace,
                absl::StrCat("-o/--output '", old_trace,
                             "' exists; pass -f/--force-overwrite to replace it, or choose "
                             "another name"));
  EXPECT_EQ(ReadFileOrDie(old_trace), old_bytes);
}

TEST(RecordCliTest, AnEarlierTraceIsNeverDescribedAsThisRuns) {
  // With -f the run may replace the file, but this program never initializes CUDA, so the
  // earlier trace stays and must not be reported as the one this run wrote.
  const std::string dir = MakeTempDir();
  const std::string old_trace = dir + "/old.wst";
  WriteFileOrDie(old_trace, FixtureWire("synthetic/basic.textproto"));
  CliResult r = RunCli(absl::StrCat("record -f -o ", old_trace, " true"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, absl::StrCat("warpscope: no trace from this run (no process launched GPU "
                                "work or pushed an NVTX range, or warpscope stepped aside; see "
                                "the messages above); ",
                                old_trace, " is the earlier file, left as it was\n"));
  EXPECT_THAT(r.err, Not(HasSubstr("kernels")));
}

TEST(RecordCliTest, ExportedOutputAndForceAreHonoured) {
  const std::string dir = MakeTempDir();
  const std::string old_trace = dir + "/old.wst";
  WriteFileOrDie(old_trace, FixtureWire("synthetic/basic.textproto"));
  setenv("WARPSCOPE_OUTPUT", old_trace.c_str(), 1);
  ExpectRefused("", absl::StrCat("WARPSCOPE_OUTPUT '", old_trace, "' exists; pass -f"));
  setenv("WARPSCOPE_FORCE_OVERWRITE", "1", 1);
  CliResult r = RunCli("record true");
  unsetenv("WARPSCOPE_FORCE_OVERWRITE");
  unsetenv("WARPSCOPE_OUTPUT");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat(old_trace, " is the earlier file, left as it was")));
}

TEST(RecordCliTest, OutputInAMissingOrUnusableDirectoryIsRefusedBeforeTheLaunch) {
  const std::string dir = MakeTempDir();
  ExpectRefused("-o " + dir + "/missing/run.wst",
                absl::StrCat("directory '", dir, "/missing' does not exist; create it first"));
  WriteFileOrDie(dir + "/file", "");
  ExpectRefused("-o " + dir + "/file/run.wst", "is a file; choose another path");
  ExpectRefused("-o " + dir,
                absl::StrCat("-o/--output '", dir, "' names a directory; write '", dir,
                             "/' for one trace per process in it, or name a file in it, e.g. '",
                             dir, "/run.wst'"));
  ExpectRefused("-o " + dir + "/.", "names a directory");
  ExpectRefused("-o .", "names a directory; write './' for one trace per process in it");
  // The folder form makes one level, no more.
  ExpectRefused("-o " + dir + "/missing/job/",
                absl::StrCat("-o/--output: cannot create the trace folder '", dir,
                             "/missing/job': No such file or directory"));
  // %p names the file only once the program's pid is known; the check still comes first.
  ExpectRefused("-o " + dir + "/missing/run_%p.wst", "does not exist");
  ExpectRefused("-o " + dir + "/run%", "ends with a lone '%'");
}

TEST(RecordCliTest, FlagErrorsNameTheFlag) {
  ExpectRefused("--flush-interval-ms abc",
                "--flush-interval-ms 'abc' is not a flush interval in ms (10-600000); see "
                "warpscope record --help");
  ExpectRefused("--buffer-size-mb 0", "--buffer-size-mb '0' is not a buffer size in MiB");
  ExpectRefused("--device-buffer-mb 2048",
                "--device-buffer-mb '2048' is not a device buffer size in MiB (1-1024)");
  ExpectRefused("--log-level loud", "--log-level 'loud' is not a log level");
  ExpectRefused("-c signal --capture-signal TERM",
                "--capture-signal 'TERM' is also a termination signal");
  ExpectRefused("-y 1e7m", "-y/--delay '1e7m' is not a number of seconds from 0 to 10000000");
  ExpectRefused("-d 200000m", "-d/--duration '200000m' is not a number of seconds");
  ExpectRefused("-p @dom", "-p/--nvtx-capture '@dom' is not an NVTX range name");
  ExpectRefused("--bogus", "unknown flag '--bogus' for 'warpscope record'");
}

TEST(RecordCliTest, VariablesFromTheShellAreNamedAsVariables) {
  setenv("WARPSCOPE_FLUSH_INTERVAL_MS", "soon", 1);
  ExpectRefused("",
                "WARPSCOPE_FLUSH_INTERVAL_MS='soon' is not a flush interval in ms "
                "(10-600000) (set in the environment; fix or unset it)");
  // The flag overrides the variable.
  const std::string dir = MakeTempDir();
  CliResult r = RunCli(absl::StrCat("record --flush-interval-ms 100 -o ", dir, "/run.wst true"));
  unsetenv("WARPSCOPE_FLUSH_INTERVAL_MS");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(RecordCliTest, LongValuesAreCutInMessages) {
  const std::string value(100000, 'x');
  const std::string dir = MakeTempDir();
  CliResult r = RunCli(absl::StrCat("record -y ", value, " -o ", dir, "/run.wst -- true"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, StartsWith(absl::StrCat("warpscope: -y/--delay '", std::string(80, 'x'),
                                             "...' (100000 bytes) is not a number of seconds")));
  EXPECT_LT(r.err.size(), 300u);
}

TEST(RecordCliTest, ExitStatusAndTheLineAtTheEnd) {
  const std::string dir = MakeTempDir();
  CliResult r = RunCli(absl::StrCat("record -o ", dir, "/run.wst -- sh -c 'exit 3'"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, absl::StrCat("warpscope: no trace at ", dir,
                                "/run.wst (no process launched GPU work or pushed an NVTX range, "
                                "or warpscope stepped aside; see the messages above)\n"));
  CliResult quiet = RunCli(absl::StrCat("record -q -o ", dir, "/run.wst -- true"));
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.err, "");
}

TEST(RecordCliTest, ACommandThatCannotRunIsOneLine) {
  const std::string dir = MakeTempDir();
  CliResult r = RunCli(absl::StrCat("record -o ", dir, "/run.wst -- ", dir, "/no_such_program"));
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.err, absl::StrCat("warpscope: cannot run '", dir,
                                "/no_such_program': No such file or directory; check the "
                                "command and PATH\n"));
}

TEST(RecordCliTest, TheProgramGetsTheFinalNameWithPercentSignsEscaped) {
  // The library expands WARPSCOPE_OUTPUT again: a literal '%' in the final name must reach
  // it as "%%", and %p as the program's own pid.
  const std::string dir = MakeTempDir();
  CliResult r = RunCli(absl::StrCat("record -q -o '", dir,
                                    "/run_100%%_%p' -- sh -c 'echo \"$WARPSCOPE_OUTPUT $$\" > ",
                                    dir, "/seen'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string seen = ReadFileOrDie(dir + "/seen");
  const size_t space = seen.find(' ');
  ASSERT_NE(space, std::string::npos) << seen;
  const std::string pid = seen.substr(space + 1, seen.size() - space - 2);
  EXPECT_EQ(seen.substr(0, space), absl::StrCat(dir, "/run_100%%_", pid, ".wst"));
}

}  // namespace
}  // namespace warpscope::testing
