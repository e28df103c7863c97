// The reader and model against traces written by the real TraceWriter (through the
// synthetic fixture builder): nothing undefined, nothing lost, counters and end marker as the
// writer promises, and a writer file cut anywhere still reads up to its last whole packet.
#include <cstdio>
#include <set>
#include <string>

#include "analyzers/analyses/summary.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/model/trace_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::warpscope::testing::ReadFileOrDie;
using ::warpscope::testing::WriteTempFile;

std::string TempPath(const std::string& name) {
  const std::string path = WriteTempFile("", name);
  std::remove(path.c_str());
  return path;
}

const StatCounter* FindCounter(const std::vector<StatCounter>& list, const std::string& name) {
  for (const StatCounter& c : list) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

TEST(WriterRoundTripTest, ScenariosLoadCleanly) {
  for (const std::string& scenario : fixtures::ScenarioNames()) {
    SCOPED_TRACE(scenario);
    const std::string path = TempPath(scenario + ".wst");
    std::string error;
    ASSERT_TRUE(fixtures::WriteScenario(scenario, path, true, &error)) << error;
    absl::StatusOr<TraceModel> model = TraceModel::Load(path);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_TRUE(model->import_counters.empty())
        << model->import_counters[0].name << " = " << model->import_counters[0].value;
    EXPECT_FALSE(model->truncation.truncated());
    ASSERT_TRUE(model->end_of_trace.has_value());
    EXPECT_TRUE(model->stats_final);
    EXPECT_EQ(model->header.format_major, 1u);
    EXPECT_FALSE(model->kernels.empty());
    for (const KernelEvent& k : model->kernels) {
      EXPECT_FALSE(k.name.empty());
      EXPECT_NE(k.launch, nullptr);
    }
    for (const PmSample& s : model->pm_samples) {
      const PmMetricSet* set = model->FindPmMetricSet(s.metric_set_id);
      ASSERT_NE(set, nullptr);
      EXPECT_EQ(set->metric_names.size(), s.values.size());
    }
    // Every kernel has the API call that launched it.
    std::set<uint32_t> api_correlations;
    for (const ApiCallEvent& a : model->api_calls) api_correlations.insert(a.correlation_id);
    for (const KernelEvent& k : model->kernels) {
      EXPECT_TRUE(api_correlations.count(k.correlation_id)) << k.correlation_id;
    }
    // The writer's counters: no loss, and per-kind counts that match what was read.
    const StatCounter* dropped = FindCounter(model->stats, "writer.events_dropped.buffer_full");
    ASSERT_NE(dropped, nullptr);
    EXPECT_EQ(dropped->value, 0u);
    EXPECT_EQ(dropped->severity, v1::SEVERITY_DATA_LOSS);
    const StatCounter* kernels = FindCounter(model->stats, "writer.events_written.kernel");
    if (kernels != nullptr) {
      EXPECT_EQ(kernels->value, model->kernels.size());
    }
    EXPECT_EQ(model->WorstSeverity(), v1::SEVERITY_INFO);
    const TraceSummary summary = SummarizeTrace(*model, scenario, {});
    ASSERT_FALSE(summary.devices.empty());
    EXPECT_TRUE(summary.devices[0].has_busy);
    std::remove(path.c_str());
  }
}

TEST(WriterRoundTripTest, SmallChunksAndCutsAnywhere) {
  const std::string path = TempPath("small_chunks.wst");
  fixtures::SyntheticTraceOptions options;
  options.chunk_bytes = 4096;
  options.pm_interval_ns = 5000;
  std::string error;
  std::unique_ptr<fixtures::SyntheticTraceBuilder> b =
      fixtures::SyntheticTraceBuilder::Create(path, options, &error);
  ASSERT_NE(b, nullptr) << error;
  b->PushRange("step");
  for (int i = 0; i < 50; ++i) {
    fixtures::KernelSpec spec;
    spec.name = i % 2 ? "odd_kernel(int)" : "even_kernel(int)";
    spec.duration_ns = 10'000 + 100 * i;
    b->LaunchKernel(spec);
  }
  b->Memcpy(CopyKind::kDtoH, 1 << 20, fixtures::kComputeStream, true);
  b->StreamSynchronize(fixtures::kComputeStream);
  b->PopRange();
  ASSERT_TRUE(b->Finish());
  b.reset();

  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->kernels.size(), 50u);
  EXPECT_TRUE(model->import_counters.empty());
  ASSERT_EQ(model->nvtx_ranges.size(), 1u);
  EXPECT_EQ(model->nvtx_ranges[0].name, "step");

  const std::string wire = ReadFileOrDie(path);
  for (size_t cut = 1; cut < wire.size(); cut += 97) {
    SCOPED_TRACE(cut);
    absl::StatusOr<std::unique_ptr<TraceReader>> reader =
        TraceReader::FromBuffer(wire.substr(0, cut), "cut.wst");
    if (!reader.ok()) {
      EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);  // inside the header
      continue;
    }
    absl::StatusOr<TraceModel> partial = TraceModel::Load(**reader);
    ASSERT_TRUE(partial.ok()) << partial.status();
    EXPECT_TRUE(partial->truncation.truncated());
    EXPECT_LE(partial->kernels.size(), 50u);
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace warpscope
