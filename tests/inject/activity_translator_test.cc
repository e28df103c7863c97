// Tests for the CUPTI activity translation, NVTX pairing and kernel name cache, with
// synthetic CUDA 13.0 records (no GPU needed).
#include "collectors/activity/activity_translator.h"

#include <cupti_runtime_cbid.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/activity/fake_activity_api.h"
#include "tests/activity/fake_record_sink.h"

namespace warpscope {
namespace {

using testing::ZeroedActivity;


ActivityTranslator MakeTranslator() {
  return ActivityTranslator(
      [](bool runtime, uint32_t cbid) -> const char* {
        return runtime && cbid == 211 ? "cudaLaunchKernel" : nullptr;
      },
      [](DeviceRecord* d) { d->max_shared_memory_per_block_optin = 232448; });
}

const CUpti_Activity* AsActivity(const void* p) { return static_cast<const CUpti_Activity*>(p); }

CUpti_ActivityKernel10 Kernel(const char* name, uint64_t start, uint64_t end) {
  auto k = ZeroedActivity<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = name;
  k.start = start;
  k.end = end;
  k.gridX = 128; k.gridY = 2; k.gridZ = 1;
  k.blockX = 256; k.blockY = 1; k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 4096;
  k.clusterX = 2; k.clusterY = 1; k.clusterZ = 1;
  k.sharedMemoryExecuted = 65536;
  k.isSharedMemoryCarveoutRequested = 1;
  k.sharedMemoryCarveoutRequested = 50;
  k.shmemLimitConfig = CUPTI_FUNC_SHMEM_LIMIT_OPTIN;
  k.deviceId = 0; k.contextId = 1; k.streamId = 7; k.correlationId = 42;
  k.gridId = 99; k.graphId = 3; k.graphNodeId = 0x100000005ull;
  return k;
}

TEST(ActivityTranslatorTest, KernelFieldsAndDemangledName) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  CUpti_ActivityKernel10 k = Kernel("_Z7ws_spinPf", 1000, 5000);
  t.Translate(AsActivity(&k), sink);
  ASSERT_EQ(sink.kernels.size(), 1u);
  const KernelRecord& r = sink.kernels[0];
  EXPECT_EQ(sink.names[r.name_id], "ws_spin(float*)");
  EXPECT_EQ(sink.names[r.mangled_name_id], "_Z7ws_spinPf");
  EXPECT_EQ(r.start_ns, 1000u);
  EXPECT_EQ(r.end_ns, 5000u);
  EXPECT_EQ(r.stream_id, 7u);
  EXPECT_EQ(r.correlation_id, 42u);
  EXPECT_EQ(r.grid_id, 99u);
  EXPECT_EQ(r.graph_id, 3u);
  EXPECT_EQ(r.graph_node_id, 5u);
  ASSERT_EQ(sink.configs.size(), 1u);
  const LaunchConfigRecord& c = sink.configs[0];
  EXPECT_EQ(c.grid_x, 128u);
  EXPECT_EQ(c.grid_y, 2u);
  EXPECT_EQ(c.block_x, 256u);
  EXPECT_EQ(c.registers_per_thread, 40u);
  EXPECT_EQ(c.static_shared_memory, 1024u);
  EXPECT_EQ(c.dynamic_shared_memory, 4096u);
  EXPECT_EQ(c.cluster_x, 2u);
  EXPECT_EQ(c.shared_memory_executed, 65536u);
  EXPECT_EQ(c.shared_memory_carveout_requested, 50u);
  EXPECT_EQ(c.shmem_limit_config, 1u);
  EXPECT_EQ(t.counters().kernels, 1u);
}

TEST(ActivityTranslatorTest, KernelNamesAreDemangledOncePerName) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  static const char kName[] = "_Z9ws_insidePi";
  std::string copy = kName;  // same text, another pointer
  for (int i = 0; i < 1000; ++i) {
    CUpti_ActivityKernel10 k = Kernel(i % 2 ? kName : copy.c_str(), i, i + 1);
    t.Translate(AsActivity(&k), sink);
  }
  EXPECT_EQ(sink.kernels.size(), 1000u);
  EXPECT_EQ(t.names().demangle_calls(), 1u);
  EXPECT_EQ(sink.intern_calls, 2);  // demangled + mangled, once
  EXPECT_EQ(sink.kernels[0].name_id, sink.kernels[999].name_id);
}

TEST(ActivityTranslatorTest, ZeroTimestampsAreCounted) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  CUpti_ActivityKernel10 k = Kernel("k", 0, 0);
  t.Translate(AsActivity(&k), sink);
  EXPECT_EQ(t.counters().zero_timestamps, 1u);
}

// Seen on the H200: copies queued when a rank was told to stop (torchrun's SIGTERM after
// another rank died) come back with start == end == ~0; written as is they put the trace's
// end at +16651025403 s.
TEST(ActivityTranslatorTest, WorkThatNeverRanHasNoTimestamps) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  auto m = ZeroedActivity<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  m.start = UINT64_MAX;
  m.end = UINT64_MAX;
  t.Translate(AsActivity(&m), sink);
  CUpti_ActivityKernel10 k = Kernel("k", 5, UINT64_MAX);
  t.Translate(AsActivity(&k), sink);
  ASSERT_EQ(sink.memcpys.size(), 1u);
  EXPECT_EQ(sink.memcpys[0].start_ns, 0u);
  EXPECT_EQ(sink.memcpys[0].end_ns, 0u);
  ASSERT_EQ(sink.kernels.size(), 1u);
  EXPECT_EQ(sink.kernels[0].end_ns, 0u);
  EXPECT_EQ(t.counters().zero_timestamps, 2u);
}

TEST(ActivityTranslatorTest, MemcpyMemsetSyncApi) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  auto m = ZeroedActivity<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  m.bytes = 4 << 20;
  m.start = 10;
  m.end = 20;
  t.Translate(AsActivity(&m), sink);
  ASSERT_EQ(sink.memcpys.size(), 1u);
  EXPECT_EQ(sink.memcpys[0].copy_kind, CopyKind::kHtoD);
  EXPECT_EQ(sink.memcpys[0].src_kind, MemoryKind::kPinned);
  EXPECT_EQ(sink.memcpys[0].dst_kind, MemoryKind::kDevice);
  EXPECT_TRUE(sink.memcpys[0].is_async);
  EXPECT_EQ(sink.memcpys[0].bytes, 4u << 20);

  auto p = ZeroedActivity<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
  p.bytes = 77;
  p.srcDeviceId = 0;
  p.dstDeviceId = 1;
  t.Translate(AsActivity(&p), sink);
  ASSERT_EQ(sink.memcpys.size(), 2u);
  EXPECT_EQ(sink.memcpys[1].copy_kind, CopyKind::kPtoP);
  EXPECT_EQ(sink.memcpys[1].dst_device_id, 1u);

  auto s = ZeroedActivity<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  s.value = 7;
  s.bytes = 3 << 20;
  s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  t.Translate(AsActivity(&s), sink);
  ASSERT_EQ(sink.memsets.size(), 1u);
  EXPECT_EQ(sink.memsets[0].value, 7u);
  EXPECT_EQ(sink.memsets[0].memory_kind, MemoryKind::kDevice);

  auto y = ZeroedActivity<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  y.streamId = 9;
  y.cudaEventId = 0xffffffffu;
  t.Translate(AsActivity(&y), sink);
  ASSERT_EQ(sink.syncs.size(), 1u);
  EXPECT_EQ(sink.syncs[0].kind, SyncKind::kStream);
  EXPECT_EQ(sink.syncs[0].stream_id, 9u);
  EXPECT_EQ(sink.syncs[0].cuda_event_id, 0u);

  auto a = ZeroedActivity<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  a.cbid = 211;
  a.threadId = 1234;
  a.correlationId = 42;
  t.Translate(AsActivity(&a), sink);
  a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  a.cbid = 5;
  t.Translate(AsActivity(&a), sink);
  ASSERT_EQ(sink.apis.size(), 2u);
  EXPECT_EQ(sink.names[sink.apis[0].name_id], "cudaLaunchKernel");
  EXPECT_EQ(sink.apis[0].domain, ApiDomain::kRuntime);
  EXPECT_EQ(sink.apis[0].thread_id, 2234u);
  EXPECT_EQ(sink.names[sink.apis[1].name_id], "driver_cbid_5");
}

TEST(ActivityTranslatorTest, DeviceRecordOnceWithFixup) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  auto d = ZeroedActivity<CUpti_ActivityDevice5>(CUPTI_ACTIVITY_KIND_DEVICE);
  d.name = "NVIDIA H200";
  d.numMultiprocessors = 132;
  d.maxWarpsPerMultiprocessor = 64;
  d.maxSharedMemoryPerMultiprocessor = 233472;
  d.computeCapabilityMajor = 9;
  d.uuid.bytes[0] = static_cast<char>(0xab);
  t.Translate(AsActivity(&d), sink);
  t.Translate(AsActivity(&d), sink);
  ASSERT_EQ(sink.devices.size(), 1u);
  EXPECT_EQ(sink.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(sink.devices[0].sm_count, 132u);
  EXPECT_EQ(sink.devices[0].max_shared_memory_per_block_optin, 232448u);
  EXPECT_EQ(sink.devices[0].uuid.substr(0, 2), "ab");
  EXPECT_EQ(sink.devices[0].uuid.size(), 32u);
}

CUpti_ActivityMarker2 Marker(uint32_t flags, uint32_t id, uint64_t ts, uint32_t tid,
                             const char* name, const char* domain = nullptr) {
  auto m = ZeroedActivity<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  m.flags = static_cast<CUpti_ActivityFlag>(flags);
  m.id = id;
  m.timestamp = ts;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.threadId = tid;
  m.name = name;
  m.domain = domain;
  return m;
}

TEST(ActivityTranslatorTest, NvtxPushPopNestingAndThreads) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  auto feed = [&](CUpti_ActivityMarker2 m) { t.Translate(AsActivity(&m), sink); };
  feed(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 100, 11, "outer"));
  auto data = ZeroedActivity<CUpti_ActivityMarkerData2>(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  data.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB;
  data.id = 1;
  data.color = 0xff00ff00;
  data.category = 7;
  t.Translate(AsActivity(&data), sink);
  feed(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 110, 11, "inner"));
  feed(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 115, 22, "worker"));  // another thread
  feed(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 120, 11, nullptr));
  feed(Marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 4, 125, 11, "mark", "dom"));
  feed(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 130, 11, nullptr));
  feed(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 3, 140, 22, nullptr));
  feed(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 99, 150, 11, nullptr));  // no START seen
  ASSERT_EQ(sink.ranges.size(), 3u);
  const NvtxRangeRecord& inner = sink.ranges[0];
  EXPECT_EQ(sink.names[inner.name_id], "inner");
  EXPECT_EQ(inner.depth, 1u);
  EXPECT_TRUE(inner.is_push_pop);
  EXPECT_EQ(inner.start_ns, 110u);
  EXPECT_EQ(inner.end_ns, 120u);
  const NvtxRangeRecord& outer = sink.ranges[1];
  EXPECT_EQ(sink.names[outer.name_id], "outer");
  EXPECT_EQ(outer.depth, 0u);
  EXPECT_EQ(outer.color, 0xff00ff00u);
  EXPECT_EQ(outer.category, 7u);
  const NvtxRangeRecord& worker = sink.ranges[2];
  EXPECT_EQ(worker.depth, 0u);
  EXPECT_EQ(worker.thread_id, 22u + 1000);
  ASSERT_EQ(sink.marks.size(), 1u);
  EXPECT_EQ(sink.names[sink.marks[0].domain_id], "dom");
  EXPECT_EQ(t.nvtx().unmatched_ends(), 1u);
}

TEST(ActivityTranslatorTest, StartEndRangeAcrossThreadsIsNotPushPop) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  auto m1 = Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 5, 10, 1, "io");
  auto m2 = Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 5, 20, 2, nullptr);
  t.Translate(AsActivity(&m1), sink);
  t.Translate(AsActivity(&m2), sink);
  ASSERT_EQ(sink.ranges.size(), 1u);
  EXPECT_FALSE(sink.ranges[0].is_push_pop);
  EXPECT_NE(sink.ranges[0].thread_id, sink.ranges[0].end_thread_id);
}

TEST(ActivityTranslatorTest, SuppressedCaptureRange) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  t.nvtx().SuppressRange("train", "");
  auto a = Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 10, 1, "train");
  auto b = Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 20, 1, nullptr);
  t.Translate(AsActivity(&a), sink);
  t.Translate(AsActivity(&b), sink);
  EXPECT_TRUE(sink.ranges.empty());
}

TEST(ActivityTranslatorTest, TrivialRuntimeCallsAreFilteredAndCounted) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  auto a = ZeroedActivity<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;
  t.Translate(AsActivity(&a), sink);
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000;
  t.Translate(AsActivity(&a), sink);
  EXPECT_TRUE(sink.apis.empty());
  EXPECT_EQ(t.counters().api_calls_filtered, 2u);
  t.set_filter_trivial_api(false);
  t.Translate(AsActivity(&a), sink);
  EXPECT_EQ(sink.apis.size(), 1u);
  EXPECT_EQ(ApiDisplayName("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(ApiDisplayName("cudaStreamIsCapturing_ptsz_v10000"), "cudaStreamIsCapturing_ptsz");
  EXPECT_EQ(ApiDisplayName("cuLaunchKernel"), "cuLaunchKernel");
}

TEST(KernelNamesTest, Demangle) {
  EXPECT_EQ(DemangleKernelName("_Z12ws_templatedIfEvPT_S0_"), "void ws_templated<float>(float*, float)");
  EXPECT_EQ(DemangleKernelName("plain_c_kernel"), "plain_c_kernel");
  EXPECT_EQ(DemangleKernelName("_Zbroken"), "_Zbroken");
  EXPECT_EQ(DemangleKernelName(nullptr), "<unknown>");
}

}  // namespace
}  // namespace warpscope
