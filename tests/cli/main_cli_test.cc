// The `warpscope` entry point: what it says without a command, for an unknown one, and for
// `help COMMAND`; usage errors exit 2 with the message on stderr.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::warpscope::testing::CliResult;
using ::warpscope::testing::CountLines;
using ::warpscope::testing::RunCli;

TEST(MainCliTest, NoCommandIsAUsageErrorOnStderr) {
  CliResult r = RunCli("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("usage: warpscope COMMAND"));
  EXPECT_THAT(r.err, HasSubstr("  record "));
}

TEST(MainCliTest, HelpListsTheCommandsOnStdout) {
  for (const char* args : {"help", "--help", "-h"}) {
    CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 0) << args;
    EXPECT_THAT(r.out, HasSubstr("usage: warpscope COMMAND")) << args;
    EXPECT_EQ(r.err, "") << args;
  }
}

TEST(MainCliTest, HelpCommandDescribesThatCommand) {
  for (const std::string command : {"record", "info", "summary", "occupancy", "tail", "stalls"}) {
    CliResult help = RunCli("help " + command);
    CliResult flag = RunCli(command + " --help");
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_THAT(help.out, StartsWith("usage: warpscope " + command));
    EXPECT_EQ(help.out, flag.out) << command;
  }
  CliResult bogus = RunCli("help bogus");
  EXPECT_EQ(bogus.exit_code, 2);
  EXPECT_EQ(bogus.err, "warpscope: unknown command 'bogus'; run `warpscope help` for the list\n");
}

TEST(MainCliTest, UnknownCommandIsOneShortLine) {
  CliResult r = RunCli("recrod ./app");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "warpscope: unknown command 'recrod'; run `warpscope help` for the list\n");
  CliResult long_name = RunCli(std::string(100000, 'z'));
  EXPECT_EQ(long_name.exit_code, 2);
  EXPECT_EQ(CountLines(long_name.err), 1);
  EXPECT_THAT(long_name.err, HasSubstr("...' (100000 bytes); run `warpscope help`"));
}

TEST(MainCliTest, UnknownFlagsAndBadValuesAreCutInMessages) {
  const std::string junk(100000, 'q');
  for (const std::string& args :
       {"summary --sort " + junk + " x.wst", "summary --format " + junk + " x.wst",
        "info --" + junk + " x.wst", "summary --top " + junk + " x.wst"}) {
    CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(CountLines(r.err), 1) << r.err.substr(0, 200);
    EXPECT_LT(r.err.size(), 300u) << r.err.substr(0, 200);
    EXPECT_THAT(r.err, HasSubstr("bytes)"));
  }
}

}  // namespace
}  // namespace warpscope
