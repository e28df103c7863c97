// `warpscope advise` as users run it: golden table and JSON output on the bundled example
// traces, flag errors, and the --html page as a real browser renders it (headless Chromium;
// the test skips only when no chromium is installed, and CI installs it).
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/advise/advise_traces.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::warpscope::testing::CliResult;
using ::warpscope::testing::CompareWithGolden;
using ::warpscope::testing::MakeTempDir;
using ::warpscope::testing::ReadFileOrDie;
using ::warpscope::testing::RunCli;
using ::warpscope::testing::SourceDir;

class AdviseGoldenTest : public ::testing::TestWithParam<std::string> {};

// Paths in the output are relative to the source tree, so the goldens do not depend on it.
TEST_P(AdviseGoldenTest, MatchesGolden) {
  const std::string trace = "examples/traces/" + GetParam() + ".wst";
  std::string name = GetParam();
  for (char& c : name) c = c == '/' ? '_' : c;
  for (const char* format : {"table", "json"}) {
    SCOPED_TRACE(format);
    CliResult r = RunCli(absl::StrCat("advise -f ", format, " ", SourceDir(), "/", trace));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string out = absl::StrReplaceAll(r.out, {{SourceDir() + "/", ""}});
    const std::string ext = std::string(format) == "table" ? "txt" : "json";
    const std::string problem = CompareWithGolden("advise/golden/" + name + "." + ext, out);
    EXPECT_EQ(problem, "") << problem;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, AdviseGoldenTest,
                         ::testing::Values("synthetic_training_loop", "cuda13.0_sm90/pipeline_pm",
                                           "cuda13.0_sm90/stall_kernels"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) c = std::isalnum(c) ? c : '_';
                           return name;
                         });

TEST(AdviseCliTest, HelpAndUsageErrors) {
  CliResult help = RunCli("help advise");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("docs/advise.md"));
  EXPECT_THAT(help.out, HasSubstr("--html"));
  CliResult none = RunCli("advise");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("warpscope: advise needs at least one trace file"));
  CliResult top = RunCli("advise x.wst --top -1");
  EXPECT_EQ(top.exit_code, 2);
  CliResult dir = RunCli(absl::StrCat("advise x.wst --html ", MakeTempDir()));
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_THAT(dir.err, HasSubstr("is a directory"));
  CliResult missing = RunCli("advise /nonexistent/t.wst");
  EXPECT_EQ(missing.exit_code, 1);
}

TEST(AdviseCliTest, TopAndDeviceFlags) {
  const std::string trace = SourceDir() + "/examples/traces/synthetic_training_loop.wst";
  CliResult one = RunCli(absl::StrCat("advise -f csv --table findings --top 1 ", trace));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(testing::CountLines(one.out), 2);  // header and one finding
  // A device the trace does not have is a usage error that names the devices it has, as in
  // `timeline`; not an empty report.
  CliResult other = RunCli(absl::StrCat("advise --device 5 ", trace));
  EXPECT_EQ(other.exit_code, 2) << other.out;
  EXPECT_THAT(other.err, HasSubstr("--device 5: the trace has no such device (it has 0)"));
  EXPECT_EQ(other.out, "");
  CliResult zero = RunCli(absl::StrCat("advise --device 0 -f csv -t findings ", trace));
  ASSERT_EQ(zero.exit_code, 0) << zero.err;
  EXPECT_GT(testing::CountLines(zero.out), 2);
}

// A trace with more timed events than --max-events is read in its first steps, and the note
// says so; under the least budget allowed the flag is a usage error.
TEST(AdviseCliTest, MaxEventsReadsTheFirstStepsAndSaysSo) {
  const std::string trace = SourceDir() + "/examples/traces/synthetic_training_loop.wst";
  CliResult part = RunCli(absl::StrCat("advise -f csv -t notes --max-events 1000 ", trace));
  ASSERT_EQ(part.exit_code, 0) << part.err;
  EXPECT_THAT(part.out, HasSubstr("the trace has 1070 timed events, more than --max-events "
                                  "1000: advise read the first 5 of its 6 steps (890 events)"));
  CliResult whole = RunCli(absl::StrCat("advise -f csv -t notes --max-events 1070 ", trace));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_THAT(whole.out, Not(HasSubstr("--max-events")));
  CliResult low = RunCli(absl::StrCat("advise --max-events 999 ", trace));
  EXPECT_EQ(low.exit_code, 2);
  EXPECT_THAT(low.err, HasSubstr("warpscope: flag --max-events must be at least 1000"));
  EXPECT_EQ(low.out, "");
}

std::string Chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const std::string probe = absl::StrCat("command -v ", name, " >/dev/null 2>&1");
    if (std::system(probe.c_str()) == 0) return name;
  }
  return "";
}

// The page of a program that waits for the GPU each step, rendered by a browser: the findings
// text and the timeline's SVG elements must be in the DOM it built.
TEST(AdviseHtmlBrowserTest, RenderedDomHasFindingsAndTimeline) {
  const std::string browser = Chromium();
  if (browser.empty()) GTEST_SKIP() << "no chromium installed (scripts/install_deps.sh adds it)";
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/sync.wst", html = dir + "/advise.html";
  ASSERT_EQ(advise_testing::WriteProblemTrace(advise_testing::Problem::kSync, false, trace), "");
  CliResult r = RunCli(absl::StrCat("advise ", trace, " --html ", html));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dom_path = dir + "/dom.html";
  const std::string command =
      absl::StrCat(browser, " --headless --no-sandbox --disable-gpu --user-data-dir=", dir,
                   "/profile --dump-dom file://", html, " >", dom_path, " 2>", dir, "/browser.log");
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadFileOrDie(dir + "/browser.log");
  const std::string dom = ReadFileOrDie(dom_path);
  EXPECT_THAT(dom, HasSubstr("sync-idle"));
  EXPECT_THAT(dom, HasSubstr("cudaStreamSynchronize"));
  EXPECT_THAT(dom, HasSubstr("<tr class=\"finding\">"));
  EXPECT_THAT(dom, HasSubstr("<svg"));
  EXPECT_THAT(dom, HasSubstr("<rect class=\"gap\""));
  EXPECT_THAT(dom, HasSubstr("<rect class=\"kernel\""));
  EXPECT_THAT(dom, HasSubstr("<rect class=\"wait\""));
  // The timeline reads on its own: a time axis, and a legend naming the shading.
  EXPECT_THAT(dom, ContainsRegex("<text class=\"tick\"[^>]*>[0-9.]+ ms</text>"));
  EXPECT_THAT(dom, HasSubstr(">GPU idle</text>"));
  EXPECT_THAT(dom, HasSubstr(">API call waiting for the GPU</text>"));
}

}  // namespace
}  // namespace warpscope

namespace warpscope::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// `warpscope precision`: each kernel's class as the fp32-matrix rule reads it. On the bundled
// sync_sites.wst the cutlass SIMT SGEMMs are FP32 SIMT and PyTorch's elementwise kernels do no
// matrix work; the classes' times add up to the kernel time, and their shares to 100%.
TEST(PrecisionCliTest, ClassesAddUpToTheKernelTime) {
  const std::string trace = SourceDir() + "/examples/traces/cuda13.0_sm90/sync_sites.wst";
  CliResult classes = RunCli(absl::StrCat("precision -f csv --table classes ", trace));
  ASSERT_EQ(classes.exit_code, 0) << classes.err;
  CliResult scalars = RunCli(absl::StrCat("precision -f csv --table scalars ", trace));
  ASSERT_EQ(scalars.exit_code, 0) << scalars.err;
  const std::vector<std::string> rows = absl::StrSplit(classes.out, '\n', absl::SkipEmpty());
  ASSERT_GE(rows.size(), 3u) << classes.out;
  EXPECT_EQ(rows[0], "math,kernels,launches,total_ns,percent");
  EXPECT_THAT(rows[1], StartsWith("FP32 SIMT,"));  // most of the time: the SGEMMs
  int64_t total = 0;
  double percent = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const std::vector<std::string> cells = absl::StrSplit(rows[i], ',');
    ASSERT_EQ(cells.size(), 5u) << rows[i];
    total += std::stoll(cells[3]);
    percent += std::stod(cells[4]);
  }
  EXPECT_THAT(scalars.out, HasSubstr(absl::StrCat("\n", total, ",")));  // kernel_ns first
  EXPECT_NEAR(percent, 100.0, 0.05);
  CliResult kernels = RunCli(absl::StrCat("precision -f csv --top 0 --table kernels ", trace));
  ASSERT_EQ(kernels.exit_code, 0) << kernels.err;
  EXPECT_THAT(kernels.out, HasSubstr("cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params),"
                                     "FP32 SIMT,cutlass,false,"));
  EXPECT_THAT(kernels.out, HasSubstr(",no matrix multiply,PyTorch,false,"));
  CliResult bad = RunCli(absl::StrCat("precision -k '(' ", trace));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

}  // namespace
}  // namespace warpscope::testing
