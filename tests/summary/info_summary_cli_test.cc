// The `warpscope info` and `summary` commands as users run them: exit codes (0 readable,
// 1 unreadable/corrupt/newer, 2 usage) and the one-line `warpscope:` messages.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace ::warpscope::testing;  // NOLINT(build/namespaces): the test helpers.

// CSV and JSON stay machine-readable: what limits the NVTX GPU figures goes to stderr.
TEST(SummaryCliTest, NvtxNotesGoToStderrForCsvAndJson) {
  const std::string path = WriteTempFile(FixtureWire("synthetic/nvtx_kernels_only.textproto"));
  for (const char* format : {"csv", "json"}) {
    SCOPED_TRACE(format);
    CliResult r = RunCli(absl::StrCat("summary --report nvtx --format ", format, " ", path));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, StartsWith(absl::StrCat("warpscope: ", path, ": GPU time of NVTX ranges "
                                               "needs runtime or driver API records")));
    EXPECT_EQ(CountLines(r.err), 1) << r.err;
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr("note")));
  }
  CliResult table = RunCli("summary --report nvtx " + path);
  EXPECT_EQ(table.err, "");
  EXPECT_THAT(table.out, HasSubstr(absl::StrCat("note: ", path,
                                                ": GPU time of NVTX ranges needs runtime or driver")));
}

TEST(InfoCliTest, ReadableTraceExitsZero) {
  const std::string path = WriteTempFile(FixtureWire("synthetic/basic.textproto"));
  CliResult r = RunCli("info " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("fixture:basic"));
  EXPECT_EQ(r.err, "");
  CliResult json = RunCli("info --format json " + path);
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_THAT(json.out, StartsWith("{\"scalars\":{\"trace\":"));
}

TEST(InfoCliTest, PcSamplingTotalsAndTheCauseOfZeroSamples) {
  const std::string counted_no_pcs = WriteTempFile(TextprotoToWire(R"(
    packet { header { format_major: 1 config { key: "WARPSCOPE_PC_SAMPLING" value: "1" } } }
    packet { pc_samples { device_id: 0 context_id: 1 total_samples: 500 } }
    packet { stats { final: true
                     counters { name: "pc_sampling.contexts_sampled" value: 1 }
                     counters { name: "pc_sampling.batches" value: 1 } } }
    packet { end_of_trace {} }
  )"));
  CliResult r = RunCli("info " + counted_no_pcs);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pc sampling\n  samples: 0 in 0 PC records, 1 batches"));
  EXPECT_THAT(r.out, HasSubstr("CUPTI totals: 500 samples (0 in non-user kernels)"));
  EXPECT_THAT(r.out, HasSubstr("PC sampling was on but produced 0 samples: likely cause: CUPTI "
                               "counted samples but returned no PC records"));
  CliResult json = RunCli("info --format json " + counted_no_pcs);
  EXPECT_THAT(json.out, HasSubstr("\"pc_sampling\":[{\"samples\":0"));

  const std::string pm_kept = WriteTempFile(TextprotoToWire(R"(
    packet { header { format_major: 1 config { key: "WARPSCOPE_PC_SAMPLING" value: "1" } } }
    packet { stats { final: true
                     counters { name: "pc_sampling.disabled.pm_sampling_chosen" value: 1
                                severity: SEVERITY_DATA_LOSS } } }
    packet { end_of_trace {} }
  )"));
  EXPECT_THAT(RunCli("info " + pm_kept).out,
              HasSubstr("likely cause: PM sampling was also requested and was kept"));

  const std::string sampled = WriteTempFile(TextprotoToWire(R"(
    packet { header { format_major: 1 config { key: "WARPSCOPE_PC_SAMPLING" value: "1" } } }
    packet { interned_string { id: 1 value: "_Z1kv" } }
    packet { pc_samples { device_id: 0 context_id: 1 total_samples: 9
                          records { function_name_id: 1 pc_offset: 16
                                    stall_reason_index: 2 samples: 9 } } }
    packet { cubin { crc: 7 image: "elf" total_bytes: 3 } }
    packet { end_of_trace {} }
  )"));
  r = RunCli("info " + sampled);
  EXPECT_THAT(r.out, HasSubstr("samples: 9 in 1 PC records, 1 batches"));
  EXPECT_THAT(r.out, HasSubstr("cubins: 1"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("produced 0 samples")));
}

TEST(InfoCliTest, TruncatedTraceExitsZeroWithANoticeOnStderr) {
  std::string wire = FixtureWire("synthetic/killed.textproto");
  wire.resize(wire.size() - 3);
  CliResult r = RunCli("info " + WriteTempFile(wire));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.err, StartsWith("warpscope: "));
  EXPECT_THAT(r.err, HasSubstr("was cut short: ended without an end-of-trace marker"));
  EXPECT_EQ(CountLines(r.err), 1);
  EXPECT_THAT(r.out, HasSubstr("TRUNCATED"));
}

TEST(InfoCliTest, UnreadableInputsExitOneWithOneLine) {
  const std::string corrupt =
      WriteTempFile(FixtureWire("synthetic/basic.textproto") + std::string("\x0a\x02\x3f\x00", 4));
  const std::string newer = WriteTempFile(TextprotoToWire("packet { header { format_major: 2 } }"));
  for (const std::string& path : {std::string("/nonexistent.wst"), WriteTempFile("not a trace\n"),
                                  WriteTempFile(""), corrupt, newer}) {
    SCOPED_TRACE(path);
    CliResult r = RunCli("info " + path);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, StartsWith("warpscope: "));
    EXPECT_EQ(CountLines(r.err), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
  EXPECT_THAT(RunCli("info " + newer).err, HasSubstr("trace format 2.x is newer"));
}

TEST(InfoCliTest, PathsThatAreNotTraceFilesExitOneForEveryCommand) {
  const std::string fifo = WriteTempFile("", "fifo");
  ASSERT_EQ(unlink(fifo.c_str()), 0);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);  // no writer: opening it must not wait
  const std::string trace = WriteTempFile(FixtureWire("synthetic/basic.textproto"));
  const std::string gzipped = trace + ".gz";
  ASSERT_EQ(std::system(absl::StrCat("gzip -c ", trace, " > ", gzipped).c_str()), 0);
  const std::string empty_dir = MakeTempDir();
  const std::pair<std::string, std::string> cases[] = {
      {"/dev/zero", "warpscope: /dev/zero is a character device, not a trace file"},
      {fifo, absl::StrCat("warpscope: ", fifo, " is a FIFO (named pipe), not a trace file")},
      // A folder stands for its traces (model/trace_paths.h): one without any says so.
      {empty_dir, absl::StrCat("warpscope: ", empty_dir, " is a folder without .wst traces")},
      {gzipped, absl::StrCat("warpscope: ", gzipped, " looks gzip-compressed")},
  };
  for (const char* command : {"info", "summary", "occupancy", "tail"}) {
    for (const auto& [path, says] : cases) {
      SCOPED_TRACE(absl::StrCat(command, " ", path));
      CliResult r = RunCli(absl::StrCat(command, " ", path));
      EXPECT_EQ(r.exit_code, 1);
      EXPECT_THAT(r.err, StartsWith(says));
      EXPECT_EQ(CountLines(r.err), 1) << r.err;
      EXPECT_EQ(r.out, "");
    }
  }
  std::remove(gzipped.c_str());
}

TEST(InfoCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCli("info").exit_code, 2);
  EXPECT_EQ(RunCli("info a.wst b.wst").exit_code, 2);
  EXPECT_EQ(RunCli("info --format xml a.wst").exit_code, 2);
  EXPECT_EQ(RunCli("info --bogus a.wst").exit_code, 2);
  CliResult help = RunCli("info --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("usage: warpscope info"));
}

TEST(SummaryCliTest, SummarizesSeveralTraces) {
  const std::string a = WriteTempFile(FixtureWire("synthetic/basic.textproto"));
  const std::string b = WriteTempFile(FixtureWire("synthetic/two_gpus.textproto"));
  CliResult r = RunCli(absl::StrCat("summary --format csv --report kernels ", a, " ", b));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("file,device,time_percent,total_time_ns,instances,"));
  EXPECT_THAT(r.out, HasSubstr("\n*,,"));  // the combined view
}

// Readable defaults: a device the process never used gets no section, and a kernel name of
// hundreds of characters (PyTorch's templates) is cut at 100 in the text table, whole in CSV.
TEST(SummaryCliTest, UnusedDevicesAndLongNamesStayOutOfTheText) {
  const std::string name = "void at::native::kernel<" + std::string(300, 'T') + ">(float*)";
  const std::string text = absl::StrCat(R"pb(
    packet { header { format_major: 1 format_minor: 0 tool_version: "0.1.0" pid: 1
                      clock_domain: CLOCK_DOMAIN_SYNTHETIC producer: "test:defaults" } }
    packet { device { id: 0 name: "NVIDIA H200" compute_capability_major: 9 } }
    packet { device { id: 1 name: "NVIDIA H200" compute_capability_major: 9 } }
    packet { device { id: 2 name: "NVIDIA H200" compute_capability_major: 9 } }
    packet { interned_string { id: 1 value: ")pb", name, R"pb(" } }
    packet { kernel { name_id: 1 start_ns: 1000 duration_ns: 5000 device_id: 0 context_id: 1
                      stream_id: 7 correlation_id: 1 } }
    packet { end_of_trace { } }
  )pb");
  const std::string path = WriteTempFile(TextprotoToWire(text), "defaults.wst");
  CliResult r = RunCli("summary --report kernels " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("GPU 0"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("GPU 1")));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("no kernels")));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr(name)));
  EXPECT_THAT(r.out, HasSubstr("..."));
  CliResult whole = RunCli("summary --report kernels --name-width 0 " + path);
  EXPECT_THAT(whole.out, HasSubstr(name));
  CliResult csv = RunCli("summary --report kernels -f csv " + path);
  EXPECT_THAT(csv.out, HasSubstr(name));
}

TEST(SummaryCliTest, ErrorsAndUsage) {
  EXPECT_EQ(RunCli("summary").exit_code, 2);
  EXPECT_EQ(RunCli("summary --sort fastest x.wst").exit_code, 2);
  EXPECT_EQ(RunCli("summary --top -1 x.wst").exit_code, 2);
  EXPECT_EQ(RunCli("summary --top many x.wst").exit_code, 2);
  EXPECT_EQ(RunCli("summary --report gpu x.wst").exit_code, 2);
  EXPECT_EQ(RunCli("summary --format xml x.wst").exit_code, 2);
  const std::string good = WriteTempFile(FixtureWire("synthetic/basic.textproto"));
  CliResult r = RunCli("summary " + good + " /nonexistent.wst");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("warpscope: cannot open /nonexistent.wst: No such file"));
}

}  // namespace
}  // namespace warpscope
