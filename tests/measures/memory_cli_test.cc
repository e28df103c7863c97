// `warpscope memory` as users run it, on tests/data/synthetic/memory.textproto: golden text
// and JSON (WARPSCOPE_UPDATE_GOLDEN=1 rewrites golden/), the SVG, --device and --top, and a
// trace without memory events.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::warpscope::testing::CliResult;
using ::warpscope::testing::CompareWithGolden;
using ::warpscope::testing::FixtureWire;
using ::warpscope::testing::MakeTempDir;
using ::warpscope::testing::ReadFileOrDie;
using ::warpscope::testing::RunCli;
using ::warpscope::testing::WriteTempFile;

std::string MemoryTrace() {
  return WriteTempFile(FixtureWire("synthetic/memory.textproto"), "memory.wst");
}

TEST(MemoryCli, MatchesGolden) {
  const std::string trace = MemoryTrace();
  for (const char* format : {"table", "json"}) {
    SCOPED_TRACE(format);
    CliResult r = RunCli(absl::StrCat("memory -f ", format, " ", trace));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string ext = std::string(format) == "table" ? "txt" : "json";
    const std::string problem = CompareWithGolden("measures/golden/memory." + ext, r.out);
    EXPECT_EQ(problem, "") << problem;
  }
}

TEST(MemoryCli, TheVerdictNamesThePeakTheLeakAndTheFailure) {
  CliResult r = RunCli("memory " + MemoryTrace());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("device 0: peak 1.38 GiB in use"));
  EXPECT_THAT(r.out, HasSubstr("memory grows by 4.00 MiB per steady step"));
  EXPECT_THAT(r.out, HasSubstr("a leak, most at train.py:57 train_step"));
  EXPECT_THAT(r.out, HasSubstr("a request for 80.00 GiB failed"));
  EXPECT_THAT(r.out, HasSubstr("128.00 MiB reserved but unused"));
}

TEST(MemoryCli, SvgDeviceAndTop) {
  const std::string dir = MakeTempDir();
  const std::string trace = MemoryTrace();
  CliResult r = RunCli(absl::StrCat("memory --svg ", dir, "/m.svg --top 1 -t largest_blocks ",
                                    "-f csv ", trace));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(::warpscope::testing::CountLines(r.out), 2) << r.out;  // header and one block
  const std::string svg = ReadFileOrDie(dir + "/m.svg");
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("<title>step_9</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>forward</title>"));
  EXPECT_THAT(svg, HasSubstr("polyline"));
  CliResult wrong = RunCli("memory --device 3 " + trace);
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.err, HasSubstr("warpscope:"));
}

TEST(MemoryCli, ATraceWithoutMemoryEventsSaysSo) {
  const std::string trace =
      WriteTempFile(FixtureWire("synthetic/basic.textproto"), "basic.wst");
  CliResult r = RunCli("memory " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("no memory events"));
  EXPECT_THAT(r.err, HasSubstr("the trace has no memory events"));
}

}  // namespace
}  // namespace warpscope
