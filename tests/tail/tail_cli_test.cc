// `warpscope tail --svg` as users run it: an output path that cannot be written is refused
// before the report is built (exit 2, one line, nothing on stdout); a good one gets the SVG.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::Not;
using namespace ::warpscope::testing;  // NOLINT(build/namespaces): the test helpers.

// A trace with PM samples, recorded on an H200.
std::string PmTrace() { return SourceDir() + "/examples/traces/cuda13.0_sm90/pipeline_pm.wst"; }

TEST(TailCliTest, UnwritableSvgPathsAreRefusedBeforeTheReport) {
  const std::string dir = MakeTempDir();
  WriteFileOrDie(dir + "/file", "");
  const std::pair<std::string, std::string> cases[] = {
      {"''", "--svg needs a file name"},
      {dir, absl::StrCat("--svg '", dir, "' is a directory; name a file in it, e.g. '", dir,
                         "/tail.svg'")},
      {dir + "/missing/t.svg", absl::StrCat("directory '", dir, "/missing' does not exist")},
      {dir + "/file/t.svg", "is a file; choose another path"},
  };
  for (const auto& [svg, expect] : cases) {
    SCOPED_TRACE(svg);
    CliResult r = RunCli(absl::StrCat("tail ", PmTrace(), " --svg ", svg));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, StartsWith("warpscope: "));
    EXPECT_THAT(r.err, HasSubstr(expect));
    EXPECT_EQ(CountLines(r.err), 1) << r.err;
  }
}

// --top keeps the kernels with the most tail cost, and with --instances only their launches:
// on the pipeline trace the imbalanced reduction, whose tail is designed.
TEST(TailCliTest, TopKeepsTheCostliestKernelsAndTheirLaunches) {
  CliResult all = RunCli(absl::StrCat("tail -f csv -t kernels ", PmTrace()));
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(testing::CountLines(all.out), 4);  // header and three kernels
  CliResult one = RunCli(absl::StrCat("tail -f csv -t kernels --top 1 ", PmTrace()));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(testing::CountLines(one.out), 2);
  EXPECT_THAT(one.out, HasSubstr("reduce_imbalanced"));
  CliResult launches = RunCli(absl::StrCat("tail -f csv --top 1 --instances ", PmTrace()));
  ASSERT_EQ(launches.exit_code, 0) << launches.err;
  EXPECT_GT(testing::CountLines(launches.out), 2);
  EXPECT_THAT(launches.out, HasSubstr("reduce_imbalanced"));
  EXPECT_THAT(launches.out, Not(HasSubstr("scale_balanced")));
  EXPECT_THAT(launches.out, Not(HasSubstr("mix_register_heavy")));
  EXPECT_EQ(RunCli(absl::StrCat("tail --top -1 ", PmTrace())).exit_code, 2);
}

TEST(TailCliTest, WritesTheSvg) {
  const std::string svg = MakeTempDir() + "/tail.svg";
  CliResult r = RunCli(absl::StrCat("tail ", PmTrace(), " --svg ", svg));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("reduce_imbalanced"));
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("warpscope: wrote ", svg)));
  EXPECT_THAT(ReadFileOrDie(svg), StartsWith("<svg "));
}

}  // namespace
}  // namespace warpscope
