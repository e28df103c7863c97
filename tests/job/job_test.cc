// The job view on synthetic data-parallel jobs (tests/fixtures/synthetic_job.h) with one
// designed problem each: the straggler named right, the time the others lose against the
// designed delay, the cause, and nobody named when the ranks are balanced; then the CLI.
#include "analyzers/analyses/job/job.h"

#include "analyzers/analyses/advise/advise.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <variant>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/fixtures/synthetic_job.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/support/cli_test_util.h"

namespace warpscope {
namespace {

using fixtures::DdpJobSpec;

std::vector<std::string> Write(const DdpJobSpec& spec, std::string* dir = nullptr) {
  const std::string d = testing::MakeTempDir();
  if (dir != nullptr) *dir = d;
  std::string error;
  std::vector<std::string> paths = fixtures::WriteDdpJob(spec, d, &error);
  EXPECT_EQ(paths.size(), spec.ranks) << error;
  return paths;
}

JobView View(const std::vector<std::string>& paths, JobOptions options = {}) {
  absl::StatusOr<JobView> view = BuildJobView(paths, options);
  EXPECT_TRUE(view.ok()) << view.status();
  return view.ok() ? std::move(*view) : JobView{};
}

uint64_t Lost(const RankDigest& r) {
  uint64_t lost = 0;
  for (const RankCollective& c : r.collectives) lost += c.lost_ns;
  return lost;
}

TEST(Job, AHostStallInsideARangeNamesTheRankAndTheRange) {
  DdpJobSpec spec;
  spec.late_rank = 2;
  spec.steps = 12;
  const JobView view = View(Write(spec));
  ASSERT_EQ(view.ranks.size(), 4u);
  EXPECT_TRUE(view.shared_clock);
  EXPECT_TRUE(view.problems.empty()) << view.problems.front();
  ASSERT_TRUE(view.straggler.rank.has_value()) << view.straggler.verdict;
  EXPECT_EQ(*view.straggler.rank, 2u);
  EXPECT_EQ(view.straggler.last_count, view.straggler.uneven);
  // Each other rank loses the designed delay every step (within 5%: the data movement and
  // the kernels' jitter).
  for (const RankDigest& r : view.ranks) {
    if (r.RankOrIndex() == 2) {
      EXPECT_EQ(Lost(r), 0u);
      continue;
    }
    EXPECT_NEAR(static_cast<double>(Lost(r)), spec.late_ns * spec.steps,
                0.05 * spec.late_ns * spec.steps) << "rank " << r.RankOrIndex();
  }
  // The first bucket of each step is uneven by the delay; the second, queued behind it, only by
  // the backward of its half, less than a tenth of the delay: 12 steps, 12 uneven collectives.
  EXPECT_NE(view.straggler.verdict.find("Straggler: rank 2 arrives last at 12 of 12"),
            std::string::npos) << view.straggler.verdict;
  EXPECT_NE(view.straggler.cause.find("in NVTX range step_<N>/data_load"), std::string::npos)
      << view.straggler.cause;
  EXPECT_NE(view.straggler.cause.find("host is late"), std::string::npos);
  // Where clocks are shared, the latest start names the same rank.
  for (const MatchedCollective& m : view.collectives) {
    if (m.spread_ns() > 1'000'000) {
      EXPECT_EQ(m.clock_last_rank, m.last_rank);
    }
  }
}

TEST(Job, AHostStallBetweenStepsIsOutsideAnyRange) {
  DdpJobSpec spec;
  spec.late_rank = 1;
  spec.late_in_range = false;
  spec.steps = 8;
  const JobView view = View(Write(spec));
  ASSERT_EQ(view.straggler.rank, 1u) << view.straggler.verdict;
  EXPECT_NE(view.straggler.cause.find("outside any NVTX range"), std::string::npos)
      << view.straggler.cause;
}

// The straggler's own advise, which names its finding, reads its whole trace within
// --max-events, and only its first steps past it (the finding says how many): the cause stays
// the same, read from the digests.
TEST(Job, TheStragglersOwnAdviseReadsItsFirstStepsPastMaxEvents) {
  DdpJobSpec spec;
  spec.late_rank = 1;
  spec.steps = 12;
  const std::vector<std::string> paths = Write(spec);
  const JobView whole = View(paths);
  JobOptions budget;
  budget.max_events = 1000;
  const JobView part = View(paths, budget);
  ASSERT_EQ(whole.straggler.rank, 1u) << whole.straggler.verdict;
  EXPECT_EQ(part.straggler.cause, whole.straggler.cause);
  EXPECT_NE(whole.straggler.finding.find("host-range"), std::string::npos)
      << whole.straggler.finding;
  EXPECT_EQ(whole.straggler.finding.find("steps read"), std::string::npos);
  EXPECT_NE(part.straggler.finding.find("of its 12 steps read)"), std::string::npos)
      << part.straggler.finding;
}

// The host time per step of each NVTX path, waiting for the GPU left out: the late rank spends
// the delay more in data_load, the others the same everywhere.
TEST(Job, HostTimePerStepShowsWhereTheLateHostSpendsItsTime) {
  DdpJobSpec spec;
  spec.late_rank = 2;
  spec.steps = 6;
  const JobView view = View(Write(spec));
  ASSERT_EQ(view.ranks.size(), 4u);
  const auto& late = view.ranks[2].host_ns_per_step;
  const auto& other = view.ranks[0].host_ns_per_step;
  ASSERT_TRUE(late.count("step_<N>/data_load")) << late.size();
  ASSERT_TRUE(other.count("step_<N>/data_load"));
  const double excess = static_cast<double>(late.at("step_<N>/data_load")) -
                        static_cast<double>(other.at("step_<N>/data_load"));
  EXPECT_NEAR(excess, spec.late_ns, 0.01 * spec.late_ns);
  // The others' wait for the late rank is spent blocked in the loss read: not host time.
  for (const auto& [path, ns] : other) {
    if (!late.count(path)) continue;
    EXPECT_LT(static_cast<double>(ns), static_cast<double>(late.at(path)) + 0.05 * spec.late_ns)
        << path;
  }
  EXPECT_EQ(view.straggler.cause_kind, StragglerCause::kHost);
  EXPECT_EQ(view.straggler.cause_range, "step_<N>/data_load");
  EXPECT_NEAR(static_cast<double>(view.straggler.cause_host_excess_ns), spec.late_ns,
              0.01 * spec.late_ns);
}

// A zero-length range (an NVTX push and pop at one instant) holds no time and does not stay
// open over the ranges after it.
TEST(Job, HostTimePerStepLeavesAnEmptyRangeOut) {
  const std::string path = testing::MakeTempDir() + "/empty_range.wst";
  fixtures::SyntheticTraceOptions options;
  options.pm_interval_ns = 0;
  options.force_overwrite = true;
  std::string error;
  auto b = fixtures::SyntheticTraceBuilder::Create(path, options, &error);
  ASSERT_NE(b, nullptr) << error;
  for (int k = 0; k < 3; ++k) {
    b->PushRange("step_" + std::to_string(k));
    b->HostIdle(200'000);
    b->EmptyRange("marker");
    b->PushRange("data");
    b->HostIdle(300'000);
    b->PopRange();
    b->HostIdle(400'000);
    b->PopRange();
  }
  ASSERT_TRUE(b->Finish());
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  ASSERT_TRUE(model.ok()) << model.status();
  const StepSet steps = FindSteps(model->nvtx_ranges);
  ASSERT_EQ(steps.steps.size(), 3u);
  const std::map<std::string, uint64_t> host = HostTimePerStep(*model, steps);
  EXPECT_EQ(host.size(), 2u) << absl::StrJoin(host, ", ", absl::PairFormatter("="));
  ASSERT_TRUE(host.count("step_<N>/data"));
  EXPECT_NEAR(static_cast<double>(host.at("step_<N>/data")), 300'000, 1'000);
  ASSERT_TRUE(host.count("step_<N>"));
  EXPECT_NEAR(static_cast<double>(host.at("step_<N>")), 600'000, 1'000);
}

// A launch-bound step: the late rank's own launches, late by its stall, keep its GPU running
// at launch pace through the stretch before its arrival, while its host is in forward and
// backward. The host-time rule still names the stall's place, inside a range and outside any.
TEST(Job, InALaunchBoundStepTheStallsPlaceIsNamedNotThePhaseAfterIt) {
  for (bool in_range : {true, false}) {
    DdpJobSpec spec;
    spec.late_rank = 1;
    spec.late_in_range = in_range;
    spec.steps = 8;
    // 600 launches of 20 us: 12 ms of host per phase, longer than the stall, so that the
    // stretch before the late arrival holds only forward and backward.
    spec.kernels_per_phase = 600;
    spec.kernel_ns = 6'000;
    spec.launch_api_ns = 20'000;
    const JobView view = View(Write(spec));
    ASSERT_EQ(view.straggler.rank, 1u) << view.straggler.verdict;
    EXPECT_EQ(view.straggler.cause_kind, StragglerCause::kHost) << view.straggler.cause;
    EXPECT_EQ(view.straggler.cause_range, in_range ? "step_<N>/data_load" : "")
        << view.straggler.cause;
    EXPECT_NE(view.straggler.cause.find(in_range ? "in NVTX range step_<N>/data_load"
                                                 : "outside any NVTX range"),
              std::string::npos)
        << view.straggler.cause;
    EXPECT_NEAR(static_cast<double>(view.straggler.cause_host_excess_ns), spec.late_ns,
                0.02 * spec.late_ns);
  }
}

TEST(Job, SlowerGpuWorkIsTheCauseWhenTheStragglersGpuWasBusy) {
  DdpJobSpec spec;
  spec.slow_rank = 3;
  spec.steps = 8;
  const JobView view = View(Write(spec));
  ASSERT_EQ(view.straggler.rank, 3u) << view.straggler.verdict;
  EXPECT_EQ(view.straggler.cause_kind, StragglerCause::kGpu) << view.straggler.cause;
  EXPECT_NE(view.straggler.cause.find("GPU work is slower"), std::string::npos)
      << view.straggler.cause;
  EXPECT_NE(view.straggler.cause.find("backward_gemm"), std::string::npos);
  // The others lose what the slow rank's extra compute takes per step: forward and backward,
  // 2 x 20 kernels x 100 us x (3 - 1) = 8 ms.
  EXPECT_NEAR(static_cast<double>(Lost(view.ranks[0])), 8e6 * spec.steps, 0.05 * 8e6 * spec.steps);
}

TEST(Job, BalancedRanksNameNobody) {
  for (uint32_t ranks : {2u, 4u, 8u}) {
    DdpJobSpec spec;
    spec.ranks = ranks;
    spec.steps = 10;
    const JobView view = View(Write(spec));
    EXPECT_FALSE(view.straggler.rank.has_value()) << view.straggler.verdict;
    EXPECT_NE(view.straggler.verdict.find("No straggler"), std::string::npos);
    for (const RankDigest& r : view.ranks) EXPECT_LT(Lost(r), 1'000'000u) << ranks;
  }
}

// Ranks that all ended at their exit say nothing of their ends; when one is cut short and the
// other stopped by a signal, the view says who ended first and what the other ran after it.
TEST(Job, HowTheRanksEndedIsSaidWhenOneDidNotExit) {
  DdpJobSpec spec;
  spec.ranks = 2;
  spec.steps = 10;
  JobView view = View(Write(spec));
  ASSERT_EQ(view.ranks.size(), 2u);
  EXPECT_TRUE(view.end_verdicts.empty());
  for (const RankDigest& r : view.ranks) {
    ASSERT_TRUE(r.end_reason.has_value());
    EXPECT_EQ(*r.end_reason, v1::END_REASON_EXIT);
    EXPECT_GT(r.end_ns, 0u);
  }
  // Rank 1 killed halfway through its collectives; rank 0 stopped by a signal at its end.
  RankDigest& killed = view.ranks[1];
  ASSERT_GE(killed.collectives.size(), 4u);
  const RankCollective& half = killed.collectives[killed.collectives.size() / 2];
  killed.end_reason.reset();
  killed.end_ns = half.start_ns;
  view.ranks[0].end_reason = v1::END_REASON_SIGNAL;
  size_t past = 0;
  for (const RankCollective& c : view.ranks[0].collectives) {
    past += view.ranks[0].unix_time_base_ns + c.end_ns() > killed.unix_time_base_ns + half.start_ns;
  }
  ASSERT_GT(past, 0u);
  JudgeEnds(view);
  ASSERT_EQ(view.end_verdicts.size(), 2u);
  EXPECT_EQ(view.end_verdicts[0].rfind("ends: rank 1 ended first, cut short (no end-of-trace "
                                       "marker: killed?), its last recorded event ", 0),
            0u)
      << view.end_verdicts[0];
  EXPECT_NE(view.end_verdicts[1].find("rank 0 ended "), std::string::npos);
  EXPECT_NE(view.end_verdicts[1].find(" later, on a signal (SIGINT or SIGTERM), after " +
                                      std::to_string(past) + " collective(s) that ran past "
                                      "rank 1's last recorded event (the longest, AllReduce, "),
            std::string::npos)
      << view.end_verdicts[1];
  const Report report = JobReport(view);
  const Table* ends = report.FindTable("ends");
  ASSERT_NE(ends, nullptr);
  EXPECT_EQ(ends->num_rows(), 2u);

  // The same end with the signals the traces name: rank 1 aborted (NCCL's watchdog, say),
  // rank 0 stopped by SIGTERM from its launcher.
  killed.end_reason = v1::END_REASON_CRASH;
  killed.end_signal = 6;
  view.ranks[0].end_signal = 15;
  JudgeEnds(view);
  ASSERT_EQ(view.end_verdicts.size(), 2u);
  EXPECT_NE(view.end_verdicts[0].find("rank 1 ended first, crashed on SIGABRT (an abort: "),
            std::string::npos)
      << view.end_verdicts[0];
  EXPECT_EQ(view.end_verdicts[0].find("last flush interval"), std::string::npos)
      << view.end_verdicts[0];
  EXPECT_NE(view.end_verdicts[1].find(" later, on SIGTERM, after "), std::string::npos)
      << view.end_verdicts[1];
}

TEST(Job, FsdpsAllGatherAndReduceScatterAreMatched) {
  DdpJobSpec spec;
  spec.mode = DdpJobSpec::Mode::kGatherScatter;
  spec.late_rank = 0;
  spec.steps = 6;
  const JobView view = View(Write(spec));
  ASSERT_EQ(view.straggler.rank, 0u) << view.straggler.verdict;
  size_t gathers = 0, scatters = 0;
  for (const MatchedCollective& m : view.collectives) {
    EXPECT_EQ(m.ranks, 4u);
    gathers += m.op == "AllGather";
    scatters += m.op == "ReduceScatter";
  }
  EXPECT_EQ(gathers, 6u);
  EXPECT_EQ(scatters, 6u);
}

TEST(Job, WithoutNcclsCallsCollectivesAreMatchedByStreamOrder) {
  DdpJobSpec spec;
  spec.late_rank = 2;
  spec.steps = 5;
  spec.nccl_calls = false;
  const JobView view = View(Write(spec));
  EXPECT_EQ(view.straggler.rank, 2u) << view.straggler.verdict;
  ASSERT_FALSE(view.collectives.empty());
  EXPECT_EQ(view.collectives.front().comm, "stream#0");
  EXPECT_EQ(view.collectives.front().bytes, 0u);
  EXPECT_EQ(view.ranks[0].collectives_keyed_by_stream, 10u);
}

TEST(Job, MissingAndDuplicateRanksAreSaid) {
  DdpJobSpec spec;
  spec.steps = 3;
  std::vector<std::string> paths = Write(spec);
  const JobView missing = View({paths[0], paths[1], paths[3]});
  ASSERT_FALSE(missing.problems.empty());
  EXPECT_NE(missing.problems.back().find("no trace of rank(s) 2 of 4"), std::string::npos)
      << missing.problems.back();
  const JobView twice = View({paths[0], paths[1], paths[1]});
  ASSERT_FALSE(twice.problems.empty());
  EXPECT_NE(twice.problems.front().find("two traces say rank 1"), std::string::npos);
}

TEST(Job, UnreadableInputsAreErrorsThatNameTheFile) {
  const std::string dir = testing::MakeTempDir();
  absl::StatusOr<JobView> none = BuildJobView({dir});
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("without .wst traces"), std::string::npos);
  absl::StatusOr<JobView> missing = BuildJobView({dir + "/nothing.wst"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nothing.wst"), std::string::npos);
}

TEST(Job, TheReportsTablesAgreeWithTheView) {
  DdpJobSpec spec;
  spec.late_rank = 2;
  spec.steps = 4;
  const JobView view = View(Write(spec));
  const Report report = JobReport(view);
  const Table* ranks = report.FindTable("ranks");
  ASSERT_NE(ranks, nullptr);
  EXPECT_EQ(ranks->num_rows(), 4u);
  EXPECT_EQ(report.FindTable("steps")->num_rows(), 16u);
  EXPECT_EQ(report.FindTable("instances")->num_rows(), view.collectives.size());
  EXPECT_EQ(report.FindTable("rank_collectives")->num_rows(), 4 * view.collectives.size());
  const Table* per_op = report.FindTable("collectives");
  ASSERT_EQ(per_op->num_rows(), 4u);  // AllReduce x 4 ranks
  // Bus bandwidth of the data movement: 25 MiB AllReduces at the designed 300 GB/s.
  const size_t busbw = 7;
  ASSERT_EQ(per_op->columns()[busbw].name, "busbw_gbps");
  EXPECT_NEAR(std::get<double>(per_op->rows()[0][busbw].value), 300.0, 3.0);
  EXPECT_EQ(std::get<int64_t>(report.FindScalar("straggler")->value), 2);

  // The tables of a row per step and rank are made only where they are rendered: not for the
  // text form, which shows ranks and collectives; --table makes the one it names. The others
  // keep their columns, so that every format still lists them.
  const Report text = JobReport(view, ReportScope{true, ""});
  const Report steps = JobReport(view, ReportScope{true, "steps"});
  for (const char* name : {"steps", "instances", "rank_collectives"}) {
    ASSERT_NE(text.FindTable(name), nullptr) << name;
    EXPECT_EQ(text.FindTable(name)->num_rows(), 0u) << name;
    EXPECT_EQ(text.FindTable(name)->columns().size(), report.FindTable(name)->columns().size());
  }
  EXPECT_EQ(text.FindTable("ranks")->num_rows(), 4u);
  EXPECT_EQ(text.FindTable("collectives")->num_rows(), 4u);
  EXPECT_EQ(steps.FindTable("steps")->num_rows(), 16u);
  EXPECT_EQ(steps.FindTable("steps")->RenderCsv(), report.FindTable("steps")->RenderCsv());
  EXPECT_EQ(steps.FindTable("rank_collectives")->num_rows(), 0u);
}

// The value of `column` in row `row` of `table`, as a number (0 when empty).
double CellNumber(const Table& table, size_t row, std::string_view column) {
  for (size_t c = 0; c < table.columns().size(); ++c) {
    if (table.columns()[c].name != column) continue;
    const Cell& cell = table.rows()[row][c];
    if (const auto* d = std::get_if<double>(&cell.value)) return *d;
    if (const auto* i = std::get_if<int64_t>(&cell.value)) return static_cast<double>(*i);
    return 0;
  }
  ADD_FAILURE() << "no column " << column;
  return 0;
}

// Two warm-up steps in which rank 0 is 100 ms late (the others wait for it), then rank 3 is
// late 15 ms every step. Figures are the steady state's: rank 3 loses nothing there (its
// waiting was all in the warm-up), each other rank 15 ms a step; the warm-up steps are marked.
TEST(Job, LostTimeIsCountedOverTheSteadySteps) {
  DdpJobSpec spec;
  spec.late_rank = 3;
  spec.steps = 12;
  spec.warmup_steps = 2;
  spec.warmup_late_rank = 0;
  const JobView view = View(Write(spec));
  ASSERT_EQ(view.straggler.rank, 3u) << view.straggler.verdict;
  EXPECT_EQ(view.warmup_steps, 2u);
  uint64_t warmup_lost = 0;  // rank 3 did wait for rank 0 in the warm-up
  for (size_t i = 0; i < 2; ++i) warmup_lost += view.ranks[3].step_times[i].lost_ns;
  EXPECT_GT(warmup_lost, 50'000'000u);
  const Report report = JobReport(view);
  const Table& ranks = *report.FindTable("ranks");
  double others_steady_ms = 0;
  for (size_t row = 0; row < 4; ++row) {
    EXPECT_EQ(CellNumber(ranks, row, "warmup_steps"), 2);
    // lost_pct is over the steady steps' time: 15 ms a step over their summed duration.
    double steady_ms = 0;
    for (size_t i = 2; i < 12; ++i) steady_ms += view.ranks[row].steps.steps[i].duration_ns() / 1e6;
    if (row != 3) others_steady_ms += steady_ms;
    const double lost_pct = CellNumber(ranks, row, "lost_pct");
    if (row == 3) {
      EXPECT_EQ(lost_pct, 0);
      EXPECT_EQ(CellNumber(ranks, row, "median_lost_ms"), 0);
      EXPECT_GT(CellNumber(ranks, row, "total_lost_ms"), 50);
    } else {
      EXPECT_NEAR(CellNumber(ranks, row, "median_lost_ms"), 15, 0.75);
      EXPECT_NEAR(lost_pct, 100 * 15 * 10 / steady_ms, 5) << row;
    }
  }
  // The verdict's share is the steady state's too.
  EXPECT_NEAR(view.straggler.others_lost_share, 3 * 15 * 10 / others_steady_ms, 0.05);
  EXPECT_NE(view.straggler.verdict.find("a steady step"), std::string::npos);
  const Table& steps = *report.FindTable("steps");
  size_t steady = 0;
  for (const auto& row : steps.rows()) steady += std::get<bool>(row.back().value);
  EXPECT_EQ(steady, 4u * 10);
}

// What a rank's digest keeps of its own GPU work does not grow with its kernels: in
// launch-bound steps (a gap after every kernel: a stretch each), one stretch per collective
// for the lost time, and the sub-pixel gaps closed for the picture; the lost time is the
// designed delay still.
TEST(Job, TheDigestKeepsAStretchPerCollectiveNotPerKernel) {
  DdpJobSpec spec;
  spec.late_rank = 1;
  spec.steps = 10;
  spec.kernels_per_phase = 200;
  spec.launch_api_ns = 150'000;  // above kernel_ns: a 50 us gap after each kernel
  const std::vector<std::string> paths = Write(spec);
  const JobView view = View(paths);
  ASSERT_EQ(view.straggler.rank, 1u) << view.straggler.verdict;
  for (const RankDigest& r : view.ranks) {
    EXPECT_GT(r.collectives.size(), 0u);
    EXPECT_LE(r.compute_busy.size(), r.collectives.size()) << r.RankOrIndex();
    EXPECT_LT(r.compute_drawn.size(), 10u * 2 * 200 / 4) << r.RankOrIndex();
    uint64_t drawn = 0;
    for (const TimeInterval& t : r.compute_drawn) drawn += t.end_ns - t.begin_ns;
    EXPECT_GE(drawn, r.compute_ns);  // closing gaps only adds
    if (r.RankOrIndex() == 1) continue;
    std::vector<uint64_t> lost;
    for (const StepTimes& t : r.step_times) lost.push_back(t.lost_ns);
    std::sort(lost.begin(), lost.end());
    EXPECT_NEAR(static_cast<double>(lost[lost.size() / 2]), 15e6, 0.75e6) << r.RankOrIndex();
  }
  // Without a picture to draw, none of its stretches are kept, and every figure is the same.
  JobOptions no_picture;
  no_picture.drawing = false;
  const JobView lean = View(paths, no_picture);
  ASSERT_EQ(lean.ranks.size(), view.ranks.size());
  for (size_t i = 0; i < lean.ranks.size(); ++i) {
    const RankDigest& a = lean.ranks[i];
    const RankDigest& b = view.ranks[i];
    EXPECT_TRUE(a.compute_drawn.empty());
    EXPECT_EQ(a.compute_busy.size(), b.compute_busy.size());
    EXPECT_EQ(Lost(a), Lost(b));
    EXPECT_EQ(a.compute_ns, b.compute_ns);
  }
  EXPECT_EQ(lean.straggler.verdict, view.straggler.verdict);
}

TEST(JobCli, TextCsvJsonTablesAndPicture) {
  DdpJobSpec spec;
  spec.late_rank = 1;
  spec.steps = 4;
  std::string dir;
  Write(spec, &dir);
  testing::CliResult text = testing::RunCli("job " + dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("Straggler: rank 1 arrives last", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("-- ranks --"), std::string::npos);
  EXPECT_EQ(text.out.find("-- steps --"), std::string::npos);  // long tables: CSV and JSON only

  testing::CliResult csv = testing::RunCli("job " + dir + " --format csv --table ranks");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  // Medians over the steady steps and totals over the trace say which they are.
  EXPECT_EQ(csv.out.rfind("rank,host,pid,device,gpu,steps,warmup_steps,median_step_ms,", 0), 0u)
      << csv.out;
  EXPECT_NE(csv.out.find(",lost_pct,total_compute_ms,"), std::string::npos) << csv.out;
  EXPECT_NE(text.out.find("ranks: median_* per step over the steady steps"), std::string::npos);
  EXPECT_EQ(testing::CountLines(csv.out), 5);

  testing::CliResult json = testing::RunCli("job " + dir + "/rank_*.wst --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"straggler\":1"), std::string::npos);
  EXPECT_NE(json.out.find("\"rank_collectives\":[{"), std::string::npos);

  testing::CliResult svg = testing::RunCli("job " + dir + " --svg " + dir + "/job.svg");
  ASSERT_EQ(svg.exit_code, 0) << svg.err;
  testing::CliResult bad = testing::RunCli("job " + dir + " --table nope");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no table named 'nope'"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("steps, instances, rank_collectives"), std::string::npos) << bad.err;
  // A table the text form leaves out, asked for: its rows (4 ranks x 4 steps, and the header).
  testing::CliResult steps = testing::RunCli("job " + dir + " --format csv --table steps");
  ASSERT_EQ(steps.exit_code, 0) << steps.err;
  EXPECT_EQ(testing::CountLines(steps.out), 17);
  testing::CliResult none = testing::RunCli("job");
  EXPECT_EQ(none.exit_code, 2);
}

}  // namespace
}  // namespace warpscope

namespace warpscope {
namespace {

const AdviseFinding* FindRule(const AdviseReport& r, std::string_view rule, int64_t rank = -2) {
  for (const AdviseFinding& f : r.findings) {
    if (f.rule == rule && (rank == -2 || f.job_rank == rank)) return &f;
  }
  return nullptr;
}

TEST(JobAdvise, OneRanksWaitingIsEstimatedFromItsOwnTrace) {
  DdpJobSpec spec;
  spec.late_rank = 2;
  spec.steps = 10;
  const std::vector<std::string> paths = Write(spec);
  absl::StatusOr<TraceModel> waiting = TraceModel::Load(paths[0]);
  ASSERT_TRUE(waiting.ok());
  const AdviseReport report = BuildAdviseReport(*waiting, paths[0], AdviseOptions{});
  ASSERT_FALSE(report.findings.empty());
  const AdviseFinding& top = report.findings.front();
  EXPECT_EQ(top.rule, "nccl-wait");
  EXPECT_EQ(top.title, "GPU waited inside NCCL AllReduce for other ranks");
  EXPECT_NE(top.evidence.find("estimated from this trace alone"), std::string::npos);
  // The first bucket of each step waits for the late rank (15 ms a step designed). The estimate
  // takes the shortest AllReduce of that size as pure data movement, but the shortest (a second
  // bucket) waited too, about a millisecond: a lower bound, within 10% here.
  EXPECT_LE(static_cast<double>(top.cost_ns), 1.01 * 15e6 * spec.steps);
  EXPECT_GE(static_cast<double>(top.cost_ns), 0.90 * 15e6 * spec.steps);
  // Waiting is kept out of the busy share.
  EXPECT_GT(report.collective_wait_ns, 0u);
  EXPECT_LT(report.busy_fraction,
            static_cast<double>(report.gpu_busy_ns - report.collective_wait_ns / 2) /
                static_cast<double>(report.gpu_span_ns));
  EXPECT_NE(report.headline.find("only waiting inside NCCL for other ranks"), std::string::npos);
  // The late rank's own trace: its stall in data_load, not waiting.
  absl::StatusOr<TraceModel> late = TraceModel::Load(paths[2]);
  ASSERT_TRUE(late.ok());
  const AdviseReport own = BuildAdviseReport(*late, paths[2], AdviseOptions{});
  ASSERT_FALSE(own.findings.empty());
  EXPECT_EQ(own.findings.front().rule, "host-range");
  EXPECT_NE(own.findings.front().nvtx_path.find("/data_load"), std::string::npos);
  EXPECT_EQ(FindRule(own, "nccl-wait"), nullptr);
}

TEST(JobAdvise, TheJobsFindingComesFirstWhenItCostsTheMost) {
  DdpJobSpec spec;
  spec.late_rank = 1;
  spec.steps = 10;
  const JobView view = View(Write(spec));
  absl::StatusOr<AdviseReport> report = BuildJobAdviseReport(view, AdviseOptions{});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_FALSE(report->findings.empty());
  const AdviseFinding& top = report->findings.front();
  EXPECT_EQ(top.rule, "straggler");
  EXPECT_EQ(top.job_rank, 1);
  EXPECT_EQ(top.nvtx_path, "step_<N>/data_load");
  EXPECT_NEAR(static_cast<double>(top.cost_ns), 15e6 * spec.steps, 0.05 * 15e6 * spec.steps);
  // The others' waiting is the straggler's cost, not three findings of their own.
  EXPECT_EQ(FindRule(*report, "nccl-wait"), nullptr);
  // The straggler's own findings follow, tagged with its rank.
  const AdviseFinding* own = FindRule(*report, "host-range", 1);
  ASSERT_NE(own, nullptr);
  for (const AdviseFinding& f : report->findings) EXPECT_GE(f.job_rank, 0) << f.title;
  EXPECT_EQ(report->headline.rfind("job of 4 ranks: Straggler: rank 1", 0), 0u);
}

TEST(JobAdvise, BalancedRanksKeepTheirOwnFindings) {
  DdpJobSpec spec;
  spec.steps = 6;
  const JobView view = View(Write(spec));
  absl::StatusOr<AdviseReport> report = BuildJobAdviseReport(view, AdviseOptions{}, 2);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(FindRule(*report, "straggler"), nullptr);
  EXPECT_LE(report->findings.size(), 8u);  // 2 per rank
}

TEST(JobAdviseCli, SeveralTracesOrAFolderAreAJob) {
  DdpJobSpec spec;
  spec.late_rank = 3;
  spec.steps = 4;
  std::string dir;
  Write(spec, &dir);
  testing::CliResult r = testing::RunCli("advise " + dir + " --html " + dir + "/job.html --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("#1 [high] straggler:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("where:    rank 3 | nvtx step_<N>/data_load"), std::string::npos);
  testing::CliResult csv = testing::RunCli("advise " + dir + "/rank_0.wst " + dir +
                                           "/rank_3.wst --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.out.find(",rank,one_time,where,host_blocked_ns,host_blocked_calls,"
                         "host_blocked_gpu_idle_ns,cost_per_step_ns,step_percent\n"),
            std::string::npos)
      << csv.out;
}

}  // namespace
}  // namespace warpscope

namespace warpscope {
namespace {

// The bundled recording of a 2-rank DDP job on two H200s, rank 1 late 10 ms a step in
// data_load (examples/traces/cuda13.0_sm90/README.md).
std::string BundledJob() {
  const char* source = std::getenv("WARPSCOPE_SOURCE_DIR");
  return std::string(source != nullptr ? source : ".") +
         "/examples/traces/cuda13.0_sm90/ddp_late_rank";
}

// What rank 0 may lose to rank 1's designed stall a steady step: at least the stall less 10%,
// at most the stall plus rank 1's own GPU work of a step (the median), which the stall leaves
// unqueued: its GPU runs the step's work only as its late host launches it.
constexpr double kDesignedStallNs = 10e6;
double LeastLostPerStepNs() { return 0.9 * kDesignedStallNs; }
double MostLostPerStepNs(const JobView& view) {
  const RankDigest& late = view.ranks.at(1);
  std::vector<uint64_t> compute;
  for (size_t i = late.Warmup(view.warmup_steps); i < late.step_times.size(); ++i) {
    compute.push_back(late.step_times[i].compute_ns);
  }
  if (compute.empty()) return kDesignedStallNs;
  std::sort(compute.begin(), compute.end());
  return kDesignedStallNs + static_cast<double>(compute[compute.size() / 2]);
}

TEST(BundledJob, TheLateRankTheRangeAndTheDesignedDelay) {
  const JobView view = View({BundledJob()});
  ASSERT_EQ(view.ranks.size(), 2u);
  EXPECT_TRUE(view.shared_clock);
  EXPECT_EQ(view.straggler.rank, 1u) << view.straggler.verdict;
  EXPECT_NE(view.straggler.cause.find("step_<N>/data_load"), std::string::npos);
  // Rank 0's time lost per timed step (steps 2 to 13), against the designed 10 ms.
  std::vector<uint64_t> lost;
  for (size_t i = 0; i < view.ranks[0].step_times.size(); ++i) {
    if (view.ranks[0].steps.steps[i].number.value_or(0) >= 2) {
      lost.push_back(view.ranks[0].step_times[i].lost_ns);
    }
  }
  ASSERT_EQ(lost.size(), 12u);
  std::sort(lost.begin(), lost.end());
  const double most = MostLostPerStepNs(view);
  EXPECT_LT(most, 1.25 * kDesignedStallNs);  // rank 1's GPU work is small beside its stall
  EXPECT_GE(static_cast<double>(lost[lost.size() / 2]), LeastLostPerStepNs());
  EXPECT_LE(static_cast<double>(lost[lost.size() / 2]), most);
  const double total = static_cast<double>(std::accumulate(lost.begin(), lost.end(), uint64_t{0}));
  EXPECT_GE(total, 12 * LeastLostPerStepNs());
  EXPECT_LE(total, 12 * most);
  // NCCL's calls tie the collectives to their communicator and bytes. Four of the main
  // thread's calls carried payloads NCCL 2.28 sent unreadable (3 Broadcasts, and the AllReduce
  // of dist.barrier, which ran on the compute stream): the Broadcasts take their stream's
  // communicator, the barrier is matched by its stream's order, none has bytes.
  EXPECT_EQ(view.ranks[0].unreadable_payloads, 4u);
  EXPECT_EQ(view.ranks[0].collectives_keyed_by_stream, 1u);
  size_t with_bytes = 0;
  for (const MatchedCollective& m : view.collectives) with_bytes += m.bytes > 0;
  EXPECT_EQ(with_bytes + 4, view.collectives.size());
}

// The ranks table on the bundled job: rank 0 loses about 11 ms of each 16 ms steady step
// waiting for rank 1; rank 1's own waiting was in the two warm-up steps alone; each rank
// names its own GPU.
TEST(BundledJob, RanksTableCountsTheSteadyStepsAndEachRanksDevice) {
  const JobView view = View({BundledJob()});
  ASSERT_EQ(view.warmup_steps, 2u);
  const Report report = JobReport(view);
  const Table& ranks = *report.FindTable("ranks");
  ASSERT_EQ(ranks.num_rows(), 2u);
  EXPECT_EQ(CellNumber(ranks, 0, "device"), 0);
  EXPECT_EQ(CellNumber(ranks, 1, "device"), 1);
  EXPECT_EQ(CellNumber(ranks, 1, "lost_pct"), 0);
  EXPECT_EQ(CellNumber(ranks, 1, "median_lost_ms"), 0);
  EXPECT_GT(CellNumber(ranks, 1, "total_lost_ms"), 0);  // all of it in the warm-up
  const double lost_ms = CellNumber(ranks, 0, "median_lost_ms");
  EXPECT_GE(lost_ms * 1e6, LeastLostPerStepNs());
  EXPECT_LE(lost_ms * 1e6, MostLostPerStepNs(view));
  const double step_ms = CellNumber(ranks, 0, "median_step_ms");
  EXPECT_NEAR(step_ms, 16, 1);
  EXPECT_NEAR(CellNumber(ranks, 0, "lost_pct"), 100 * lost_ms / step_ms, 5);
}

// The job's advise on the bundled job ranks by cost per steady step: the straggler (about
// 11 ms of each other rank's 16 ms step) comes before every one-time finding (the 7 s of
// start-up), with its cause on rank 1 (host-range in data_load) beside it, and names rank 1's
// device.
TEST(BundledJob, TheStragglerOutranksStartUp) {
  const JobView view = View({BundledJob()});
  absl::StatusOr<AdviseReport> report = BuildJobAdviseReport(view, AdviseOptions{});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->steady_steps, 12u);
  size_t straggler = SIZE_MAX, first_once = SIZE_MAX;
  for (size_t i = 0; i < report->findings.size(); ++i) {
    const AdviseFinding& f = report->findings[i];
    if (f.rule == kRuleStraggler) straggler = i;
    if (f.one_time && first_once == SIZE_MAX) first_once = i;
    if (first_once != SIZE_MAX) {
      EXPECT_TRUE(f.one_time) << i;  // one-time findings come last
    }
  }
  const std::string text = RenderReport(AdviseReportTables(*report), OutputFormat::kTable).value();
  ASSERT_LT(straggler, 2u) << text;
  ASSERT_NE(first_once, SIZE_MAX) << text;
  EXPECT_EQ(report->findings[1 - straggler].rule, kRuleHostRange);
  EXPECT_EQ(report->findings[1 - straggler].job_rank, 1);
  EXPECT_EQ(report->findings[first_once].rule, kRuleStartup);
  EXPECT_GT(report->findings[first_once].cost_ns, 4'000'000'000u);
  const AdviseFinding& f = report->findings[straggler];
  EXPECT_EQ(f.job_rank, 1);
  EXPECT_EQ(f.device_id, 1u);
  EXPECT_EQ(f.severity, AdviseSeverity::kHigh);
  EXPECT_GE(static_cast<double>(f.cost_per_step_ns), LeastLostPerStepNs());
  EXPECT_LE(static_cast<double>(f.cost_per_step_ns), MostLostPerStepNs(view));
  EXPECT_DOUBLE_EQ(f.step_fraction, view.straggler.others_lost_share);
  EXPECT_NE(text.find("device 1\n"), std::string::npos);
  EXPECT_NE(text.find("paid once, before the steady state"), std::string::npos);
}

TEST(BundledJob, OneRanksAdviseSeesItsWaiting) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(BundledJob() + "/rank0.wst");
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = BuildAdviseReport(*model, "rank0", AdviseOptions{});
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().rule, "nccl-wait") << report.headline;
  EXPECT_GT(report.collective_wait_ns, 50'000'000u);
}

}  // namespace
}  // namespace warpscope
