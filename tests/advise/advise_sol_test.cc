// The speed-of-light rules of `warpscope advise` (latency-bound, memory-bound-gemm) on synthetic
// traces carrying the sol PM set (samples of designed per-unit figures), with held-out kernel
// names (a Triton GEMM template, cutlass 3.x GEMMs), and on the bundled H200 recording.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/analyses/advise/advise.h"
#include "analyzers/analyses/sol.h"
#include "analyzers/measures/pm_attribution.h"
#include "analyzers/model/trace_model.h"
#include "collectors/pm_sampling/pm_metric_sets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/advise/advise_test_util.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using advise_testing::Advise;
using advise_testing::FindRule;
using advise_testing::NamedKernel;
using fixtures::SyntheticTraceBuilder;
using ::testing::HasSubstr;

constexpr uint64_t kInterval = 20'000;
constexpr uint32_t kSolSetId = 2;

// What one kernel runs at, in percent of each unit's peak (0 for units not named), and its
// active warps per active SM cycle.
struct UnitLoad {
  double dram = 0, l2 = 0, fma = 0, tensor = 0, sm = 0;
  double warps_per_sm = 48;
};

double LoadOf(const UnitLoad& load, std::string_view unit) {
  if (unit == "dram") return load.dram;
  if (unit == "dram_read") return load.dram * 0.75;
  if (unit == "dram_write") return load.dram * 0.25;
  if (unit == "l2") return load.l2;
  if (unit == "fma") return load.fma;
  if (unit == "tensor") return load.tensor;
  if (unit == "sm") return load.sm;
  if (unit == "issue") return std::max(load.fma, load.tensor) / 2;
  return 1.0;
}

struct PlannedKernel {
  std::string name;
  uint64_t ns;
  UnitLoad load;
  int launches = 1;
};

// Writes the kernels back to back on one stream, then the sol set's samples tiling each launch
// (the designed loads) to a trace, and loads it. With `mixed`, the samples instead tile the
// whole run, each measuring the overlap-weighted sum of the loads of the launches it spans
// (kernels shorter than the interval share every sample).
absl::StatusOr<TraceModel> SolModel(const std::vector<PlannedKernel>& plan,
                                    const std::vector<std::string>& metrics = SolPmMetrics(),
                                    bool mixed = false) {
  const std::string path = ::warpscope::testing::MakeTempDir() + "/sol.wst";
  fixtures::SyntheticTraceOptions options;
  options.pm_interval_ns = 0;
  options.force_overwrite = true;
  std::string error;
  auto b = SyntheticTraceBuilder::Create(path, options, &error);
  if (b == nullptr) return absl::InternalError(error);
  bool ok = TraceWriter::Batch(b->writer())
                .Write(PmMetricSetRecord{.id = kSolSetId,
                                         .device_id = fixtures::kDeviceId,
                                         .metric_names = metrics,
                                         .interval_ns = kInterval,
                                         .chip_name = "GH100",
                                         .counter_availability = {}});
  struct Ran {
    uint64_t start, end;
    const UnitLoad* load;
  };
  std::vector<Ran> ran;
  for (const PlannedKernel& k : plan) {
    for (int i = 0; i < k.launches; ++i) {
      // The builder jitters durations by up to 3%: the launch runs from when the stream is free
      // (and the launch call has returned) to when it is done again.
      const uint64_t free = b->stream_done(fixtures::kComputeStream);
      b->LaunchKernel(NamedKernel(k.name.c_str(), k.ns));
      const uint64_t start = std::max(free, b->host_now() + options.launch_latency_ns);
      ran.push_back({start, b->stream_done(fixtures::kComputeStream), &k.load});
    }
  }
  const double cycles = static_cast<double>(kInterval) * 1.98;
  std::vector<PmSampleRecord> samples;
  // One sample over [t, t + interval): each unit the overlap-weighted sum of the loads there.
  const auto sample_at = [&](uint64_t t, std::span<const Ran> over) {
    PmSampleRecord s{.metric_set_id = kSolSetId,
                     .start_ns = SyntheticTraceBuilder::ToAbsolute(t),
                     .end_ns = SyntheticTraceBuilder::ToAbsolute(t + kInterval),
                     .values = std::vector<double>(metrics.size(), 0.0)};
    s.values[1] = cycles;
    s.values[2] = cycles;
    for (const Ran& r : over) {
      const uint64_t lo = std::max(t, r.start), hi = std::min(t + kInterval, r.end);
      if (hi <= lo) continue;
      const double share = static_cast<double>(hi - lo) / static_cast<double>(kInterval);
      s.values[0] += share * r.load->warps_per_sm;
      for (size_t m = 3; m < metrics.size(); ++m) {
        bool unit = false;
        for (const SolUnitMetric& u : kSolUnits) {
          if (metrics[m] == u.metric) {
            s.values[m] += share * LoadOf(*r.load, u.unit);
            unit = true;
          }
        }
        if (!unit) s.values[m] += share;  // the set's other metrics: 1 where it runs
      }
    }
    samples.push_back(std::move(s));
  };
  if (mixed && !ran.empty()) {
    size_t first = 0;
    for (uint64_t t = ran.front().start; t + kInterval <= ran.back().end; t += kInterval) {
      while (first < ran.size() && ran[first].end <= t) ++first;
      sample_at(t, std::span<const Ran>(ran).subspan(first));
    }
  } else {
    for (const Ran& r : ran) {
      for (uint64_t t = r.start; t + kInterval <= r.end; t += kInterval) {
        sample_at(t, std::span<const Ran>(&r, 1));
      }
    }
  }
  {
    TraceWriter::Batch batch(b->writer());
    for (const PmSampleRecord& s : samples) ok &= batch.Write(s);
  }
  ok &= b->Finish();
  if (!ok) return absl::InternalError("the sol fixture was not written whole");
  return TraceModel::Load(path);
}

// The kernel time of the launches of `name` (durations carry the builder's jitter).
double TotalNs(const TraceModel& model, std::string_view name) {
  double ns = 0;
  for (const KernelEvent& k : model.kernels) {
    if (k.name == name) ns += static_cast<double>(k.duration_ns);
  }
  return ns;
}

const AdviseFinding* FindingOf(const AdviseReport& report, std::string_view rule,
                               std::string_view kernel) {
  for (const AdviseFinding& f : report.findings) {
    if (f.rule == rule && f.kernel == kernel) return &f;
  }
  return nullptr;
}

constexpr const char* kChase = "chase(unsigned int const*, unsigned int*, int)";
constexpr const char* kFma = "fma_loop(float*, int)";
constexpr const char* kCopy =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)";
// Held out: names no rule was tuned on.
constexpr const char* kTritonGemm = "triton_tem_fused_addmm_relu_t_0";
constexpr const char* kCutlassBf16 =
    "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x1x1_0_tnn_align8_"
    "warpspecialized_cooperative_epi_tma";
// Read as FP16 by the table (its `_f16`); held out all the same.
constexpr const char* kCutlassF16 =
    "cutlass3x_sm90_tensorop_gemm_f16_f16_f32_void_f16_128x128x64_2x1x1_0_ttn_align8_"
    "warpspecialized_pingpong_epi_tma";

TEST(AdviseSolTest, ALatencyBoundKernelCostsTheTimeToTheLineWithItsOccupancyJoined) {
  // 4 ms of a chase at 12% L2 with 10 warps per SM (of 64 theoretical), 1 ms of an FMA loop.
  absl::StatusOr<TraceModel> model =
      SolModel({{kChase, 1'000'000, {.dram = 5, .l2 = 12, .sm = 10, .warps_per_sm = 10}, 4},
                {kFma, 1'000'000, {.dram = 1, .l2 = 2, .fma = 85, .sm = 86}}});
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = Advise(*model);
  const AdviseFinding* f = FindingOf(report, kRuleLatencyBound, kChase);
  ASSERT_NE(f, nullptr);
  // The busiest unit, L2 at 12%, brought to 60%: the 4 ms fall by 1 - 12/60.
  const double chase_ns = TotalNs(*model, kChase);
  EXPECT_NEAR(static_cast<double>(f->cost_ns), chase_ns * (1 - 12.0 / 60), chase_ns * 0.005);
  EXPECT_EQ(f->occurrences, 4u);
  EXPECT_THAT(f->evidence, HasSubstr("l2 at 12.0% of peak"));
  EXPECT_THAT(f->evidence, HasSubstr("achieved occupancy 16% of the SM's warps"));
  EXPECT_THAT(f->evidence, HasSubstr("upper bound"));
  EXPECT_THAT(f->fix, HasSubstr("raise occupancy"));
  // The FMA loop runs at its roof: no speed-of-light finding.
  EXPECT_EQ(FindingOf(report, kRuleLatencyBound, kFma), nullptr);
  EXPECT_EQ(FindingOf(report, kRuleMemoryBoundGemm, kFma), nullptr);
}

TEST(AdviseSolTest, ALatencyBoundKernelOfLittleTimeIsNoFinding) {
  // The chase holds 1 ms of 41 ms of kernel time (2.4%, under 5%).
  absl::StatusOr<TraceModel> model = SolModel({{kChase, 1'000'000, {.dram = 5, .l2 = 12, .sm = 10}},
                                               {kFma, 2'000'000, {.fma = 85, .sm = 86}, 20}});
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = Advise(*model);
  EXPECT_EQ(FindRule(report, kRuleLatencyBound), nullptr);
}

TEST(AdviseSolTest, KernelsSharingEverySampleAreUnmixedBeforeTheyAreJudged) {
  // A chase (12% L2, latency-bound) and a copy (85% DRAM) of about 4 µs take turns, 600 of each,
  // under 20 µs samples: every sample holds both, and its figures are the mix's (DRAM near
  // 45%, which would call both latency-bound). Unmixed, the chase is latency-bound and the
  // copy memory-bound.
  std::vector<PlannedKernel> plan;
  for (int i = 0; i < 600; ++i) {
    plan.push_back({kChase, 3'000 + 500 * static_cast<uint64_t>(i % 5), {.dram = 5, .l2 = 12, .sm = 10}});
    plan.push_back({kCopy, 3'000 + 700 * static_cast<uint64_t>(i % 3), {.dram = 85, .l2 = 40, .sm = 8}});
  }
  absl::StatusOr<TraceModel> model = SolModel(plan, SolPmMetrics(), /*mixed=*/true);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<SolReport> sol = BuildSolReport(PmInputsOf(*model), SolReportOptions{});
  ASSERT_TRUE(sol.ok()) << sol.status();
  ASSERT_EQ(sol->rows.size(), 2u);
  for (const SolRow& r : sol->rows) {
    EXPECT_LT(r.kernel.own_fraction, kSolOwnShareForVerdict) << r.kernel.name;
    EXPECT_TRUE(r.unmixed) << r.kernel.name;
    EXPECT_EQ(r.verdict, r.kernel.name == kChase ? SolVerdict::kLatencyBound
                                                 : SolVerdict::kMemoryBound)
        << r.kernel.name;
  }
  const AdviseReport report = Advise(*model);
  EXPECT_NE(FindingOf(report, kRuleLatencyBound, kChase), nullptr);
  EXPECT_EQ(FindingOf(report, kRuleLatencyBound, kCopy), nullptr);
}

TEST(AdviseSolTest, AKernelOnSharedSamplesThatCannotBeUnmixedGetsNoVerdict) {
  // Figures that rest on samples shared with other kernels, with no unmixed figures (the
  // samples could not tell it apart): "mixed", not latency-bound.
  SolRow row;
  row.kernel.own_fraction = 0.1;
  row.kernel.value = NoSolValues();
  for (size_t u = 0; u < kSolUnitCount; ++u) row.kernel.value[u] = 12;
  row.kernel.low = row.kernel.high = row.kernel.value;
  JudgeSol(row);
  EXPECT_EQ(row.verdict, SolVerdict::kMixed);
  row.kernel.own_fraction = 0.9;  // the same figures from samples of its own
  JudgeSol(row);
  EXPECT_EQ(row.verdict, SolVerdict::kLatencyBound);
}

TEST(AdviseSolTest, HeldOutGemmNamesBoundByDramAreFindingsAndOtherKernelsAreNot) {
  absl::StatusOr<TraceModel> model = SolModel({
      {kTritonGemm, 1'000'000, {.dram = 90, .l2 = 70, .tensor = 18, .sm = 30}, 3},
      {kCutlassF16, 1'000'000, {.dram = 80, .l2 = 60, .tensor = 40, .sm = 45}, 2},
      // On its roof: compute-bound.
      {kCutlassBf16, 1'000'000, {.dram = 30, .l2 = 40, .tensor = 85, .sm = 86}, 2},
      // DRAM-bound, but no matrix multiply.
      {kCopy, 1'000'000, {.dram = 92, .l2 = 75, .sm = 20}, 3},
  });
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = Advise(*model);
  const AdviseFinding* triton = FindingOf(report, kRuleMemoryBoundGemm, kTritonGemm);
  ASSERT_NE(triton, nullptr);
  // Until its busiest compute unit (sm, 30%) is as loaded as DRAM (90%): 3 ms x (1 - 30/90).
  const double triton_ns = TotalNs(*model, kTritonGemm);
  EXPECT_NEAR(static_cast<double>(triton->cost_ns), triton_ns * (1 - 30.0 / 90), triton_ns * 0.005);
  EXPECT_THAT(triton->evidence, HasSubstr("dram at 90.0% of peak"));
  EXPECT_THAT(triton->evidence, HasSubstr("sm, at 30.0%"));
  const AdviseFinding* cutlass = FindingOf(report, kRuleMemoryBoundGemm, kCutlassF16);
  ASSERT_NE(cutlass, nullptr);
  const double cutlass_ns = TotalNs(*model, kCutlassF16);
  EXPECT_NEAR(static_cast<double>(cutlass->cost_ns), cutlass_ns * (1 - 45.0 / 80),
              cutlass_ns * 0.005);
  EXPECT_EQ(FindingOf(report, kRuleMemoryBoundGemm, kCutlassBf16), nullptr);
  EXPECT_EQ(FindingOf(report, kRuleMemoryBoundGemm, kCopy), nullptr);
  EXPECT_EQ(FindRule(report, kRuleLatencyBound), nullptr);
  // Costed as kernel rules: named, severity set, ranked with the rest.
  EXPECT_EQ(triton->occurrences, 3u);
  EXPECT_GT(triton->cost_fraction, 0);
}

TEST(AdviseSolTest, ATraceWithoutTheSolSetGetsNeitherRuleNorANote) {
  absl::StatusOr<TraceModel> model = advise_testing::WrittenModel([](SyntheticTraceBuilder& b) {
    for (int i = 0; i < 4; ++i) b.LaunchKernel(NamedKernel(kTritonGemm, 1'000'000));
  });
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = Advise(*model);
  EXPECT_EQ(FindRule(report, kRuleLatencyBound), nullptr);
  EXPECT_EQ(FindRule(report, kRuleMemoryBoundGemm), nullptr);
  for (const std::string& note : report.notes) EXPECT_THAT(note, ::testing::Not(HasSubstr("sol")));
}

TEST(AdviseSolTest, ASetWithSomeUnitsOnlyGetsNeitherRule) {
  // The active-warp metrics with SM and DRAM throughput (a set of the PM sampling docs): the
  // chase reads under 60% on both, but the units it lacks could hold its limit.
  std::vector<std::string> metrics = DefaultPmMetrics();
  for (const SolUnitMetric& u : kSolUnits) {
    if (u.unit == "sm" || u.unit == "dram") metrics.emplace_back(u.metric);
  }
  absl::StatusOr<TraceModel> model =
      SolModel({{kChase, 1'000'000, {.dram = 5, .l2 = 12, .sm = 10}, 4},
                {kTritonGemm, 1'000'000, {.dram = 90, .sm = 30}, 3}},
               metrics);
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = Advise(*model);
  EXPECT_EQ(FindRule(report, kRuleLatencyBound), nullptr);
  EXPECT_EQ(FindRule(report, kRuleMemoryBoundGemm), nullptr);
}

// The bundled H200 recording (tests/gpu/sol/sol_kernels.cu): the pointer chase is latency-bound;
// the DRAM copy is no matrix multiply.
TEST(AdviseSolTest, TheBundledRecordingFindsThePointerChase) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(
      ::warpscope::testing::SourceDir() + "/examples/traces/cuda13.0_sm90/sol_kernels.wst");
  ASSERT_TRUE(model.ok()) << model.status();
  const AdviseReport report = Advise(*model);
  const AdviseFinding* chase = nullptr;
  for (const AdviseFinding& f : report.findings) {
    if (f.rule == kRuleLatencyBound && f.kernel.starts_with("ws_sol_chase")) chase = &f;
    EXPECT_NE(f.rule, kRuleMemoryBoundGemm) << f.kernel;
    if (f.rule == kRuleLatencyBound) {
      EXPECT_THAT(f.kernel, ::testing::Not(HasSubstr("fma")));
    }
  }
  ASSERT_NE(chase, nullptr);
  EXPECT_GT(chase->cost_ns, 0u);
  EXPECT_LE(chase->cost_ns, chase->cost_max_ns);
}

}  // namespace
}  // namespace warpscope
