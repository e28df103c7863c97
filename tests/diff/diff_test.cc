// Tests of `warpscope diff` on pairs of generated traces whose differences are known: each
// step of the program is an NVTX range "step" on one thread launching kernel `gemm` and
// kernel `relu` (each launch with its API call, so the range owns the GPU work) and copying
// 1 MiB host to device.
#include "analyzers/analyses/diff.h"

#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::testing::HasSubstr;
using namespace ::warpscope::testing;  // NOLINT(build/namespaces): the test helpers.

struct Program {
  int steps = 10;
  uint64_t gemm_ns = 100000;
  uint64_t relu_ns = 10000;
  uint64_t copy_ns = 20000;
  bool extra_kernel = false;  // a third kernel, `softmax` (30 us), in every step
  uint64_t host_stall_ns = 0;  // host time in the step before its launches (no GPU work)
  bool numbered = false;       // steps named step_0, step_1, ... instead of step
};

// The trace of `p`, written to a temporary file named `name`.
std::string TracePath(const Program& p, const std::string& name) {
  std::string text = R"pb(
    packet { header { format_major: 1 format_minor: 0 tool_version: "0.1.0" pid: 1
                      clock_domain: CLOCK_DOMAIN_SYNTHETIC producer: "test:diff" } }
    packet { device { id: 0 name: "NVIDIA H200" compute_capability_major: 9 } }
    packet { thread { id: 1 cupti_thread_id: 11 os_tid: 100 name: "main" } }
    packet { interned_string { id: 1 value: "cudaLaunchKernel" } }
    packet { interned_string { id: 2 value: "gemm" } }
    packet { interned_string { id: 3 value: "relu" } }
    packet { interned_string { id: 4 value: "step" } }
    packet { interned_string { id: 5 value: "softmax" } }
    packet { interned_string { id: 6 value: "cudaMemcpyAsync" } }
  )pb";
  uint64_t t = 1000000;
  uint32_t correlation = 1;
  for (int s = 0; s < p.steps; ++s) {
    const uint64_t step_start = t;
    uint32_t step_name = 4;
    if (p.numbered) {
      step_name = 100 + s;
      absl::StrAppendFormat(&text, "packet { interned_string { id: %d value: \"step_%d\" } }\n",
                            step_name, s);
    }
    t += p.host_stall_ns;
    std::string work;
    auto launch = [&](uint32_t name_id, uint64_t duration, bool copy) {
      absl::StrAppendFormat(&work,
                            "packet { api_call { domain: API_DOMAIN_RUNTIME name_id: %d "
                            "start_ns: %d duration_ns: 1000 thread_id: 1 correlation_id: %d } }\n",
                            copy ? 6 : 1, t, correlation);
      if (copy) {
        absl::StrAppendFormat(&work,
                              "packet { memcpy { copy_kind: COPY_KIND_HTOD bytes: 1048576 "
                              "start_ns: %d duration_ns: %d device_id: 0 context_id: 1 "
                              "stream_id: 7 correlation_id: %d } }\n",
                              t + 2000, duration, correlation);
      } else {
        absl::StrAppendFormat(&work,
                              "packet { kernel { name_id: %d start_ns: %d duration_ns: %d "
                              "device_id: 0 context_id: 1 stream_id: 7 correlation_id: %d } }\n",
                              name_id, t + 2000, duration, correlation);
      }
      ++correlation;
      t += 2000 + duration;
    };
    launch(0, p.copy_ns, true);
    launch(2, p.gemm_ns, false);
    launch(3, p.relu_ns, false);
    if (p.extra_kernel) launch(5, 30000, false);
    t += 5000;
    absl::StrAppendFormat(&text,
                          "packet { nvtx_range { name_id: %d start_ns: %d duration_ns: %d "
                          "thread_id: 1 end_thread_id: 1 is_push_pop: true depth: 0 } }\n",
                          step_name, step_start, t - step_start - 1000);
    text += work;
  }
  text += "packet { end_of_trace { } }\n";
  return WriteTempFile(TextprotoToWire(text), name);
}

TraceModel Load(const std::string& path) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

const DiffRow* Find(const DiffReport& r, DiffSection section, const std::string& name) {
  for (const auto* rows : {&r.totals, &r.rows}) {
    for (const DiffRow& row : *rows) {
      if (row.section == section && row.name == name) return &row;
    }
  }
  return nullptr;
}

TEST(DiffTest, TheSameRunHasNoVerdicts) {
  const TraceModel a = Load(TracePath({}, "same_a.wst"));
  const TraceModel b = Load(TracePath({}, "same_b.wst"));
  const DiffReport r = BuildDiffReport(a, b, "a", "b", {});
  EXPECT_EQ(r.regressions, 0u);
  EXPECT_EQ(r.improvements, 0u);
  // gemm, relu, the HtoD copy, the step range's GPU work and its host time
  ASSERT_EQ(r.rows.size(), 5u);
  for (const DiffRow& row : r.rows) EXPECT_EQ(row.verdict, DiffVerdict::kUnchanged) << row.name;
}

// A host stall of 1 ms at the start of every step: the range's host time per step is the
// regression; the GPU work it launched is unchanged. Numbered steps (step_0, step_1, ...)
// compare as one range, step_<N>.
TEST(DiffTest, AHostStallInsideARangeIsAChangeOfItsHostTime) {
  Program base, stalled;
  base.numbered = stalled.numbered = true;
  stalled.host_stall_ns = 1'000'000;
  const TraceModel a = Load(TracePath(base, "host_a.wst"));
  const TraceModel b = Load(TracePath(stalled, "host_b.wst"));
  const DiffReport r = BuildDiffReport(a, b, "a", "b", {});
  const DiffRow* host = Find(r, DiffSection::kNvtxHost, "step_<N>");
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->verdict, DiffVerdict::kRegression);
  EXPECT_EQ(host->new_count, 10u);
  EXPECT_NEAR(host->delta_ns, 1e6, 1.0);
  const DiffRow* gpu = Find(r, DiffSection::kNvtx, "step_<N>");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->verdict, DiffVerdict::kUnchanged);
  DiffOptions literal;
  literal.literal_ranges = true;
  const DiffReport by_name = BuildDiffReport(a, b, "a", "b", literal);
  EXPECT_EQ(Find(by_name, DiffSection::kNvtxHost, "step_<N>"), nullptr);
  const DiffRow* one = Find(by_name, DiffSection::kNvtxHost, "step_3");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->new_count, 1u);
}

TEST(DiffTest, ASlowerKernelIsTheTopRegressionWithItsCost) {
  Program slower;
  slower.gemm_ns = 120000;  // +20% on 10 launches: +200 us
  const DiffReport r = BuildDiffReport(Load(TracePath({}, "base.wst")),
                                       Load(TracePath(slower, "gemm_slower.wst")), "base", "new",
                                       {});
  ASSERT_FALSE(r.rows.empty());
  // The kernel and the range that launches it cost the same 200 us; the kernel is named first.
  const DiffRow* gemm = Find(r, DiffSection::kKernel, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->verdict, DiffVerdict::kRegression);
  EXPECT_TRUE(gemm->per_instance);  // 10 launches on both sides >= 5
  EXPECT_DOUBLE_EQ(gemm->base_ns, 100000);
  EXPECT_DOUBLE_EQ(gemm->new_ns, 120000);
  EXPECT_DOUBLE_EQ(gemm->delta_fraction, 0.2);
  EXPECT_DOUBLE_EQ(gemm->impact_ns, 200000);
  EXPECT_DOUBLE_EQ(std::fabs(r.rows[0].impact_ns), 200000);
  const DiffRow* step = Find(r, DiffSection::kNvtx, "step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->verdict, DiffVerdict::kRegression);
  EXPECT_DOUBLE_EQ(step->impact_ns, 200000);  // its GPU time per instance rose by 20 us
  EXPECT_EQ(Find(r, DiffSection::kKernel, "relu")->verdict, DiffVerdict::kUnchanged);
  EXPECT_EQ(Find(r, DiffSection::kTotal, "kernel time")->verdict, DiffVerdict::kRegression);
  EXPECT_EQ(Find(r, DiffSection::kTotal, "kernel time")->impact_ns, 200000);
  EXPECT_EQ(Find(r, DiffSection::kTotal, "memory time")->verdict, DiffVerdict::kUnchanged);
}

TEST(DiffTest, MoreStepsAreNotARegressionPerInstance) {
  Program longer;
  longer.steps = 20;  // twice the work, each kernel as fast as before
  const DiffReport r = BuildDiffReport(Load(TracePath({}, "ten.wst")),
                                       Load(TracePath(longer, "twenty.wst")), "a", "b", {});
  EXPECT_EQ(Find(r, DiffSection::kKernel, "gemm")->verdict, DiffVerdict::kUnchanged);
  EXPECT_EQ(Find(r, DiffSection::kNvtx, "step")->verdict, DiffVerdict::kUnchanged);
  // The totals did grow, and say so.
  EXPECT_EQ(Find(r, DiffSection::kTotal, "kernel time")->verdict, DiffVerdict::kRegression);
  // Below --min-instances the totals are compared.
  DiffOptions strict;
  strict.min_instances = 50;
  const DiffReport t = BuildDiffReport(Load(TracePath({}, "ten2.wst")),
                                       Load(TracePath(longer, "twenty2.wst")), "a", "b", strict);
  const DiffRow* gemm = Find(t, DiffSection::kKernel, "gemm");
  EXPECT_FALSE(gemm->per_instance);
  EXPECT_EQ(gemm->verdict, DiffVerdict::kRegression);
  EXPECT_DOUBLE_EQ(gemm->impact_ns, 1000000);
}

TEST(DiffTest, ThresholdsAndNewKernels) {
  Program faster, extra;
  faster.relu_ns = 9000;  // -10% per launch, -10 us over the run: under the 20 us impact floor
  extra.extra_kernel = true;
  DiffReport r = BuildDiffReport(Load(TracePath({}, "t_base.wst")),
                                 Load(TracePath(faster, "t_faster.wst")), "a", "b", {});
  EXPECT_EQ(Find(r, DiffSection::kKernel, "relu")->verdict, DiffVerdict::kUnchanged);
  DiffOptions sensitive;
  sensitive.min_delta_ns = 5000;
  r = BuildDiffReport(Load(TracePath({}, "t_base2.wst")), Load(TracePath(faster, "t_faster2.wst")),
                      "a", "b", sensitive);
  EXPECT_EQ(Find(r, DiffSection::kKernel, "relu")->verdict, DiffVerdict::kImprovement);
  sensitive.threshold = 0.15;  // a 10% change is now under the relative threshold
  r = BuildDiffReport(Load(TracePath({}, "t_base3.wst")), Load(TracePath(faster, "t_faster3.wst")),
                      "a", "b", sensitive);
  EXPECT_EQ(Find(r, DiffSection::kKernel, "relu")->verdict, DiffVerdict::kUnchanged);
  r = BuildDiffReport(Load(TracePath({}, "t_base4.wst")), Load(TracePath(extra, "t_extra.wst")),
                      "a", "b", {});
  const DiffRow* softmax = Find(r, DiffSection::kKernel, "softmax");
  ASSERT_NE(softmax, nullptr);
  EXPECT_EQ(softmax->verdict, DiffVerdict::kAdded);
  EXPECT_EQ(softmax->base_count, 0u);
  EXPECT_DOUBLE_EQ(softmax->impact_ns, 300000);
  r = BuildDiffReport(Load(TracePath(extra, "t_extra2.wst")), Load(TracePath({}, "t_base5.wst")),
                      "a", "b", {});
  EXPECT_EQ(Find(r, DiffSection::kKernel, "softmax")->verdict, DiffVerdict::kRemoved);
}

// The CLI's path: each trace loaded with its NVTX ranges alone and its GPU work folded from a
// second read of the file (summary's fold) gives the rows the whole tables give; a file gone
// before its second read is an error, not an empty side.
TEST(DiffTest, FoldedFromTheFilesAsFromTheTables) {
  Program base, next;
  next.gemm_ns = 130000;
  next.extra_kernel = true;
  next.host_stall_ns = 50000;
  const std::string a_path = TracePath(base, "files_a.wst");
  const std::string b_path = TracePath(next, "files_b.wst");
  const DiffReport tables = BuildDiffReport(Load(a_path), Load(b_path), "a", "b", {});
  absl::StatusOr<TraceModel> a = TraceModel::Load(a_path, DiffLoadOptions());
  absl::StatusOr<TraceModel> b = TraceModel::Load(b_path, DiffLoadOptions());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->kernels.empty());
  absl::StatusOr<DiffReport> files = BuildDiffReportOfFiles(*a, *b, "a", "b", {});
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->regressions, tables.regressions);
  ASSERT_EQ(files->rows.size(), tables.rows.size());
  ASSERT_EQ(files->totals.size(), tables.totals.size());
  for (const auto& [f, t] : {std::pair(&files->totals, &tables.totals),
                             std::pair(&files->rows, &tables.rows)}) {
    for (size_t i = 0; i < t->size(); ++i) {
      SCOPED_TRACE((*t)[i].name);
      EXPECT_EQ((*f)[i].name, (*t)[i].name);
      EXPECT_EQ((*f)[i].new_count, (*t)[i].new_count);
      EXPECT_EQ((*f)[i].new_total_ns, (*t)[i].new_total_ns);
      EXPECT_EQ((*f)[i].new_ns, (*t)[i].new_ns);
      EXPECT_EQ((*f)[i].verdict, (*t)[i].verdict);
    }
  }
  ASSERT_EQ(std::remove(b_path.c_str()), 0);
  EXPECT_FALSE(BuildDiffReportOfFiles(*a, *b, "a", "b", {}).ok());
}

TEST(DiffTest, ParsesThresholds) {
  EXPECT_DOUBLE_EQ(*ParseRelativeThreshold("5%"), 0.05);
  EXPECT_DOUBLE_EQ(*ParseRelativeThreshold(" 0.1 "), 0.1);
  EXPECT_FALSE(ParseRelativeThreshold("five").ok());
  EXPECT_FALSE(ParseRelativeThreshold("-1%").ok());
  EXPECT_DOUBLE_EQ(*ParseDurationNs("20us"), 20000);
  EXPECT_DOUBLE_EQ(*ParseDurationNs("1.5ms"), 1.5e6);
  EXPECT_DOUBLE_EQ(*ParseDurationNs("2s"), 2e9);
  EXPECT_DOUBLE_EQ(*ParseDurationNs("500ns"), 500);
  EXPECT_FALSE(ParseDurationNs("20").ok());
  EXPECT_FALSE(ParseDurationNs("fast").ok());
}

TEST(DiffCliTest, FailsOnRegressionForCi) {
  Program slower;
  slower.gemm_ns = 130000;
  const std::string base = TracePath({}, "cli_base.wst");
  const std::string same = TracePath({}, "cli_same.wst");
  const std::string next = TracePath(slower, "cli_new.wst");
  CliResult r = RunCli("diff --fail-on-regression " + base + " " + same);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("0 regression(s)"));
  r = RunCli("diff --fail-on-regression " + base + " " + next);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.out, HasSubstr("slower"));
  EXPECT_THAT(r.err, HasSubstr("is slower than"));
  r = RunCli("diff " + base + " " + next);  // without the flag: a report, status 0
  EXPECT_EQ(r.exit_code, 0);
  r = RunCli("diff -f csv " + base + " " + next);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("kernel,gemm,10,10,median,100000,130000,30000,30,300000,"));
  r = RunCli("diff --threshold 50% --fail-on-regression " + base + " " + next);
  EXPECT_EQ(r.exit_code, 0) << r.out;  // +30% is under 50%
  r = RunCli("diff " + base);
  EXPECT_EQ(r.exit_code, 2);
  r = RunCli("diff --min-delta 20 " + base + " " + next);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not a duration"));
  r = RunCli("diff " + base + " /nonexistent.wst");
  EXPECT_EQ(r.exit_code, 1);
}

}  // namespace
}  // namespace warpscope
