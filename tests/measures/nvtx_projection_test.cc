// NVTX GPU projection: hand-computed answers on the nvtx_gpu fixture (nesting, two threads,
// a graph launch, a start/end range, work without an API record, a range without work),
// capture windows, and the bundled H200 recording checked against an independent all-pairs
// reference.
#include "analyzers/measures/nvtx_projection.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "analyzers/model/trace_model.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::warpscope::testing::FixtureWire;
using ::warpscope::testing::SourceDir;
using ::warpscope::testing::WriteTempFile;

TraceModel LoadFixture(const std::string& name) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(WriteTempFile(FixtureWire("synthetic/" + name + ".textproto")));
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

const NvtxRangeGroup* Find(const NvtxProjection& p, const std::string& path, uint32_t os_tid) {
  for (const NvtxRangeGroup& g : p.groups) {
    if (g.path == path && g.os_tid == os_tid) return &g;
  }
  return nullptr;
}

TEST(NvtxProjectionTest, KnownAnswersOnTheFixture) {
  TraceModel model = LoadFixture("nvtx_gpu");
  NvtxProjectionOptions options;
  options.work_by_name = true;
  const NvtxProjection p = ProjectNvtxRanges(model, options);
  ASSERT_EQ(p.groups.size(), 7u);
  EXPECT_EQ(p.gpu_records, 11u);  // 9 kernels, 1 memcpy, 1 memset; the graph record is not work
  EXPECT_EQ(p.gpu_records_without_api_call, 1u);

  struct Expected {
    std::string path;
    uint32_t tid;
    uint64_t instances, cpu_ns, gpu_ns, span_ns, kernels, copies, graphs;
  };
  const Expected expected[] = {
      // Inclusive: step holds forward, backward, idle_wait and one launch of its own.
      {"step", 100, 1, 100000, 61000, 90500, 7, 1, 1},
      {"step/forward", 100, 1, 38000, 35000, 37000, 3, 1, 0},
      {"step/forward/attention", 100, 2, 9000, 11000, 11000, 2, 0, 0},
      // One graph launch: three node kernels under one correlation id, counted once.
      {"step/backward", 100, 1, 49000, 25000, 25000, 3, 0, 1},
      {"step/idle_wait", 100, 1, 4000, 0, 0, 0, 0, 0},
      // Same name on another thread: its own row, with that thread's launches only.
      {"forward", 200, 1, 27000, 1000, 1000, 0, 1, 0},
      // Start/end: no nesting; thread 1's graph launch inside its time does not count.
      {"prefetch", 200, 1, 56500, 4000, 10000, 1, 1, 0},
  };
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.path);
    const NvtxRangeGroup* g = Find(p, e.path, e.tid);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->cpu_durations_ns.size(), e.instances);
    uint64_t cpu = 0;
    for (uint64_t d : g->cpu_durations_ns) cpu += d;
    EXPECT_EQ(cpu, e.cpu_ns);
    EXPECT_EQ(g->gpu_time_ns, e.gpu_ns);
    EXPECT_EQ(g->gpu_span_ns, e.span_ns);
    EXPECT_EQ(g->kernels, e.kernels);
    EXPECT_EQ(g->copies, e.copies);
    EXPECT_EQ(g->graph_launches, e.graphs);
    EXPECT_EQ(g->cut_instances, 0u);
    uint64_t by_name = 0;
    for (const auto& [name, totals] : g->work_by_name) by_name += totals.total_ns;
    EXPECT_EQ(by_name, e.gpu_ns);
  }
  EXPECT_EQ(Find(p, "prefetch", 200)->domain, "io");
  const NvtxRangeGroup* backward = Find(p, "step/backward", 100);
  ASSERT_EQ(backward->work_by_name.size(), 1u);
  const GpuWorkTotals& node = backward->work_by_name.at("node_kernel(float*)");
  EXPECT_EQ(node.count, 3u);
  EXPECT_EQ(node.min_ns, 5000u);
  EXPECT_EQ(node.max_ns, 10000u);
}

// Two numbered steps on the main thread (thread 1), each with a backward range; thread 2 opens
// no ranges and launches a kernel inside each backward (an autograd thread), thread 3 opens
// none and launches one between the steps; thread 4 opens a range of its own (so its launches
// stay its own) while thread 1's step_1 is open.
TEST(NvtxProjectionTest, NumberedRangesAreOneRowAndRangelessThreadsLaunchForTheMainOne) {
  std::string text = R"pb(
    packet { header { format_major: 1 format_minor: 0 tool_version: "0.1.0" pid: 1
                      clock_domain: CLOCK_DOMAIN_SYNTHETIC producer: "test:lending" } }
    packet { thread { id: 1 cupti_thread_id: 11 os_tid: 100 name: "main" } }
    packet { thread { id: 2 cupti_thread_id: 12 os_tid: 101 name: "autograd" } }
    packet { thread { id: 3 cupti_thread_id: 13 os_tid: 102 name: "other" } }
    packet { thread { id: 4 cupti_thread_id: 14 os_tid: 103 name: "loader" } }
    packet { interned_string { id: 1 value: "cudaLaunchKernel" } }
    packet { interned_string { id: 2 value: "gemm" } }
    packet { interned_string { id: 3 value: "step_0" } }
    packet { interned_string { id: 4 value: "step_1" } }
    packet { interned_string { id: 5 value: "backward" } }
    packet { interned_string { id: 6 value: "prefetch" } }
  )pb";
  auto range = [&](int name, uint64_t start, uint64_t end, int thread, int depth) {
    absl::StrAppendFormat(&text,
                          "packet { nvtx_range { name_id: %d start_ns: %d duration_ns: %d "
                          "thread_id: %d end_thread_id: %d is_push_pop: true depth: %d } }\n",
                          name, start, end - start, thread, thread, depth);
  };
  int correlation = 0;
  auto launch = [&](uint64_t at, int thread, uint64_t ns) {
    ++correlation;
    absl::StrAppendFormat(&text,
                          "packet { api_call { domain: API_DOMAIN_RUNTIME name_id: 1 start_ns: %d "
                          "duration_ns: 1000 thread_id: %d correlation_id: %d } }\n"
                          "packet { kernel { name_id: 2 start_ns: %d duration_ns: %d device_id: 0 "
                          "context_id: 1 stream_id: 7 correlation_id: %d } }\n",
                          at, thread, correlation, at + 2000, ns, correlation);
  };
  range(3, 0, 100000, 1, 0);
  range(5, 50000, 90000, 1, 1);
  range(4, 200000, 300000, 1, 0);
  range(5, 250000, 290000, 1, 1);
  launch(60000, 2, 10000);   // in step_0/backward
  launch(260000, 2, 20000);  // in step_1/backward
  launch(150000, 3, 5000);   // between the steps: no range of any thread open
  range(6, 292000, 299000, 4, 0);
  launch(295000, 4, 7000);   // its own range, while step_1 is open: stays there
  text += "packet { end_of_trace { } }\n";
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(WriteTempFile(testing::TextprotoToWire(text), "lending.wst"));
  ASSERT_TRUE(model.ok()) << model.status();
  const NvtxProjection p = ProjectNvtxRanges(*model);
  const NvtxRangeGroup* backward = Find(p, "step_<N>/backward", 100);
  ASSERT_NE(backward, nullptr);
  EXPECT_EQ(backward->name, "backward");
  EXPECT_EQ(backward->cpu_durations_ns.size(), 2u);
  EXPECT_EQ(backward->gpu_time_ns, 30000u);
  const NvtxRangeGroup* step = Find(p, "step_<N>", 100);
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->cpu_durations_ns.size(), 2u);
  EXPECT_EQ(step->gpu_time_ns, 30000u);  // not thread 3's launch between the steps
  const NvtxRangeGroup* prefetch = Find(p, "prefetch", 103);
  ASSERT_NE(prefetch, nullptr);
  EXPECT_EQ(prefetch->gpu_time_ns, 7000u);

  NvtxProjectionOptions literal;
  literal.literal_ranges = true;
  const NvtxProjection by_name = ProjectNvtxRanges(*model, literal);
  EXPECT_EQ(Find(by_name, "step_<N>/backward", 100), nullptr);
  const NvtxRangeGroup* first = Find(by_name, "step_0/backward", 100);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->gpu_time_ns, 10000u);
}

TEST(NvtxProjectionTest, WithoutApiRecordsNothingIsClaimed) {
  TraceModel model = LoadFixture("nvtx_kernels_only");
  const NvtxProjection p = ProjectNvtxRanges(model);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].gpu_time_ns, 0u);
  EXPECT_EQ(p.api_calls, 0u);
  EXPECT_EQ(p.gpu_records, 2u);
  EXPECT_EQ(p.gpu_records_without_api_call, 2u);
}

TEST(NvtxProjectionTest, RangesReachingOutsideCaptureWindowsAreCounted) {
  TraceModel model = LoadFixture("nvtx_windows");
  const NvtxProjection p = ProjectNvtxRanges(model);
  const NvtxRangeGroup* loop = Find(p, "loop", 400);
  const NvtxRangeGroup* inner = Find(p, "loop/inner", 400);
  ASSERT_NE(loop, nullptr);
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(loop->cut_instances, 1u);
  EXPECT_EQ(loop->gpu_time_ns, 5000u);
  EXPECT_EQ(inner->cut_instances, 0u);
  EXPECT_EQ(inner->gpu_time_ns, 3000u);
}

// Push/pop ranges that touch (one ends where the next starts) are siblings, and a
// zero-length range at a parent's end is still its child.
TEST(NvtxProjectionTest, TouchingRangesAreSiblings) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(WriteTempFile(testing::TextprotoToWire(R"(
    packet { header { format_major: 1 } }
    packet { interned_string { id: 1 value: "a" } }
    packet { interned_string { id: 2 value: "b" } }
    packet { interned_string { id: 3 value: "c" } }
    packet { nvtx_range { name_id: 1 start_ns: 100 duration_ns: 100 thread_id: 1
                          is_push_pop: true depth: 0 } }
    packet { nvtx_range { name_id: 2 start_ns: 200 duration_ns: 100 thread_id: 1
                          is_push_pop: true depth: 0 } }
    packet { nvtx_range { name_id: 3 start_ns: 300 duration_ns: 0 thread_id: 1
                          is_push_pop: true depth: 1 } }
    packet { end_of_trace {} }
  )")));
  ASSERT_TRUE(model.ok()) << model.status();
  const NvtxProjection p = ProjectNvtxRanges(*model);
  std::set<std::string> paths;
  for (const NvtxRangeGroup& g : p.groups) paths.insert(g.path);
  EXPECT_EQ(paths, (std::set<std::string>{"a", "b", "b/c"}));
}

// The bundled H200 recording: `forward` launched 600 kernels that ran about 252.5 ms on the
// GPU while the range held the CPU for 11.2 ms. The reference is computed all-pairs: every
// API call on the range's thread that starts inside an instance, and every GPU record with
// that call's correlation id.
TEST(NvtxProjectionTest, BundledPipelineTraceMatchesAnAllPairsReference) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(SourceDir() + "/examples/traces/cuda13.0_sm90/pipeline_pm.wst");
  ASSERT_TRUE(model.ok()) << model.status();
  const NvtxProjection p = ProjectNvtxRanges(*model);
  ASSERT_FALSE(p.groups.empty());
  for (const NvtxRangeGroup& g : p.groups) {
    SCOPED_TRACE(g.path);
    std::set<uint32_t> correlations;
    uint64_t cpu_ns = 0;
    for (const NvtxRange& r : model->nvtx_ranges) {
      if (r.name != g.name || r.thread_id != g.thread_id || r.domain != g.domain) continue;
      cpu_ns += r.duration_ns;
      for (const ApiCallEvent& a : model->api_calls) {
        if (a.thread_id == r.thread_id && a.start_ns >= r.start_ns && a.start_ns <= r.end_ns()) {
          correlations.insert(a.correlation_id);
        }
      }
    }
    uint64_t gpu_ns = 0, kernels = 0;
    for (const KernelEvent& k : model->kernels) {
      if (correlations.count(k.correlation_id) != 0) {
        gpu_ns += k.duration_ns;
        ++kernels;
      }
    }
    for (const MemcpyEvent& c : model->memcpys) {
      if (correlations.count(c.correlation_id) != 0) gpu_ns += c.duration_ns;
    }
    for (const MemsetEvent& s : model->memsets) {
      if (correlations.count(s.correlation_id) != 0) gpu_ns += s.duration_ns;
    }
    // Names are unique in this trace, so name + thread is the group.
    EXPECT_EQ(g.gpu_time_ns, gpu_ns);
    EXPECT_EQ(g.kernels, kernels);
    uint64_t group_cpu = 0;
    for (uint64_t d : g.cpu_durations_ns) group_cpu += d;
    EXPECT_EQ(group_cpu, cpu_ns);
  }
  const NvtxRangeGroup* forward = nullptr;
  for (const NvtxRangeGroup& g : p.groups) {
    if (g.name == "forward") forward = &g;
  }
  ASSERT_NE(forward, nullptr);
  EXPECT_EQ(forward->path, "train_step/forward");
  EXPECT_EQ(forward->cpu_durations_ns.size(), 300u);
  EXPECT_EQ(forward->kernels, 600u);
  EXPECT_NEAR(forward->gpu_time_ns / 1e6, 252.5, 0.1);  // ms
  uint64_t cpu_ns = 0;
  for (uint64_t d : forward->cpu_durations_ns) cpu_ns += d;
  EXPECT_NEAR(cpu_ns / 1e6, 11.19, 0.01);  // ms
  EXPECT_EQ(p.gpu_records_without_api_call, 0u);
}

// The projector fed in file order, as `summary` feeds it (a second pass over the file), with
// `bound` launches in flight at most.
NvtxProjection ProjectInFileOrder(const TraceModel& model, const NvtxProjectionOptions& options,
                                  size_t bound) {
  struct Feed : TraceEventSink {
    using TraceEventSink::Add;
    explicit Feed(NvtxProjector& p) : projector(p) {}
    void Add(const KernelEvent& e) override { projector.Add(e); }
    void Add(const MemcpyEvent& e) override { projector.Add(e); }
    void Add(const MemsetEvent& e) override { projector.Add(e); }
    void Add(const ApiCallEvent& e) override { projector.Add(e); }
    void Add(const GraphLaunchEvent& e) override { projector.Add(e); }
    NvtxProjector& projector;
  };
  NvtxProjector projector(model, options, bound);
  Feed feed(projector);
  const EventKinds kinds = EventKindBit(EventKind::kKernel) | EventKindBit(EventKind::kMemcpy) |
                           EventKindBit(EventKind::kMemset) | EventKindBit(EventKind::kApiCall) |
                           EventKindBit(EventKind::kGraphLaunch);
  TraceModelOptions again;
  again.keep_events = 0;
  again.sink = &feed;
  again.sink_events = kinds;
  again.skip_other_events = true;
  EXPECT_TRUE(TraceModel::Load(model.source_name, again).ok());
  return projector.Finish();
}

void ExpectSameGroups(const NvtxProjection& a, const NvtxProjection& b) {
  EXPECT_EQ(a.api_calls, b.api_calls);
  EXPECT_EQ(a.gpu_records, b.gpu_records);
  EXPECT_EQ(a.gpu_records_without_api_call, b.gpu_records_without_api_call);
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (size_t i = 0; i < a.groups.size(); ++i) {
    const NvtxRangeGroup &x = a.groups[i], &y = b.groups[i];
    SCOPED_TRACE(x.path);
    EXPECT_EQ(x.path, y.path);
    EXPECT_EQ(x.gpu_time_ns, y.gpu_time_ns);
    EXPECT_EQ(x.gpu_span_ns, y.gpu_span_ns);
    EXPECT_EQ(x.kernels, y.kernels);
    EXPECT_EQ(x.copies, y.copies);
    EXPECT_EQ(x.graph_launches, y.graph_launches);
    EXPECT_EQ(x.work_by_name.size(), y.work_by_name.size());
  }
}

// In file order a record meets its call within the bound: the figures are those of the
// tables, also on the fixture with a graph launch (many records, one call) and a record
// without a call, and on the H200 recording with a bound far below its launches.
TEST(NvtxProjectionTest, BoundedInFileOrderGivesTheFiguresOfTheTables) {
  NvtxProjectionOptions options;
  options.work_by_name = true;
  TraceModel fixture = LoadFixture("nvtx_gpu");
  ExpectSameGroups(ProjectInFileOrder(fixture, options, 4), ProjectNvtxRanges(fixture, options));
  absl::StatusOr<TraceModel> recorded =
      TraceModel::Load(SourceDir() + "/examples/traces/cuda13.0_sm90/pipeline_pm.wst");
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  ASSERT_GT(recorded->kernels.size(), 800u);  // launches far past the bound
  ExpectSameGroups(ProjectInFileOrder(*recorded, options, 256),
                   ProjectNvtxRanges(*recorded, options));
}

// Past the bound the oldest launch is settled as it stands: its record, come too late, counts
// as without an API call (and is not lost from the count of records).
TEST(NvtxProjectionTest, ARecordPastTheBoundCountsAsWithoutCall) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(WriteTempFile(testing::TextprotoToWire(R"(
    packet { header { format_major: 1 } }
    packet { interned_string { id: 1 value: "cudaLaunchKernel" } }
    packet { interned_string { id: 2 value: "k" } }
    packet { interned_string { id: 3 value: "r" } }
    packet { nvtx_range { name_id: 3 start_ns: 0 duration_ns: 1000 thread_id: 1
                          is_push_pop: true depth: 0 } }
    packet { api_call { domain: API_DOMAIN_RUNTIME name_id: 1 start_ns: 10 duration_ns: 5
                        thread_id: 1 correlation_id: 1 } }
    packet { api_call { domain: API_DOMAIN_RUNTIME name_id: 1 start_ns: 20 duration_ns: 5
                        thread_id: 1 correlation_id: 2 } }
    packet { api_call { domain: API_DOMAIN_RUNTIME name_id: 1 start_ns: 30 duration_ns: 5
                        thread_id: 1 correlation_id: 3 } }
    packet { kernel { name_id: 2 start_ns: 100 duration_ns: 7 correlation_id: 2 } }
    packet { kernel { name_id: 2 start_ns: 200 duration_ns: 11 correlation_id: 3 } }
    packet { kernel { name_id: 2 start_ns: 300 duration_ns: 13 correlation_id: 1 } }
    packet { end_of_trace {} }
  )")));
  ASSERT_TRUE(model.ok()) << model.status();
  const NvtxProjection exact = ProjectInFileOrder(*model, {}, 0);
  ASSERT_EQ(exact.groups.size(), 1u);
  EXPECT_EQ(exact.groups[0].gpu_time_ns, 31u);
  EXPECT_EQ(exact.gpu_records_without_api_call, 0u);
  const NvtxProjection bounded = ProjectInFileOrder(*model, {}, 2);
  EXPECT_EQ(bounded.groups[0].gpu_time_ns, 18u);  // call 1 was let go before its kernel came
  EXPECT_EQ(bounded.gpu_records, 3u);
  EXPECT_EQ(bounded.gpu_records_without_api_call, 1u);
}

}  // namespace
}  // namespace warpscope
