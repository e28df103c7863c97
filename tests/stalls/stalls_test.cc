// Tests of `warpscope stalls`: the CUPTI-name-to-warp-state mapping, the advice table, the
// cycles-per-issue estimate, and diff tests of tests/data/synthetic/pc_stalls.textproto
// (figures worked out by hand in the fixture's header) through the library and the CLI.
#include "analyzers/analyses/stalls.h"

#include "analyzers/measures/intervals.h"

#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"
#include "analyzers/model/cupti_host.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using namespace ::warpscope::testing;  // NOLINT(build/namespaces): the test helpers.

void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string problem = CompareWithGolden("stalls/golden/" + name, actual);
  EXPECT_EQ(problem, "") << problem;
}

// The report as the CLI renders it (text, CSV or JSON).
std::string Rendered(const StallReport& report, OutputFormat format) {
  return RenderReport(StallReportTables(report, report.view == StallView::kPc), format).value();
}

std::string FixturePath() {
  static const std::string path =
      WriteTempFile(FixtureWire("synthetic/pc_stalls.textproto"), "pc_stalls.wst");
  return path;
}

absl::StatusOr<StallReport> Build(const TraceModel& model, StallReportOptions options = {}) {
  return BuildStallReport({&model}, {"pc_stalls.wst"}, options);
}

TEST(StallReasonNameTest, StripsNsightPrefixesAndSplitsNotIssued) {
  WarpStateName n = ParseStallReasonName("smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  EXPECT_EQ(n.state, "long_scoreboard");
  EXPECT_FALSE(n.not_issued);
  n = ParseStallReasonName("smsp__pcsamp_warps_issue_stalled_math_pipe_throttle_not_issued");
  EXPECT_EQ(n.state, "math_pipe_throttle");
  EXPECT_TRUE(n.not_issued);
  EXPECT_EQ(ParseStallReasonName("smsp__pcsamp_warps_issue_stalled_selected").state, "selected");
  EXPECT_EQ(ParseStallReasonName("smsp__pcsamp_warps_issue_selected").state, "selected");
  // Nsight Compute's name for what CUPTI calls no_instructions.
  EXPECT_EQ(ParseStallReasonName("smsp__pcsamp_warps_issue_stalled_no_instructions").state,
            "no_instruction");
  EXPECT_EQ(ParseStallReasonName("smsp__pcsamp_warps_issue_stalled_not_selected").state,
            "not_selected");
  EXPECT_EQ(ParseStallReasonName("smsp__pcsamp_sample_count").state, "sample_count");
  // A name of another form is kept as it is.
  EXPECT_EQ(ParseStallReasonName("gmma").state, "gmma");
  EXPECT_EQ(ParseStallReasonName("").state, "");
}

TEST(StallReasonAdviceTest, EveryCommonStateHasOneSentence) {
  for (const char* state :
       {"long_scoreboard", "barrier", "wait", "math_pipe_throttle", "short_scoreboard",
        "mio_throttle", "lg_throttle", "not_selected", "selected", "no_instruction",
        "branch_resolving", "dispatch_stall", "drain", "imc_miss", "membar", "sleeping",
        "tex_throttle", "misc"}) {
    EXPECT_NE(StallReasonAdvice(state), "") << state;
  }
  for (std::string_view state : KnownWarpStates()) {
    const std::string_view advice = StallReasonAdvice(state);
    EXPECT_GT(advice.size(), 40u) << state;
    EXPECT_EQ(advice.find('\n'), std::string_view::npos) << state;
    EXPECT_NE(advice.back(), '.') << state;  // rendered after the share, no full stop
  }
  EXPECT_THAT(std::string(StallReasonAdvice("long_scoreboard")), HasSubstr("coalescing"));
  EXPECT_THAT(std::string(StallReasonAdvice("barrier")), HasSubstr("__syncthreads"));
  EXPECT_EQ(StallReasonAdvice("reason_9"), "");
}

TEST(WarpCyclesPerIssueTest, SamplesOverSelected) {
  EXPECT_DOUBLE_EQ(WarpCyclesPerIssue(125, 20), 6.25);
  EXPECT_DOUBLE_EQ(WarpCyclesPerIssue(20, 20), 1.0);
  EXPECT_TRUE(std::isnan(WarpCyclesPerIssue(50, 0)));
  EXPECT_TRUE(std::isnan(WarpCyclesPerIssue(0, 0)));
}

TEST(StallReportTest, FixtureFiguresMatchTheHandComputedOnes) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(FixturePath());
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<StallReport> report = Build(*model);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->rows.size(), 2u);
  EXPECT_EQ(report->samples, 175u);

  const StallKernelRow& stencil = report->rows[0];
  EXPECT_EQ(stencil.name, "stencil(double*, double const*)");
  EXPECT_EQ(stencil.samples, 125u);
  EXPECT_EQ(stencil.selected, 20u);
  EXPECT_EQ(stencil.not_issued, 50u);  // a subset: not in samples
  EXPECT_DOUBLE_EQ(stencil.cycles_per_issue, 6.25);
  EXPECT_NEAR(stencil.fraction, 125.0 / 175.0, 1e-12);
  ASSERT_EQ(stencil.reasons.size(), 3u);
  EXPECT_EQ(stencil.reasons[0].state, "long_scoreboard");
  EXPECT_EQ(stencil.reasons[0].samples, 80u);
  EXPECT_DOUBLE_EQ(stencil.reasons[0].fraction, 0.64);
  EXPECT_EQ(stencil.reasons[1].state, "barrier");
  EXPECT_DOUBLE_EQ(stencil.reasons[1].fraction, 0.2);
  EXPECT_EQ(stencil.reasons[2].state, "selected");
  EXPECT_DOUBLE_EQ(stencil.reasons[2].fraction, 0.16);
  ASSERT_EQ(stencil.pcs.size(), 2u);
  EXPECT_EQ(stencil.pcs[0].pc_offset, 0x100u);
  EXPECT_EQ(stencil.pcs[0].samples, 95u);  // summed over both batches
  EXPECT_EQ(stencil.pcs[1].pc_offset, 0x180u);
  EXPECT_EQ(stencil.pcs[1].samples, 30u);

  const StallKernelRow& reduce = report->rows[1];
  EXPECT_EQ(reduce.name, "reduce(double const*, double*)");
  EXPECT_EQ(reduce.samples, 50u);
  EXPECT_TRUE(std::isnan(reduce.cycles_per_issue));  // nothing selected
  ASSERT_EQ(reduce.reasons.size(), 3u);
  EXPECT_EQ(reduce.reasons[0].state, "math_pipe_throttle");
  EXPECT_DOUBLE_EQ(reduce.reasons[0].fraction, 0.64);
  EXPECT_EQ(reduce.reasons[2].state, "reason_9");
  EXPECT_EQ(report->unknown_reason_samples, 8u);
  EXPECT_EQ(report->dropped_samples, 3u);
}

TEST(StallReportTest, GoldenTextCsvJson) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(FixturePath());
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<StallReport> report = Build(*model);
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectGolden("pc_stalls.txt", Rendered(*report, OutputFormat::kTable));
  ExpectGolden("pc_stalls.csv", Rendered(*report, OutputFormat::kCsv));
  ExpectGolden("pc_stalls.json", Rendered(*report, OutputFormat::kJson));
  ExpectGolden("pc_stalls.svg", RenderStallSvg(*report));
  StallReportOptions by_pc;
  by_pc.view = StallView::kPc;
  by_pc.top = 1;
  report = Build(*model, by_pc);
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectGolden("pc_stalls_by_pc.txt", Rendered(*report, OutputFormat::kTable));
  ExpectGolden("pc_stalls_by_pc.csv", Rendered(*report, OutputFormat::kCsv));
}

// Source lines with a fake locator over a stand-in cubin: stencil's PC 0x100 (95 samples) is
// line 10 and 0x180 (30) line 20 of stencil.cu; reduce's 0x40 (48) has no line table and 0x80
// (2) is refused, so reduce has no lines and 50 samples without one.
absl::StatusOr<SassSourceLine> FixtureLocator(std::span<const uint8_t>, const std::string& function,
                                              uint64_t pc) {
  if (function == "_Z7stencilPdPKd") {
    return SassSourceLine{"/src", "stencil.cu", pc == 0x100 ? 10u : 20u};
  }
  if (pc == 0x40) return SassSourceLine{};
  return absl::NotFoundError("refused");
}

TEST(StallReportTest, ByLineSumsThePcsOfEachLine) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(FixturePath());
  ASSERT_TRUE(model.ok()) << model.status();
  std::string cubin = "\x7f" "ELF";
  cubin.resize(256, '\0');
  model->cubins[3735928559] = cubin;
  StallReportOptions options;
  options.view = StallView::kLine;
  options.locator = FixtureLocator;
  absl::StatusOr<StallReport> report = Build(*model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->rows.size(), 2u);
  const StallKernelRow& stencil = report->rows[0];
  ASSERT_EQ(stencil.lines.size(), 2u);
  EXPECT_EQ(stencil.lines[0].source.path, "/src/stencil.cu");
  EXPECT_EQ(stencil.lines[0].source.line, 10u);
  EXPECT_EQ(stencil.lines[0].samples, 95u);
  EXPECT_DOUBLE_EQ(stencil.lines[0].fraction, 0.76);
  EXPECT_EQ(stencil.lines[0].reasons[0].state, "long_scoreboard");
  EXPECT_EQ(stencil.lines[0].reasons[0].samples, 80u);
  EXPECT_EQ(stencil.lines[1].source.line, 20u);
  EXPECT_EQ(stencil.lines[1].samples, 30u);
  EXPECT_EQ(stencil.lines[1].reasons[0].state, "barrier");
  EXPECT_EQ(stencil.unlocated_samples, 0u);
  EXPECT_EQ(stencil.pcs[0].source.line, 10u);
  const StallKernelRow& reduce = report->rows[1];
  EXPECT_TRUE(reduce.lines.empty());
  EXPECT_EQ(reduce.unlocated_samples, 50u);
  EXPECT_EQ(report->source.pcs, 4u);
  EXPECT_EQ(report->source.without_line_info, 1u);
  EXPECT_EQ(report->source.failed, 1u);
  EXPECT_EQ(report->source.problem, "refused");
  const std::vector<std::string> notes = StallReportNotes(*report);
  EXPECT_THAT(absl::StrJoin(notes, "\n"), HasSubstr("no source line for 1 PC: refused"));
  EXPECT_THAT(absl::StrJoin(notes, "\n"), HasSubstr("build with nvcc -lineinfo"));
  ExpectGolden("pc_stalls_by_line.txt", Rendered(*report, OutputFormat::kTable));
  ExpectGolden("pc_stalls_by_line.csv", Rendered(*report, OutputFormat::kCsv));
  ExpectGolden("pc_stalls_by_line.json", Rendered(*report, OutputFormat::kJson));
  // The kernel view names each kernel's hottest line.
  options.view = StallView::kKernel;
  report = Build(*model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(Rendered(*report, OutputFormat::kTable), HasSubstr("stencil.cu:10 76.0%"));
}

// Recorded on an H200 (tests/data/cuda13.0_sm90/README.md): the top three warp states of each
// kernel within 1 point of Nsight Compute's shares for the same kernels, and warp cycles per
// issued instruction within 3% (not the contended atomics, which run differently when
// Nsight Compute replays them alone).
TEST(StallReportTest, RecordedH200TraceAgreesWithNsightCompute) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(::warpscope::testing::SourceDir() + "/tests/data/cuda13.0_sm90/pc_kernels.wst");
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<StallReport> report = BuildStallReport({&*model}, {"pc_kernels.wst"}, {});
  ASSERT_TRUE(report.ok()) << report.status();
  struct Expected {
    std::string kernel;
    std::vector<std::pair<std::string, double>> top;  // Nsight Compute's shares, %
    double cycles_per_issue;                            // Nsight Compute's; 0: not compared
  };
  const std::vector<Expected> expected = {
      {"ws_pc_memory", {{"long_scoreboard", 98.7}, {"wait", 1.0}, {"selected", 0.3}}, 303.85},
      {"ws_pc_math", {{"wait", 74.7}, {"selected", 24.3}, {"not_selected", 0.5}}, 4.12},
      {"ws_pc_barrier", {{"wait", 51.0}, {"selected", 18.2}, {"branch_resolving", 12.6}}, 5.49},
      {"ws_pc_atomics", {{"lg_throttle", 84.1}, {"long_scoreboard", 15.7}, {"drain", 0.1}}, 0},
      {"ws_pc_short", {{"wait", 66.2}, {"selected", 15.0}, {"no_instruction", 7.7}}, 6.66},
  };
  ASSERT_EQ(report->rows.size(), expected.size());
  for (const Expected& e : expected) {
    const StallKernelRow* row = nullptr;
    for (const StallKernelRow& k : report->rows) {
      if (k.name.rfind(e.kernel + "(", 0) == 0) row = &k;
    }
    ASSERT_NE(row, nullptr) << e.kernel;
    ASSERT_FALSE(row->reasons.empty()) << e.kernel;
    EXPECT_EQ(row->reasons[0].state, e.top[0].first) << e.kernel;
    for (const auto& [state, ncu_pct] : e.top) {
      double ours = -1;
      for (const StallShare& r : row->reasons) {
        if (r.state == state) ours = 100.0 * r.fraction;
      }
      EXPECT_NEAR(ours, ncu_pct, 1.0) << e.kernel << " " << state;
    }
    if (e.cycles_per_issue > 0) {
      EXPECT_NEAR(row->cycles_per_issue, e.cycles_per_issue, 0.03 * e.cycles_per_issue)
          << e.kernel;
    }
  }
}

// The hottest source line of each kernel of the recorded trace is the one its loop stalls on
// (CUPTI's SASS-to-source correlation over the trace's cubins; needs libcupti, no GPU).
TEST(StallReportTest, RecordedH200TraceHottestLines) {
  if (absl::StatusOr<std::string> lib = CuptiHostLibraryPath(); !lib.ok()) {
    GTEST_SKIP() << "no libcupti here: " << lib.status();
  }
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(::warpscope::testing::SourceDir() + "/tests/data/cuda13.0_sm90/pc_kernels.wst");
  ASSERT_TRUE(model.ok()) << model.status();
  StallReportOptions options;
  options.view = StallView::kLine;
  options.source_dirs = {::warpscope::testing::SourceDir() + "/tests/gpu"};
  absl::StatusOr<StallReport> report = BuildStallReport({&*model}, {"pc_kernels.wst"}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->source.failed, 0u) << report->source.problem;
  EXPECT_EQ(report->source.without_cubin, 0u);
  struct Expected {
    std::string kernel, file;
    uint32_t line;
    std::string code;  // part of the line's text
  };
  const std::vector<Expected> expected = {
      {"ws_pc_memory", "pc_kernels.cu", 44, "i = next[i & ((1u << 24) - 1)];"},
      {"ws_pc_math", "pc_kernels.cu", 56, "a = __fmaf_rn(a, b, 0.5f);"},
      {"ws_pc_barrier", "pc_kernels.cu", 68, "a = a * 1.0001f + 1.0f;"},
      // atomicAdd is inlined: its instructions carry the line of CUDA's own header.
      {"ws_pc_atomics", "device_atomic_functions.hpp", 112, ""},
      {"ws_pc_short", "pc_kernels.cu", 92, "sqrtf(a + 1.0f)"},
  };
  for (const Expected& e : expected) {
    const StallKernelRow* row = nullptr;
    for (const StallKernelRow& k : report->rows) {
      if (k.name.starts_with(e.kernel + "(")) row = &k;
    }
    ASSERT_NE(row, nullptr) << e.kernel;
    ASSERT_FALSE(row->lines.empty()) << e.kernel;
    EXPECT_TRUE(row->lines[0].source.path.ends_with("/" + e.file)) << row->lines[0].source.path;
    EXPECT_EQ(row->lines[0].source.line, e.line) << e.kernel;
    if (!e.code.empty()) {
      EXPECT_THAT(row->lines[0].code, HasSubstr(e.code)) << e.kernel;
    }
    EXPECT_GT(row->lines[0].fraction, 0.8) << e.kernel;
    EXPECT_EQ(row->unlocated_samples, 0u) << e.kernel;
  }
}

// Five kernels each built to stall on one warp state (tests/gpu/stall_kernels.cu), recorded on
// an H200 (tests/data/cuda13.0_sm90/README.md): the top state equals Nsight Compute's, each of
// its top three shares is within 5 points of Nsight Compute's share of the same state, and the
// hottest source line is the line marked `// ws-stall-line: <name>` in the source.
TEST(StallReportTest, PurposeBuiltKernelsAgreeWithNsightComputeAndFindTheirLine) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(
      ::warpscope::testing::SourceDir() + "/tests/data/cuda13.0_sm90/stall_kernels.wst");
  ASSERT_TRUE(model.ok()) << model.status();
  StallReportOptions options;
  options.view = StallView::kLine;
  absl::StatusOr<StallReport> report = BuildStallReport({&*model}, {"stall_kernels.wst"}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  // Nsight Compute 2025.3.1 on the same binary (stall_kernels_ncu.csv), shares of the sum of
  // smsp__average_warps_issue_stalled_*_per_issue_active.ratio without `_not_issued`.
  struct Expected {
    std::string name;
    std::vector<std::pair<std::string, double>> ncu;
  };
  const std::vector<Expected> expected = {
      {"long_scoreboard", {{"long_scoreboard", 99.24}, {"wait", 0.54}, {"selected", 0.16}}},
      {"barrier", {{"barrier", 85.61}, {"wait", 4.63}, {"short_scoreboard", 4.02}}},
      {"wait", {{"wait", 64.38}, {"selected", 26.03}, {"no_instruction", 5.48}}},
      {"bank_conflict", {{"short_scoreboard", 98.68}, {"wait", 0.93}, {"selected", 0.33}}},
      {"fma_saturated", {{"not_selected", 85.14}, {"selected", 6.13}, {"math_pipe_throttle", 4.22}}},
  };
  // The marked lines, read from the source as it is now.
  const std::string source =
      ReadFileOrDie(::warpscope::testing::SourceDir() + "/tests/gpu/stall_kernels.cu");
  std::map<std::string, uint32_t> marked;
  uint32_t number = 0;
  for (absl::string_view line : absl::StrSplit(source, '\n')) {
    ++number;
    const size_t at = line.find("// ws-stall-line: ");
    if (at != absl::string_view::npos && line.find("`") == absl::string_view::npos) {
      marked[std::string(absl::StripAsciiWhitespace(line.substr(at + 18)))] = number;
    }
  }
  ASSERT_EQ(marked.size(), expected.size());
  const bool lines = CuptiHostLibraryPath().ok();
  for (const Expected& e : expected) {
    const StallKernelRow* row = nullptr;
    for (const StallKernelRow& k : report->rows) {
      if (k.name.starts_with("ws_stall_" + e.name + "(")) row = &k;
    }
    ASSERT_NE(row, nullptr) << e.name;
    ASSERT_GE(row->reasons.size(), 3u);
    EXPECT_EQ(row->reasons[0].state, e.ncu[0].first) << e.name;
    for (const auto& [state, ncu_pct] : e.ncu) {
      double ours = -1;
      for (const StallShare& r : row->reasons) {
        if (r.state == state) ours = 100.0 * r.fraction;
      }
      EXPECT_NEAR(ours, ncu_pct, 5.0) << e.name << " " << state;
    }
    if (lines) {  // source lines need libcupti on this machine
      ASSERT_FALSE(row->lines.empty()) << e.name;
      EXPECT_TRUE(row->lines[0].source.path.ends_with("/stall_kernels.cu"))
          << row->lines[0].source.path;
      EXPECT_EQ(row->lines[0].source.line, marked.at(e.name)) << e.name;
    }
  }
}

// Each share's 95% interval, over the kernel's sampling instants, holds Nsight Compute's share
// of the same state, on both recorded traces (the figures above); a kernel whose top share's
// interval is wider than 5 points says so and what period would give enough.
TEST(StallReportTest, IntervalsHoldNsightComputesShares) {
  struct Expected {
    std::string trace, kernel;
    std::vector<std::pair<std::string, double>> ncu;
  };
  const std::vector<Expected> expected = {
      {"pc_kernels", "ws_pc_memory", {{"long_scoreboard", 98.7}, {"wait", 1.0}, {"selected", 0.3}}},
      {"pc_kernels", "ws_pc_math", {{"wait", 74.7}, {"selected", 24.3}, {"not_selected", 0.5}}},
      {"pc_kernels", "ws_pc_barrier",
       {{"wait", 51.0}, {"selected", 18.2}, {"branch_resolving", 12.6}}},
      {"pc_kernels", "ws_pc_atomics",
       {{"lg_throttle", 84.1}, {"long_scoreboard", 15.7}, {"drain", 0.1}}},
      {"pc_kernels", "ws_pc_short", {{"wait", 66.2}, {"selected", 15.0}, {"no_instruction", 7.7}}},
      {"stall_kernels", "ws_stall_long_scoreboard",
       {{"long_scoreboard", 99.24}, {"wait", 0.54}, {"selected", 0.16}}},
      {"stall_kernels", "ws_stall_barrier",
       {{"barrier", 85.61}, {"wait", 4.63}, {"short_scoreboard", 4.02}}},
      {"stall_kernels", "ws_stall_wait", {{"wait", 64.38}, {"selected", 26.03}, {"no_instruction", 5.48}}},
      {"stall_kernels", "ws_stall_bank_conflict",
       {{"short_scoreboard", 98.68}, {"wait", 0.93}, {"selected", 0.33}}},
      {"stall_kernels", "ws_stall_fma_saturated",
       {{"not_selected", 85.14}, {"selected", 6.13}, {"math_pipe_throttle", 4.22}}},
  };
  std::map<std::string, TraceModel> models;
  std::map<std::string, StallReport> reports;
  for (const std::string name : {"pc_kernels", "stall_kernels"}) {
    absl::StatusOr<TraceModel> model = TraceModel::Load(
        ::warpscope::testing::SourceDir() + "/tests/data/cuda13.0_sm90/" + name + ".wst");
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(PcSamplingPeriodExponent(*model), 15u);
    auto it = models.emplace(name, std::move(*model)).first;
    StallReportOptions options;
    options.locator = nullptr;
    absl::StatusOr<StallReport> report = BuildStallReport({&it->second}, {name}, options);
    ASSERT_TRUE(report.ok()) << report.status();
    reports.emplace(name, std::move(*report));
  }
  for (const Expected& e : expected) {
    const StallKernelRow* row = nullptr;
    for (const StallKernelRow& k : reports.at(e.trace).rows) {
      if (k.name.starts_with(e.kernel + "(")) row = &k;
    }
    ASSERT_NE(row, nullptr) << e.kernel;
    // About 132 samples an instant: one per SM.
    EXPECT_GT(row->sampling_instants, row->samples / 200.0) << e.kernel;
    EXPECT_LT(row->sampling_instants, row->samples / 100.0) << e.kernel;
    for (const auto& [state, ncu_pct] : e.ncu) {
      const StallShare* share = nullptr;
      for (const StallShare& r : row->reasons) {
        if (r.state == state) share = &r;
      }
      ASSERT_NE(share, nullptr) << e.kernel << " " << state;
      EXPECT_LE(100 * share->low, ncu_pct) << e.kernel << " " << state;
      EXPECT_GE(100 * share->high, ncu_pct) << e.kernel << " " << state;
      EXPECT_LT(share->low, share->fraction + 1e-12);
      EXPECT_GT(share->high, share->fraction - 1e-12);
    }
    // ws_pc_short ran 16k samples in about 120 instants: +-9 points; the others have enough.
    if (e.kernel == "ws_pc_short") {
      EXPECT_THAT(row->too_few, HasSubstr("--pc-period 13"));
    } else {
      EXPECT_EQ(row->too_few, "") << e.kernel;
    }
  }
  // The fill kernel of stall_kernels.wst: 630 samples, about 10 instants.
  const StallKernelRow* fill = nullptr;
  for (const StallKernelRow& k : reports.at("stall_kernels").rows) {
    if (k.name.starts_with("ws_fill_chain(")) fill = &k;
  }
  ASSERT_NE(fill, nullptr);
  EXPECT_LT(fill->sampling_instants, 20);
  EXPECT_THAT(fill->too_few, HasSubstr("--pc-period 9"));
  EXPECT_GT(fill->reasons[0].high - fill->reasons[0].low, 0.4);
  std::vector<std::string> notes = StallReportNotes(reports.at("stall_kernels"));
  EXPECT_THAT(notes, ::testing::Contains(HasSubstr("ws_fill_chain(unsigned int*): only about")));
}

TEST(StallReportTest, WilsonIntervalsAtTheEdges) {
  const Interval half = WilsonInterval(0.5, 385);
  EXPECT_NEAR(half.low, 0.45, 0.002);
  EXPECT_NEAR(half.high, 0.55, 0.002);
  const Interval all = WilsonInterval(1.0, 10);
  EXPECT_LT(all.low, 0.75);  // not empty at p = 1
  EXPECT_EQ(all.high, 1.0);
  const Interval none = WilsonInterval(0.3, 0);
  EXPECT_EQ(none.low, 0.0);
  EXPECT_EQ(none.high, 1.0);
}

// A device's stall reasons written twice are merged (a later name for an index wins), and a
// packet with more indices than names is counted; the Python reader follows the same rule.
TEST(StallReportTest, StallReasonsOfOneDeviceAreMerged) {
  std::string wire = FixtureWire("synthetic/pc_stalls.textproto");
  wire += ::warpscope::testing::TextprotoToWire(R"pb(
    packet {
      pc_stall_reasons {
        device_id: 0
        index: 9 name: "smsp__pcsamp_warps_issue_stalled_wait"
        index: 10
      }
    }
  )pb");
  absl::StatusOr<TraceModel> model = TraceModel::Load(WriteTempFile(wire, "merged.wst"));
  ASSERT_TRUE(model.ok()) << model.status();
  const PcStallReasons* reasons = model->FindPcStallReasons(0);
  ASSERT_NE(reasons, nullptr);
  EXPECT_EQ(reasons->name_by_index.size(), 7u);  // 6 from the first packet, index 9 added
  EXPECT_EQ(reasons->name_by_index.at(1), "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  EXPECT_EQ(reasons->name_by_index.at(9), "smsp__pcsamp_warps_issue_stalled_wait");
  uint64_t mismatches = 0;
  for (const StatCounter& c : model->import_counters) {
    if (c.name == "model.pc_stall_reasons_length_mismatch") mismatches = c.value;
  }
  EXPECT_EQ(mismatches, 1u);
  // Index 9 is now named: reduce's 8 samples are `wait`, not `reason_9`.
  absl::StatusOr<StallReport> report = Build(*model);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->unknown_reason_samples, 0u);
}

TEST(StallReportTest, KernelFilterTopAndBadRegex) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(FixturePath());
  ASSERT_TRUE(model.ok()) << model.status();
  StallReportOptions options;
  options.kernel_regex = "^reduce";
  options.top = 1;
  absl::StatusOr<StallReport> report = Build(*model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->rows.size(), 1u);
  EXPECT_DOUBLE_EQ(report->rows[0].fraction, 1.0);
  const std::string text = Rendered(*report, OutputFormat::kTable);
  EXPECT_THAT(text, HasSubstr("math_pipe_throttle 64.0%\n"));
  EXPECT_EQ(text.find("not_selected"), std::string::npos);
  options.kernel_regex = "(";
  report = Build(*model, options);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StallReportTest, TraceWithoutPcSamplesSaysHowToRecordThem) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(WriteTempFile(FixtureWire("synthetic/basic.textproto"), "basic.wst"));
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<StallReport> report = Build(*model);
  EXPECT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(report.status().message(), HasSubstr("warpscope record --pc-sampling"));
}

TEST(StallsCliTest, PrintsTheReportAndHelp) {
  CliResult r = RunCli("stalls " + FixturePath());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ReadFileOrDie(::warpscope::testing::SourceDir() +
                                 "/tests/stalls/golden/pc_stalls.txt"));
  r = RunCli("stalls --format csv " + FixturePath());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("warpscope: 8 samples have a stall reason index"));
  r = RunCli("help stalls");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("usage: warpscope stalls"));
  EXPECT_THAT(r.out, HasSubstr("--by"));
}

TEST(StallsCliTest, ErrorsAreOneLine) {
  const std::string basic =
      WriteTempFile(FixtureWire("synthetic/basic.textproto"), "basic_for_cli.wst");
  CliResult r = RunCli("stalls " + basic);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(::warpscope::testing::CountLines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warpscope record --pc-sampling"));
  r = RunCli("stalls --by function " + FixturePath());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("kernel, pc or line"));
  r = RunCli("stalls -k '(' " + FixturePath());
  EXPECT_EQ(r.exit_code, 2);
  r = RunCli("stalls");
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace warpscope
