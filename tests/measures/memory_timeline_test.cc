// Memory over time (analyzers/measures/memory_timeline.h) on small textproto traces: the
// ten-step trace of tests/data/synthetic/memory.textproto (its figures worked out by hand in
// the comments), owners, a free of an unknown block, pools, devices, and the robust slope.
#include <string>
#include <vector>

#include "analyzers/measures/memory_timeline.h"
#include "analyzers/model/trace_model.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::warpscope::testing::FixtureWire;
using ::warpscope::testing::TextprotoToWire;
using ::warpscope::testing::WriteTempFile;

constexpr uint64_t kMiB = 1 << 20;

TraceModel Load(const std::string& wire) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(WriteTempFile(wire));
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

TraceModel LoadText(const std::string& packets) {
  return Load(TextprotoToWire(R"pb(
    packet { header { format_major: 1 format_minor: 3 producer: "test" } }
  )pb" + packets));
}

TEST(MemoryTimeline, OwnersFollowTheModuleThatAsked) {
  EXPECT_EQ(MemoryOwner("/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so"),
            "PyTorch caching allocator");
  EXPECT_EQ(MemoryOwner("libtorch_cuda.so"), "PyTorch caching allocator");
  EXPECT_EQ(MemoryOwner("/usr/lib/libnccl.so.2"), "NCCL");
  EXPECT_EQ(MemoryOwner("libcublasLt.so.13"), "cuBLAS workspace");
  EXPECT_EQ(MemoryOwner("libcublas.so.13"), "cuBLAS workspace");
  EXPECT_EQ(MemoryOwner("libcudnn_ops.so.9"), "cuDNN");
  EXPECT_EQ(MemoryOwner("/opt/app/libsolver.so"), "libsolver.so");
  EXPECT_EQ(MemoryOwner(""), "program");
}

TEST(MemoryTimeline, TenStepsWithALeakAndAFailedRequest) {
  const TraceModel model = Load(FixtureWire("synthetic/memory.textproto"));
  ASSERT_EQ(model.memory_events.size(), 39u);
  MemoryTimelineOptions options;
  options.top = 3;
  for (uint64_t k = 1; k <= 11; ++k) options.instants.push_back(k * 1'000'000);
  options.intervals = {{1'000'000, 2'000'000}, {10'000'000, 11'000'000}, {0, 999'999}};
  const MemoryTimeline t = ComputeMemoryTimeline(model, options);
  EXPECT_EQ(t.events, 39u);
  EXPECT_EQ(t.unknown_releases, 1u);  // the free at 50 ns of a block from before
  ASSERT_EQ(t.devices.size(), 1u);
  const DeviceMemory& d = t.devices[0];
  // 1 GiB + 64 + 32 MiB before the steps, 36 MiB kept by steps 0-8, step 9's 256 MiB.
  EXPECT_EQ(d.peak_bytes, 1412 * kMiB);
  EXPECT_EQ(d.peak_ns, 10'100'000u);
  EXPECT_EQ(d.reserved_at_peak_bytes, 1412 * kMiB);  // the pool had reserved nothing yet
  EXPECT_EQ(d.peak_reserved_bytes, 1412 * kMiB);
  EXPECT_EQ(d.end_bytes, 1160 * kMiB);
  ASSERT_EQ(d.owners_at_peak.size(), 3u);
  EXPECT_EQ(d.owners_at_peak[0], std::make_pair(std::string("PyTorch caching allocator"),
                                                1316 * kMiB));
  EXPECT_EQ(d.owners_at_peak[1], std::make_pair(std::string("NCCL"), 64 * kMiB));
  EXPECT_EQ(d.owners_at_peak[2], std::make_pair(std::string("cuBLAS workspace"), 32 * kMiB));
  ASSERT_EQ(d.largest_at_peak.size(), 3u);
  EXPECT_EQ(d.largest_at_peak[0].bytes, 1024 * kMiB);
  EXPECT_EQ(d.largest_at_peak[0].stack_id, 1u);
  EXPECT_EQ(d.largest_at_peak[1].bytes, 256 * kMiB);
  EXPECT_EQ(d.largest_at_peak[1].allocated_ns, 10'100'000u);
  EXPECT_EQ(d.largest_at_peak[2].owner, "NCCL");
  EXPECT_EQ(d.largest_at_peak[2].stack_id, 0u);
  // Pinned host memory is not the device's, but has its own peak.
  EXPECT_EQ(d.peak_by_kind.at(v1::MEMORY_KIND_PINNED), 2 * kMiB);
  EXPECT_EQ(d.peak_by_kind.at(v1::MEMORY_KIND_DEVICE), 1412 * kMiB);
  // In use at each step's start grows by 4 MiB a step; the pool's 16 MiB was freed by 11 ms.
  ASSERT_EQ(d.in_use_at_bytes.size(), 11u);
  for (size_t k = 0; k < 11; ++k) EXPECT_EQ(d.in_use_at_bytes[k], (1120 + 4 * k) * kMiB) << k;
  EXPECT_EQ(d.interval_peak_bytes, (std::vector<uint64_t>{1376 * kMiB, 1412 * kMiB, 1120 * kMiB}));
  // The site that grows: train.py:57 (stack 2), 0 then 40 MiB.
  bool found = false;
  for (const SiteGrowth& s : d.site_growth) {
    if (s.stack_id != 2) continue;
    found = true;
    EXPECT_EQ(s.first_bytes, 0u);
    EXPECT_EQ(s.last_bytes, 40 * kMiB);
  }
  EXPECT_TRUE(found);
  // The refused 80 GiB: 1160 MiB in use, the pool's 128 MiB reserved and unused.
  ASSERT_EQ(t.failures.size(), 1u);
  EXPECT_EQ(t.failures[0].bytes_asked, 80ull << 30);
  EXPECT_EQ(t.failures[0].in_use_bytes, 1160 * kMiB);
  EXPECT_EQ(t.failures[0].pool_free_bytes, 128 * kMiB);
  EXPECT_EQ(t.failures[0].reserved_bytes, 1160 * kMiB + 128 * kMiB);
  EXPECT_EQ(t.failures[0].stack_id, 1u);
  EXPECT_EQ(t.failures[0].result, 2u);
  // The curve keeps at most curve_points points and reaches the peak.
  EXPECT_LE(d.curve.size(), options.curve_points);
  uint64_t curve_peak = 0;
  for (const MemoryPoint& p : d.curve) curve_peak = std::max(curve_peak, p.in_use_bytes);
  EXPECT_EQ(curve_peak, d.peak_bytes);
}

TEST(MemoryTimeline, EventsOutOfOrderMappingsAndDevices) {
  // File order is not time order; a mapping and an allocation at one address are two blocks;
  // device 1 is filtered out when asked.
  const TraceModel model = LoadText(R"pb(
    packet { memory { operation: MEMORY_OPERATION_RELEASE memory_kind: MEMORY_KIND_DEVICE
                      address: 4096 bytes: 100 timestamp_ns: 30 } }
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE memory_kind: MEMORY_KIND_DEVICE
                      address: 4096 bytes: 100 timestamp_ns: 10 } }
    packet { memory { operation: MEMORY_OPERATION_MAP address: 4096 bytes: 50 timestamp_ns: 20 } }
    packet { memory { operation: MEMORY_OPERATION_UNMAP address: 4096 bytes: 50 timestamp_ns: 40 } }
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE memory_kind: MEMORY_KIND_DEVICE
                      address: 8192 bytes: 7 timestamp_ns: 15 device_id: 1 } }
  )pb");
  MemoryTimeline all = ComputeMemoryTimeline(model, {});
  ASSERT_EQ(all.devices.size(), 2u);
  EXPECT_EQ(all.devices[0].peak_bytes, 150u);
  EXPECT_EQ(all.devices[0].peak_ns, 20u);
  EXPECT_EQ(all.devices[0].end_bytes, 0u);
  EXPECT_EQ(all.unknown_releases, 0u);
  EXPECT_EQ(all.devices[1].peak_bytes, 7u);
  MemoryTimelineOptions only1;
  only1.device = 1;
  MemoryTimeline one = ComputeMemoryTimeline(model, only1);
  ASSERT_EQ(one.devices.size(), 1u);
  EXPECT_EQ(one.devices[0].device_id, 1u);
  EXPECT_EQ(one.events, 1u);
  EXPECT_EQ(model.DeviceIds(), (std::vector<uint32_t>{0, 1}));
}

// Module statics CUPTI records with no context (device 0 whatever the device) are counted on
// the process's only device; in a process of several devices they are left out of each.
TEST(MemoryTimeline, StaticsWithoutAContextGoToTheOnlyDevice) {
  const std::string statics = R"pb(
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE memory_kind: MEMORY_KIND_DEVICE_STATIC
                      address: 4096 bytes: 500 timestamp_ns: 10 } }
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE memory_kind: MEMORY_KIND_DEVICE
                      address: 8192 bytes: 1000 timestamp_ns: 20 device_id: 1 context_id: 1 } }
  )pb";
  const TraceModel one = LoadText(R"pb(packet { context { id: 1 device_id: 1 } })pb" + statics);
  MemoryTimeline t = ComputeMemoryTimeline(one, {});
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].device_id, 1u);
  EXPECT_EQ(t.devices[0].peak_bytes, 1500u);
  const TraceModel two = LoadText(R"pb(packet { context { id: 1 device_id: 1 } }
                                       packet { context { id: 2 device_id: 0 } })pb" +
                                  statics);
  t = ComputeMemoryTimeline(two, {});
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].device_id, 1u);
  EXPECT_EQ(t.devices[0].peak_bytes, 1000u);
  EXPECT_EQ(t.events, 1u);
}

TEST(MemoryTimeline, AVmmMappingCupTiAlsoReportsAsAnAllocationCountsOnce) {
  // cuMemMap as the callback records it (MAP, no module) and as CUPTI's memory records give it
  // (ALLOCATE of the same address and size, from libc10_cuda), then their frees in the order
  // the H200 gave them (RELEASE before UNMAP); a second mapping whose ALLOCATE comes first.
  const TraceModel model = LoadText(R"pb(
    packet { interned_string { id: 1 value: "/t/libc10_cuda.so" } }
    packet { memory { operation: MEMORY_OPERATION_MAP memory_kind: MEMORY_KIND_DEVICE
                      address: 4096 bytes: 64 timestamp_ns: 10 correlation_id: 7 } }
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE memory_kind: MEMORY_KIND_DEVICE
                      address: 4096 bytes: 64 timestamp_ns: 11 correlation_id: 8
                      source_id: 1 } }
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE memory_kind: MEMORY_KIND_DEVICE
                      address: 8192 bytes: 32 timestamp_ns: 20 source_id: 1 } }
    packet { memory { operation: MEMORY_OPERATION_MAP memory_kind: MEMORY_KIND_DEVICE
                      address: 8192 bytes: 32 timestamp_ns: 21 } }
    packet { memory { operation: MEMORY_OPERATION_RELEASE memory_kind: MEMORY_KIND_DEVICE
                      address: 4096 bytes: 64 timestamp_ns: 30 } }
    packet { memory { operation: MEMORY_OPERATION_UNMAP memory_kind: MEMORY_KIND_DEVICE
                      address: 4096 bytes: 64 timestamp_ns: 31 } }
  )pb");
  MemoryTimeline t = ComputeMemoryTimeline(model, {});
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].peak_bytes, 96u);
  EXPECT_EQ(t.devices[0].end_bytes, 32u);
  EXPECT_EQ(t.unknown_releases, 0u);
  ASSERT_EQ(t.devices[0].owners_at_peak.size(), 1u);
  EXPECT_EQ(t.devices[0].owners_at_peak[0].first, "PyTorch caching allocator");
}

TEST(MemoryTimeline, ADumpsLiveBlocksCountFromTheirOriginalTimes) {
  // A flight-recorder dump: its window opens at 1000 ns, and the blocks still live then are
  // written as allocations with their own, earlier, times; the free of one of them and the
  // refused request inside the window see them.
  const TraceModel model = LoadText(R"pb(
    packet { capture_window { window_id: 1 begin: true timestamp_ns: 1000
                              trigger: CAPTURE_TRIGGER_FLIGHT_RECORDER } }
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE memory_kind: MEMORY_KIND_DEVICE
                      address: 65536 bytes: 3000 timestamp_ns: 1600 } }
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE memory_kind: MEMORY_KIND_DEVICE
                      address: 4096 bytes: 1000 timestamp_ns: 100 } }
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE memory_kind: MEMORY_KIND_DEVICE
                      address: 8192 bytes: 2000 timestamp_ns: 200 } }
    packet { memory { operation: MEMORY_OPERATION_RELEASE memory_kind: MEMORY_KIND_DEVICE
                      address: 8192 bytes: 2000 timestamp_ns: 1500 } }
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE_FAILED bytes: 900000
                      timestamp_ns: 1700 result: 2 } }
    packet { capture_window { window_id: 1 begin: false timestamp_ns: 1800
                              trigger: CAPTURE_TRIGGER_FLIGHT_RECORDER } }
  )pb");
  MemoryTimelineOptions options;
  options.instants = {1000};
  const MemoryTimeline t = ComputeMemoryTimeline(model, options);
  EXPECT_EQ(t.unknown_releases, 0u);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].in_use_at_bytes, std::vector<uint64_t>{3000});
  EXPECT_EQ(t.devices[0].peak_bytes, 4000u);
  EXPECT_EQ(t.devices[0].peak_ns, 1600u);
  ASSERT_EQ(t.devices[0].largest_at_peak.size(), 2u);
  EXPECT_EQ(t.devices[0].largest_at_peak[1].allocated_ns, 100u);
  ASSERT_EQ(t.failures.size(), 1u);
  EXPECT_EQ(t.failures[0].in_use_bytes, 4000u);
  EXPECT_EQ(t.failures[0].owners,
            (std::vector<std::pair<std::string, uint64_t>>{{"program", 4000}}));
}

TEST(MemoryTimeline, ASourceNeverDefinedIsCounted) {
  const TraceModel model = LoadText(R"pb(
    packet { memory { operation: MEMORY_OPERATION_ALLOCATE address: 1 bytes: 1 source_id: 9 } }
  )pb");
  uint64_t undefined = 0;
  for (const StatCounter& c : model.import_counters) {
    if (c.name == "reader.undefined_string_refs") undefined = c.value;
  }
  EXPECT_EQ(undefined, 1u);
}

TEST(MemoryTimeline, TheilSenSlopeAndItsInterval) {
  EXPECT_FALSE(TheilSenSlope({1, 2}).has_value());
  std::optional<Slope> exact = TheilSenSlope({10, 14, 18, 22, 26, 30});
  ASSERT_TRUE(exact.has_value());
  EXPECT_DOUBLE_EQ(exact->per_step, 4);
  EXPECT_DOUBLE_EQ(exact->low, 4);
  EXPECT_DOUBLE_EQ(exact->high, 4);
  std::optional<Slope> flat = TheilSenSlope({100, 101, 99, 100, 102, 98, 100, 101, 99, 100});
  ASSERT_TRUE(flat.has_value());
  EXPECT_LE(flat->low, 0);
  EXPECT_GE(flat->high, 0);
  // One wild value does not move a robust slope.
  std::optional<Slope> outlier = TheilSenSlope({0, 1, 2, 3, 1000, 5, 6, 7, 8, 9});
  ASSERT_TRUE(outlier.has_value());
  EXPECT_DOUBLE_EQ(outlier->per_step, 1);
  EXPECT_GT(outlier->low, 0);
}

}  // namespace
}  // namespace warpscope
