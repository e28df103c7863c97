// Habits brought from Nsight Systems and non-ASCII names: switches that take true/false
// (`record -f true ./app`), `help COMMAND`, text tables whose widths are terminal columns,
// base names of kernels, `summary -o`, the GB/s column, and what `info` says of the CUDA
// versions of a trace recorded on an H200.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analyzers/cli/flags.h"
#include "analyzers/render/output.h"
#include "analyzers/render/short_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The switches and a value flag as `record` has them.
FlagSet RecordLikeFlags() {
  return FlagSet("record", "[flags] COMMAND",
                 {{"output", "o", true, "FILE", "trace file", ""},
                  {"force-overwrite", "f", false, "", "overwrite", ""},
                  {"quiet", "q", false, "", "quiet", ""}});
}

TEST(SwitchFlagTest, TakesTrueOrFalseAsNsightSystemsDoes) {
  struct Case {
    std::vector<std::string> args;
    bool force;
    std::vector<std::string> program;
  };
  const Case cases[] = {
      {{"-f", "true", "-o", "x", "./app"}, true, {"./app"}},
      {{"-f", "false", "-o", "x", "./app"}, false, {"./app"}},
      {{"-f", "./app", "true"}, true, {"./app", "true"}},
      {{"--force-overwrite=false", "./app"}, false, {"./app"}},
      {{"--force-overwrite=true", "./app"}, true, {"./app"}},
      {{"-f", "--", "true"}, true, {"true"}},
      {{"-f", "true", "-f", "false", "./app"}, false, {"./app"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrJoin(c.args, " "));
    FlagSet flags = RecordLikeFlags();
    ASSERT_TRUE(flags.Parse(c.args, /*stop_at_first_positional=*/true).ok());
    EXPECT_EQ(flags.Has("force-overwrite"), c.force);
    EXPECT_EQ(flags.rest(), c.program);
  }
  FlagSet flags = RecordLikeFlags();
  absl::Status bad = flags.Parse({"--quiet=maybe", "./app"}, true);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("--quiet is a switch"));
  EXPECT_THAT(RecordLikeFlags().HelpText(), HasSubstr("--force-overwrite [true|false]"));
}

TEST(SwitchFlagTest, RecordDoesNotRunTheValueOfDashF) {
  // Before, `true` was taken as the program; now it is -f's value and no program is left.
  CliResult r = RunCli("record -f true -o x.wst");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("record needs a command to run"));
  CliResult help = RunCli("record --help");
  EXPECT_THAT(help.out, HasSubstr("-f, --force-overwrite [true|false]"));
}

TEST(HelpCommandTest, EveryCommandIncludingExportAndDiff) {
  for (const std::string command : {"diff", "export"}) {
    CliResult help = RunCli("help " + command);
    CliResult flag = RunCli(command + " --help");
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_THAT(help.out, StartsWith("usage: warpscope " + command));
    EXPECT_EQ(help.out, flag.out) << command;
  }
  EXPECT_THAT(RunCli("help").out, HasSubstr("  export "));
}

TEST(DisplayWidthTest, CountsColumnsNotBytes) {
  EXPECT_EQ(DisplayWidth("gemm"), 4u);
  EXPECT_EQ(DisplayWidth("caf\xc3\xa9"), 4u);               // é: 2 bytes, 1 column
  EXPECT_EQ(DisplayWidth("\xe8\xa1\x8c\xe5\x88\x97"), 4u);  // 行列: 6 bytes, 2 wide
  EXPECT_EQ(DisplayWidth("e\xcc\x81"), 1u);                 // e + combining acute
  EXPECT_EQ(DisplayWidth("\xff"), 1u);                      // not UTF-8: one each
  // Cuts fall between characters, never inside one.
  EXPECT_EQ(TruncateToWidth("\xe8\xa1\x8c\xe5\x88\x97\xe8\xa1\x8c\xe5\x88\x97", 7),
            "\xe8\xa1\x8c\xe5\x88\x97...");
  EXPECT_EQ(TruncateToWidth("short", 7), "short");
  EXPECT_EQ(ShortKernelName(std::string(100, 'k'), true).size(), 80u);
}

TEST(DisplayWidthTest, TextTablesStayAligned) {
  Table table({{"Name", false, CellKind::kString}, {"Time", true, CellKind::kInt}});
  table.AddRow({"gemm", 12});
  table.AddRow({"caf\xc3\xa9_kernel", 3});
  table.AddRow({"\xe8\xa1\x8c\xe5\x88\x97\xe7\xa9\x8d", 456});  // 行列積
  const std::vector<std::string> lines = absl::StrSplit(table.RenderText(), '\n');
  ASSERT_GE(lines.size(), 5u);
  // Every line ends at the same column: the right-aligned times line up.
  const size_t width = DisplayWidth(lines[0]);
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(DisplayWidth(lines[i]), width) << lines[i];
  // 行列積 is 6 columns in a column of 11, then 2 between columns, then " 456" in 4.
  EXPECT_EQ(lines[4], "\xe8\xa1\x8c\xe5\x88\x97\xe7\xa9\x8d" + std::string(8, ' ') + "456");
}

TEST(TableKindTest, FullWidthUnsignedAndBoolCellsKeepTheirValue) {
  // A 64-bit checksum above INT64_MAX and a yes/no column, in the three renderings.
  const uint64_t crc = 0xf00dcafedeadbeefull;
  Table table({{"crc", true, CellKind::kUint64}, {"n", true, CellKind::kInt},
               {"one_time", false, CellKind::kBool}});
  table.AddRow({crc, int64_t{-1}, Cell::Bool(true)});
  EXPECT_EQ(table.RenderCsv(), "crc,n,one_time\n17297704939806375663,-1,true\n");
  EXPECT_EQ(table.RenderJson(), "[{\"crc\":17297704939806375663,\"n\":-1,\"one_time\":true}]\n");
  EXPECT_THAT(table.RenderText(), HasSubstr("17297704939806375663"));
}

TEST(BaseFunctionNameTest, StripsWhatNsightSystemsBaseNamesStrip) {
  EXPECT_EQ(BaseFunctionName("void gemm<float, 4>(float const*, int)"), "gemm");
  EXPECT_EQ(BaseFunctionName("void at::native::(anonymous namespace)::reduce_kernel<512, 1, "
                             "at::native::ReduceOp<float, at::native::MeanOps<float, float>, "
                             "unsigned int, float, 4> >(at::native::ReduceOp<float>)"),
            "reduce_kernel");
  EXPECT_EQ(BaseFunctionName("relu_kernel(float*, int)"), "relu_kernel");
  EXPECT_EQ(BaseFunctionName("ns::Functor<int>::operator_call(int) const"), "operator_call");
  EXPECT_EQ(BaseFunctionName("cudaLaunchKernel"), "cudaLaunchKernel");
  EXPECT_EQ(BaseFunctionName("[CUDA memcpy HtoD]"), "[CUDA memcpy HtoD]");
  EXPECT_EQ(BaseFunctionName("_Z4gemmPf"), "_Z4gemmPf");
}

std::string BasicTrace() {
  return WriteTempFile(FixtureWire("synthetic/basic.textproto"), "basic.wst");
}

TEST(SummaryCliTest, ShortNamesAndNameWidth) {
  const std::string trace = BasicTrace();
  CliResult full = RunCli("summary " + trace + " --report kernels");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_THAT(full.out, HasSubstr("gemm_kernel(float const*, float const*, float*, int)"));
  CliResult short_names = RunCli("summary " + trace + " --report kernels --short-names");
  ASSERT_EQ(short_names.exit_code, 0) << short_names.err;
  EXPECT_THAT(short_names.out, HasSubstr("  gemm_kernel\n"));
  EXPECT_THAT(short_names.out, Not(HasSubstr("float const*")));
  CliResult csv = RunCli("summary " + trace + " --report kernels --short-names -f csv");
  EXPECT_THAT(csv.out, HasSubstr(",gemm_kernel\n"));
  CliResult narrow = RunCli("summary " + trace + " --report kernels --name-width 12");
  EXPECT_THAT(narrow.out, HasSubstr("  gemm_kern...\n"));
  CliResult bad = RunCli("summary " + trace + " --name-width 2");
  EXPECT_EQ(bad.exit_code, 2);
}

TEST(SummaryCliTest, WritesToAFileCheckedBeforeReading) {
  const std::string trace = BasicTrace();
  const std::string dir = MakeTempDir();
  CliResult to_stdout = RunCli("summary " + trace + " -f json");
  CliResult to_file = RunCli("summary " + trace + " -f json -o " + dir + "/s.json");
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "");
  EXPECT_EQ(ReadFileOrDie(dir + "/s.json"), to_stdout.out);
  // A bad path is reported before the (missing) trace is looked at.
  for (const std::string& out : {dir, dir + "/no/such.txt"}) {
    CliResult r = RunCli("summary missing.wst -o " + out);
    EXPECT_EQ(r.exit_code, 2) << out;
    EXPECT_THAT(r.err, StartsWith("warpscope: -o '"));
    EXPECT_EQ(CountLines(r.err), 1);
  }
}

// The steps the analysis commands share (analyzers/cli/commands.h): one wording for a
// missing trace, a negative count, a bad device id, and a file that cannot be written.
TEST(CommandStepsTest, SharedFlagsAndFilesReadTheSameInEveryCommand) {
  const std::string trace = BasicTrace();
  const std::pair<const char*, const char*> counts[] = {
      {"info", "exactly"},    {"advise", "at least"},  {"occupancy", "exactly"},
      {"tail", "exactly"},    {"timeline", "exactly"}, {"summary", "at least"},
      {"stalls", "at least"}, {"export", "at least"},  {"job", "at least"}};
  for (const auto& [command, count] : counts) {
    CliResult r = RunCli(command);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.err, absl::StrCat("warpscope: ", command, " needs ", count,
                                  " one trace file; see warpscope ", command, " --help\n"));
  }
  const std::string top_commands[] = {"advise", "occupancy", "stalls", "summary", "diff " + trace};
  for (const std::string& command : top_commands) {
    CliResult r = RunCli(absl::StrCat(command, " ", trace, " --top -1"));
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.err, "warpscope: flag --top must be 0 or more\n") << command;
  }
  const std::string dir = MakeTempDir();
  const std::string device_commands[] = {"advise " + trace,
                                         "timeline " + trace + " --svg " + dir + "/t.svg"};
  for (const std::string& command : device_commands) {
    CliResult r = RunCli(command + " --device -3");
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.err, "warpscope: flag --device must be a device id, 0 or more, not -3\n");
  }
  // A path that passes the early check and fails at the write: the disk is full.
  CliResult full = RunCli("summary " + trace + " -o /dev/full");
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_THAT(full.err, StartsWith("warpscope: cannot write -o '/dev/full': "));
  CliResult html = RunCli("advise " + trace + " --html /dev/full");
  EXPECT_EQ(html.exit_code, 1);
  EXPECT_THAT(html.err, HasSubstr("warpscope: cannot write --html '/dev/full': "));
  // --help: the flag list, a blank line, then what the command does.
  CliResult help = RunCli("occupancy --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--top N"));
  EXPECT_THAT(help.out, HasSubstr("\n\nTheoretical occupancy comes from"));
}

TEST(SummaryCliTest, MemoryReportHasGigabytesPerSecond) {
  CliResult r = RunCli("summary " + BasicTrace() + " --report memory -f csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n');
  EXPECT_THAT(lines[0], HasSubstr(",max_bytes,gb_per_s,operation"));
  // The HtoD copy: 4 MiB in 8 us.
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat(",", 4194304.0 / 8000.0, ",[CUDA memcpy HtoD]")));
  CliResult table = RunCli("summary " + BasicTrace() + " --report memory");
  EXPECT_THAT(table.out, HasSubstr("GB/s"));
  EXPECT_THAT(table.out, HasSubstr("524.29"));
}

TEST(InfoCliTest, SaysWhatAnH200TraceRecordsOfCuda) {
  CliResult r = RunCli("info " + SourceDir() + "/examples/traces/cuda13.0_sm90/pipeline_pm.wst");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("driver version not recorded, CUPTI 130001 (CUDA 13.0)"));
  EXPECT_THAT(r.out, Not(HasSubstr("driver unknown")));
}

TEST(InfoCliTest, ShowsBothDriverVersionsWhenRecorded) {
  const std::string trace =
      testing::WriteTempFile(testing::TextprotoToWire(R"pb(packet {
                                                             header {
                                                               format_major: 1
                                                               format_minor: 1
                                                               cupti_version: 130001
                                                               cuda_driver_version: 13000
                                                               display_driver_version: "580.159.04"
                                                             }
                                                           })pb"),
                             "driver_versions.wst");
  CliResult r = RunCli("info " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      r.out, HasSubstr("driver 13000 (13.0) (kernel module 580.159.04), CUPTI 130001 (CUDA 13.0)"));
  CliResult json = RunCli("info " + trace + " -f json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr(R"("display_driver_version":"580.159.04")"));
}

}  // namespace
}  // namespace warpscope::testing
