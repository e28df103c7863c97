// Tests of what `warpscope diff` compares beyond time: achieved and theoretical occupancy and
// tail cost (traces with PM samples from the fixture builder, tests/fixtures/synthetic_trace.h)
// and the stall mix (hand-written PC samples), and the notes when a trace lacks samples.
//
// The program: 12 launches of `gemm(float*)` (400 us, 1056 blocks of 256 threads, 32
// registers: 8 blocks of 8 warps on each of the 132 SMs, theoretical 100%) and of `relu(float*)` (50 us), each pair followed by
// cudaDeviceSynchronize; PM samples every 10 us. Runs differ in the builder's seed (its ±1%
// noise) and in what a test changes about gemm.
#include <cmath>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/diff.h"
#include "analyzers/measures/occupancy_calculator.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace ::warpscope::testing;  // NOLINT(build/namespaces): the test helpers.

constexpr char kGemm[] = "gemm(float*)";
constexpr int kLaunches = 12;

struct Program {
  uint64_t seed = 1;
  bool pm_samples = true;
  uint64_t gemm_ns = 400000;
  uint32_t gemm_registers = 32;  // 128: 2 blocks of 8 warps per SM, theoretical 25%
  double gemm_achieved = 0.9;    // of theoretical warps
  fixtures::WarpProfile gemm_profile = fixtures::WarpProfile::kBalanced;
};

std::string WriteRun(const Program& run, const std::string& name) {
  const std::string path = absl::StrCat(MakeTempDir(), "/", name);
  fixtures::SyntheticTraceOptions options;
  options.seed = run.seed;
  options.pm_interval_ns = run.pm_samples ? 10000 : 0;
  options.force_overwrite = true;
  std::string error;
  std::unique_ptr<fixtures::SyntheticTraceBuilder> b =
      fixtures::SyntheticTraceBuilder::Create(path, options, &error);
  EXPECT_NE(b, nullptr) << error;
  if (b == nullptr) return path;
  fixtures::KernelSpec gemm;
  gemm.name = kGemm;
  gemm.grid_x = 1056;
  gemm.duration_ns = run.gemm_ns;
  gemm.registers_per_thread = run.gemm_registers;
  gemm.achieved_fraction = run.gemm_achieved;
  gemm.profile = run.gemm_profile;
  gemm.tail_fraction = 0.4;  // kImbalanced: 40% of the kernel on 4 blocks
  fixtures::KernelSpec relu;
  relu.name = "relu(float*)";
  relu.duration_ns = 50000;
  for (int i = 0; i < kLaunches; ++i) {
    b->LaunchKernel(gemm);
    b->LaunchKernel(relu);
    b->DeviceSynchronize();
  }
  EXPECT_TRUE(b->Finish());
  return path;
}

// Theoretical occupancy needs CUDA's calculator (cuda_occupancy.h), which a build without the
// toolkit lacks: its rows then read n/a there.
bool HasOccupancyCalculator() {
  return ComputeTheoreticalOccupancy(DeviceInfo{}, LaunchConfig{}).status().code() !=
         absl::StatusCode::kUnimplemented;
}

void ExpectTheoretical(double actual, double expected) {
  if (HasOccupancyCalculator()) {
    EXPECT_DOUBLE_EQ(actual, expected);
  } else {
    EXPECT_TRUE(std::isnan(actual)) << actual;
  }
}

TraceModel Load(const std::string& path) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

DiffReport Diff(const Program& base, const Program& next, const DiffOptions& options = {}) {
  return BuildDiffReport(Load(WriteRun(base, "base.wst")), Load(WriteRun(next, "new.wst")),
                         "base.wst", "new.wst", options);
}

const DiffRow* Find(const DiffReport& r, DiffSection section, const std::string& name,
                    const std::string& figure = "") {
  for (const DiffRow& row : r.rows) {
    if (row.section == section && row.name == name && (figure.empty() || row.figure == figure)) {
      return &row;
    }
  }
  return nullptr;
}

TEST(DiffEfficiencyTest, UnchangedRunsHaveFiguresAndNoVerdicts) {
  Program other;
  other.seed = 7;  // the same program, other noise
  const DiffReport r = Diff({}, other);
  EXPECT_EQ(r.regressions, 0u);
  EXPECT_EQ(r.improvements, 0u);
  EXPECT_TRUE(r.notes.empty());
  const DiffRow* occupancy = Find(r, DiffSection::kOccupancy, kGemm);
  ASSERT_NE(occupancy, nullptr);
  EXPECT_EQ(occupancy->base_count, static_cast<uint64_t>(kLaunches));
  EXPECT_EQ(occupancy->new_count, static_cast<uint64_t>(kLaunches));
  // 90% of the 64 warps the launch allows while all blocks run, less the 6% drain.
  EXPECT_NEAR(occupancy->base_fraction, 0.87, 0.04);
  EXPECT_NEAR(occupancy->new_fraction, occupancy->base_fraction, 0.02);
  ExpectTheoretical(occupancy->base_theoretical, 1.0);
  ExpectTheoretical(occupancy->new_theoretical, 1.0);
  EXPECT_EQ(occupancy->verdict, DiffVerdict::kUnchanged);
  const DiffRow* tail = Find(r, DiffSection::kTail, kGemm);
  ASSERT_NE(tail, nullptr);
  EXPECT_TRUE(tail->per_instance);
  EXPECT_EQ(tail->verdict, DiffVerdict::kUnchanged);
  EXPECT_EQ(Find(r, DiffSection::kStalls, kGemm), nullptr);  // no PC samples on either side
}

TEST(DiffEfficiencyTest, LowerOccupancyThatCostsTimeIsARegressionWithTheKernelsImpact) {
  Program next;
  next.gemm_registers = 128;  // theoretical 25%
  next.gemm_ns = 600000;      // and the kernel takes 200 us longer
  const DiffReport r = Diff({}, next);
  const DiffRow* occupancy = Find(r, DiffSection::kOccupancy, kGemm);
  const DiffRow* kernel = Find(r, DiffSection::kKernel, kGemm);
  ASSERT_NE(occupancy, nullptr);
  ASSERT_NE(kernel, nullptr);
  ExpectTheoretical(occupancy->new_theoretical, 0.25);
  EXPECT_NEAR(occupancy->new_fraction, 0.25 * 0.87, 0.02);
  EXPECT_LT(occupancy->delta_fraction, -0.7);
  EXPECT_EQ(occupancy->verdict, DiffVerdict::kRegression);
  EXPECT_DOUBLE_EQ(occupancy->impact_ns, kernel->impact_ns);
  EXPECT_NEAR(occupancy->impact_ns, kLaunches * 200000.0, kLaunches * 200000.0 * 0.03);
  // Ranked with the kernel row by that impact, above everything else but the kernel itself.
  ASSERT_GE(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].name, kGemm);
  EXPECT_EQ(r.rows[1].name, kGemm);
}

TEST(DiffEfficiencyTest, LowerOccupancyWithoutATimeCostIsShownNotJudged) {
  Program next;
  next.gemm_achieved = 0.5;  // fewer warps, the same time
  const DiffReport r = Diff({}, next);
  const DiffRow* occupancy = Find(r, DiffSection::kOccupancy, kGemm);
  ASSERT_NE(occupancy, nullptr);
  EXPECT_NEAR(occupancy->delta_fraction, 0.5 / 0.9 - 1, 0.05);
  EXPECT_EQ(occupancy->verdict, DiffVerdict::kUnchanged);
  EXPECT_EQ(r.regressions, 0u);
}

TEST(DiffEfficiencyTest, ALongerTailIsARegressionOfItsCost) {
  Program next;
  next.gemm_profile = fixtures::WarpProfile::kImbalanced;  // the same time, 40% of it a tail
  const DiffReport r = Diff({}, next);
  EXPECT_EQ(Find(r, DiffSection::kKernel, kGemm)->verdict, DiffVerdict::kUnchanged);
  const DiffRow* tail = Find(r, DiffSection::kTail, kGemm);
  ASSERT_NE(tail, nullptr);
  EXPECT_EQ(tail->verdict, DiffVerdict::kRegression);
  EXPECT_TRUE(tail->per_instance);
  EXPECT_EQ(tail->new_count, static_cast<uint64_t>(kLaunches));
  // The tail runs 4 blocks of 132 for ~39% of 400 us: nearly all of that time is lost.
  EXPECT_GT(tail->new_ns, 120000);
  EXPECT_LT(tail->new_ns, 170000);
  EXPECT_LT(tail->base_ns, 20000);
  EXPECT_DOUBLE_EQ(tail->impact_ns, (tail->new_ns - tail->base_ns) * kLaunches);
  EXPECT_EQ(r.rows[0].section, DiffSection::kTail);  // the costliest change
  EXPECT_EQ(r.regressions, 1u) << RenderReport(DiffReportTables(r), OutputFormat::kTable).value();
  // --threshold acts on it: a tail cost 10x the base one is still a change above 1000%.
  DiffOptions lenient;
  lenient.min_delta_ns = 1e7;  // 10 ms: more than the 12 tails cost
  EXPECT_EQ(Diff({}, next, lenient).regressions, 0u);
}

TEST(DiffEfficiencyTest, ATraceWithoutPmSamplesGivesNaAndANote) {
  Program plain;
  plain.pm_samples = false;
  const DiffReport r = Diff({}, plain);
  const DiffRow* occupancy = Find(r, DiffSection::kOccupancy, kGemm);
  ASSERT_NE(occupancy, nullptr);
  EXPECT_TRUE(std::isnan(occupancy->new_fraction));
  EXPECT_EQ(occupancy->verdict, DiffVerdict::kUnchanged);
  const DiffRow* tail = Find(r, DiffSection::kTail, kGemm);
  ASSERT_NE(tail, nullptr);
  EXPECT_TRUE(std::isnan(tail->new_ns));
  EXPECT_EQ(r.regressions, 0u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_THAT(r.notes[0], HasSubstr("n/a for new.wst, which has no PM samples"));
  const std::string table = RenderReport(DiffReportTables(r), OutputFormat::kTable).value();
  EXPECT_THAT(table, HasSubstr("n/a (n/a)"));
  EXPECT_THAT(table, HasSubstr("record both runs with `warpscope record --pm-sampling`"));
  // Neither trace with samples: no efficiency rows, no note.
  const DiffReport none = Diff(plain, plain);
  EXPECT_EQ(Find(none, DiffSection::kOccupancy, kGemm), nullptr);
  EXPECT_TRUE(none.notes.empty());
}

TEST(DiffEfficiencyCliTest, FailsOnAnEfficiencyRegressionAndNotOnNoise) {
  Program other, worse;
  other.seed = 3;
  worse.gemm_profile = fixtures::WarpProfile::kImbalanced;
  const std::string base = WriteRun({}, "cli_base.wst");
  const std::string same = WriteRun(other, "cli_same.wst");
  const std::string next = WriteRun(worse, "cli_tail.wst");
  CliResult r = RunCli("diff --fail-on-regression " + base + " " + same);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("0 regression(s)"));
  EXPECT_THAT(r.out, HasSubstr("achieved (theoretical)"));
  r = RunCli("diff --fail-on-regression " + base + " " + next);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 regression(s)"));
  r = RunCli("diff --threshold 5000% --fail-on-regression " + base + " " + next);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = RunCli("diff -f csv " + base + " " + next);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("base_fraction,new_fraction,base_theoretical,new_theoretical,"
                               "verdict\n"));
  EXPECT_THAT(r.out, HasSubstr("tail,gemm(float*),12,12,median,"));
  EXPECT_THAT(r.out, HasSubstr("occupancy,gemm(float*),12,12,achieved (theoretical),"));
  r = RunCli("diff -f json " + base + " " + next);
  EXPECT_THAT(r.out, HasSubstr("\"section\":\"tail\""));
  EXPECT_THAT(r.out, Not(HasSubstr("nan")));
}

// Stall mixes from PC samples: one batch of gemm's samples in the given states.
std::string StallTrace(int long_scoreboard, int barrier, int selected, const std::string& name) {
  std::string text = absl::StrFormat(R"pb(
    packet { header { format_major: 1 format_minor: 0 tool_version: "0.1.0" pid: 1
                      clock_domain: CLOCK_DOMAIN_SYNTHETIC producer: "test:diff" } }
    packet { device { id: 0 name: "NVIDIA H200" compute_capability_major: 9 } }
    packet { interned_string { id: 1 value: "_Z4gemmPf" } }
    packet { pc_stall_reasons { device_id: 0
      index: 1 name: "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
      index: 2 name: "smsp__pcsamp_warps_issue_stalled_barrier"
      index: 3 name: "smsp__pcsamp_warps_issue_stalled_selected" } }
    packet { pc_samples { device_id: 0 context_id: 1 timestamp_ns: 5000 total_samples: %d
      records { cubin_crc: 1 function_name_id: 1 pc_offset: 256
                stall_reason_index: 1 stall_reason_index: 2 stall_reason_index: 3
                samples: %d samples: %d samples: %d } } }
    packet { end_of_trace { } }
  )pb", long_scoreboard + barrier + selected, long_scoreboard, barrier, selected);
  return WriteTempFile(TextprotoToWire(text), name);
}

TEST(DiffEfficiencyTest, StallSharesOfTheTopReasonsAreCompared) {
  const TraceModel base = Load(StallTrace(60, 20, 20, "stalls_base.wst"));
  const TraceModel next = Load(StallTrace(30, 50, 20, "stalls_new.wst"));
  const DiffReport r = BuildDiffReport(base, next, "a", "b", {});
  const DiffRow* scoreboard = Find(r, DiffSection::kStalls, kGemm, "long_scoreboard");
  const DiffRow* barrier = Find(r, DiffSection::kStalls, kGemm, "barrier");
  ASSERT_NE(scoreboard, nullptr);
  ASSERT_NE(barrier, nullptr);
  EXPECT_EQ(scoreboard->base_count, 100u);
  EXPECT_DOUBLE_EQ(scoreboard->base_fraction, 0.6);
  EXPECT_DOUBLE_EQ(scoreboard->new_fraction, 0.3);
  EXPECT_DOUBLE_EQ(barrier->base_fraction, 0.2);
  EXPECT_DOUBLE_EQ(barrier->new_fraction, 0.5);
  EXPECT_DOUBLE_EQ(barrier->delta_fraction, 1.5);
  EXPECT_EQ(barrier->verdict, DiffVerdict::kUnchanged);  // a mix has no time of its own
  EXPECT_NE(Find(r, DiffSection::kStalls, kGemm, "selected"), nullptr);
  EXPECT_TRUE(r.notes.empty());
  const std::string table = RenderReport(DiffReportTables(r), OutputFormat::kTable).value();
  EXPECT_THAT(table, HasSubstr("long_scoreboard"));
  EXPECT_THAT(table, HasSubstr("+150.0%"));
  // NEW without PC samples: its shares are n/a and a note names it.
  const DiffReport half = BuildDiffReport(base, Load(WriteRun({}, "pm_only.wst")), "a", "b", {});
  const DiffRow* missing = Find(half, DiffSection::kStalls, kGemm, "long_scoreboard");
  ASSERT_NE(missing, nullptr);
  EXPECT_TRUE(std::isnan(missing->new_fraction));
  EXPECT_THAT(absl::StrJoin(half.notes, "\n"), HasSubstr("stalls: n/a for b, which has no PC"));
}

}  // namespace
}  // namespace warpscope
