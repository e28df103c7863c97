// The activity controller without a GPU (the fixture: activity_controller_fixture.h): records
// become trace events, flushes and their overhead records, dropped records, shutdown, fork and
// the buffer pool.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <cupti_runtime_cbid.h>

#include "analyzers/model/trace_model.h"
#include "collectors/activity/activity_controller.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/writer/stats_table.h"
#include "tests/activity/activity_controller_fixture.h"

namespace warpscope::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST_F(ActivityControllerTest, BuffersBecomeTraceEvents) {
  Init(Options());
  fake_.Emit(Device(0));
  fake_.Emit(Context(1, 0));
  OpenWindow();
  constexpr uint32_t kLaunches = 40;
  for (uint32_t i = 0; i < kLaunches; ++i) {
    fake_.Emit(
        RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 100 + i, uint64_t{i} * 10000));
    fake_.Emit(
        Kernel(i % 2 ? "_Z7ws_spinPf" : "_Z9ws_insidePi", 100 + i, uint64_t{i} * 10000 + 2000));
  }
  fake_.Emit(Memcpy(500, 900000));
  fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 501, 910000));
  controller_.Flush(true);
  ASSERT_GE(fake_.buffers_delivered, 3u);  // the records span several buffers
  // CUPTI was told not to record cudaGetDevice (a trivial query): it never arrives.
  const uint64_t records = 2 + 2 * kLaunches + 1;
  EXPECT_EQ(fake_.records_delivered, records);
  EXPECT_EQ(Published(stats::kActivityRecords.name), records);
  EXPECT_EQ(writer_->Counter(stats::kActivityBuffers.name), fake_.buffers_delivered);
  // CUPTI held every buffer until the flush: each one was new.
  EXPECT_EQ(writer_->Counter(stats::kActivityBuffersAllocated.name), fake_.buffers_delivered);

  TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.devices.size(), 1u);
  EXPECT_EQ(model.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(model.devices[0].sm_count, 132u);
  ASSERT_EQ(model.contexts.size(), 1u);
  EXPECT_EQ(model.contexts[0].device_id, 0u);
  ASSERT_EQ(model.kernels.size(), kLaunches);
  ASSERT_EQ(model.api_calls.size(), kLaunches);  // no cudaGetDevice
  for (uint32_t i = 0; i < kLaunches; ++i) {
    const KernelEvent& k = model.kernels[i];
    EXPECT_EQ(k.name, i % 2 ? "ws_spin(float*)" : "ws_inside(int*)");
    EXPECT_EQ(k.correlation_id, 100 + i);
    EXPECT_EQ(k.start_ns, uint64_t{i} * 10000 + 2000);
    EXPECT_EQ(k.duration_ns, 1000u);
    ASSERT_NE(k.launch, nullptr);
    EXPECT_EQ(k.launch->grid_x, 132u);
    EXPECT_EQ(model.api_calls[i].name, "cudaLaunchKernel");
    EXPECT_EQ(model.api_calls[i].correlation_id, 100 + i);
  }
  ASSERT_EQ(model.memcpys.size(), 1u);
  EXPECT_EQ(model.memcpys[0].bytes, 1u << 20);

  auto stat = [&](std::string_view name) {
    const StatCounter* c = FindStat(model, name);
    return c == nullptr ? ~uint64_t{0} : c->value;
  };
  EXPECT_EQ(stat(stats::kActivityRecords.name), records);
  EXPECT_EQ(stat(stats::kActivityKernels.name), kLaunches);
  EXPECT_EQ(stat(stats::kActivityApiCalls.name), kLaunches);
  EXPECT_EQ(stat(stats::kActivityApiCallsFiltered.name), 0u);  // CUPTI never recorded it
  EXPECT_EQ(stat(stats::kActivityMemcpys.name), 1u);
  EXPECT_EQ(stat(stats::kActivityKernelNamesDemangled.name), 2u);
  EXPECT_GT(stat(stats::kActivityBufferHighWater.name), kBufferBytes / 2);
  EXPECT_LE(stat(stats::kActivityBufferHighWater.name), kBufferBytes);
  EXPECT_EQ(stat(stats::kCuptiDroppedRecordsTotal.name), 0u);
  EXPECT_EQ(FindStat(model, stats::kCuptiDroppedRecords.name), nullptr);
  EXPECT_EQ(model.WorstSeverity(), v1::SEVERITY_INFO);
}

TEST_F(ActivityControllerTest, OnlyAForcedFlushHandsBackTheBufferBeingFilled) {
  Init(Options());
  OpenWindow();
  uint32_t emitted = 0;
  auto emit = [&] {
    ++emitted;
    fake_.Emit(Kernel("_Z1kv", emitted, uint64_t{emitted} * 10000));
  };
  while (fake_.complete_buffers() == 0) emit();
  emit();
  emit();
  const uint64_t in_complete_buffer = emitted - 3;  // the one that did not fit, and two more

  controller_.Flush(false);
  EXPECT_EQ(Published(stats::kActivityRecords.name), in_complete_buffer);
  EXPECT_EQ(writer_->Counter(stats::kActivityBuffers.name), 1u);
  controller_.Flush(true);
  EXPECT_EQ(Published(stats::kActivityRecords.name), emitted);
  EXPECT_EQ(writer_->Counter(stats::kActivityBuffers.name), 2u);
  EXPECT_THAT(fake_.CallsStartingWith("flush"), ElementsAre("flush", "flush forced"));
  EXPECT_EQ(CloseAndLoad().kernels.size(), emitted);
}

// A flush while tracing is the recorder's own time, which CUPTI may take from the program's
// CUDA calls: it goes into the trace as an overhead record on the flushing thread. Outside a
// window, and when the flush took no time on the clock, nothing is written.
TEST_F(ActivityControllerTest, FlushWhileTracingIsAnOverheadRecord) {
  Init(Options());
  fake_.now_ns = kTimeBase + 10'000'000;
  fake_.flush_ns = 3'000'000;
  controller_.Flush(false);  // no window open
  OpenWindow();
  controller_.Flush(false);  // from 13 ms to 16 ms
  fake_.flush_ns = 0;
  controller_.Flush(false);
  const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
  const TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.overheads.size(), 1u);
  const OverheadEvent& o = model.overheads[0];
  EXPECT_EQ(o.kind, kFlushOverheadKind);
  EXPECT_EQ(o.start_ns, 13'000'000u);
  EXPECT_EQ(o.duration_ns, 3'000'000u);
  bool on_this_thread = false;
  for (const ThreadInfo& t : model.threads)
    on_this_thread |= t.id == o.thread_id && t.os_tid == tid;
  EXPECT_TRUE(on_this_thread);
}

// The translation of each completed buffer is an overhead record too, inside its flush:
// the two tell CUPTI's own flush time from warpscope's.
TEST_F(ActivityControllerTest, BufferTranslationIsAnOverheadRecordInsideTheFlush) {
  TraceWithAClock();
  for (uint32_t i = 1; i <= 3; ++i) fake_.Emit(Kernel("_Z1kv", i, 20'000'000 + i));
  controller_.Flush(true);
  const TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.kernels.size(), 3u);
  const OverheadEvent* flush = nullptr;
  const OverheadEvent* buffer = nullptr;
  for (const OverheadEvent& o : model.overheads) {
    if (o.kind == kFlushOverheadKind) flush = &o;
    if (o.kind == kBufferOverheadKind) buffer = &o;
  }
  ASSERT_NE(flush, nullptr);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(buffer->duration_ns, 3'000u);  // three records read
  EXPECT_EQ(flush->duration_ns, 3'500u);   // and the flush's own 500 ns
  EXPECT_GE(buffer->start_ns, flush->start_ns);
  EXPECT_LE(buffer->end_ns(), flush->end_ns());
}

// Buffers translated after the window closed, or at shutdown, leave no overhead record: the
// trace's span stays the window's.
TEST_F(ActivityControllerTest, NoOverheadRecordsOutsideTheWindow) {
  TraceWithAClock();
  fake_.Emit(Kernel("_Z1kv", 1, 20'000'000));
  std::string error;
  ASSERT_TRUE(controller_.SetEnabled(false, &error)) << error;
  controller_.Flush(true);
  OpenWindow();
  fake_.Emit(Kernel("_Z1kv", 2, 30'000'000));
  controller_.Shutdown();
  const TraceModel model = CloseAndLoad();
  EXPECT_EQ(model.kernels.size(), 2u);
  EXPECT_TRUE(model.overheads.empty());
}

TEST_F(ActivityControllerTest, DroppedRecordsGoIntoTheTraceCounters) {
  Init(Options());
  fake_.dropped = 5;
  controller_.Flush(false);
  EXPECT_EQ(writer_->Counter(stats::kCuptiDroppedRecords.name), 5u);
  controller_.Flush(false);  // CUPTI reset its count when it was read
  EXPECT_EQ(writer_->Counter(stats::kCuptiDroppedRecords.name), 5u);
  fake_.dropped = 3;
  fake_.fail["dropped"] = 1;  // the count cannot be read: nothing added
  controller_.Flush(true);
  EXPECT_EQ(writer_->Counter(stats::kCuptiDroppedRecords.name), 5u);
  fake_.fail.clear();
  controller_.Flush(false);
  EXPECT_EQ(writer_->Counter(stats::kCuptiDroppedRecords.name), 8u);
  EXPECT_THAT(fake_.calls, ElementsAre("system_thread_ids", "register_callbacks", "enable 9",
                                       "enable 8", "flush", "dropped", "flush", "dropped",
                                       "flush forced", "dropped", "flush", "dropped"));
  fake_.dropped = 2;  // collected by Shutdown
  controller_.Shutdown();

  TraceModel model = CloseAndLoad();
  const StatCounter* dropped = FindStat(model, stats::kCuptiDroppedRecords.name);
  ASSERT_NE(dropped, nullptr);
  EXPECT_EQ(dropped->value, 10u);
  EXPECT_EQ(dropped->severity, v1::SEVERITY_DATA_LOSS);
  const StatCounter* total = FindStat(model, stats::kCuptiDroppedRecordsTotal.name);
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(total->value, 10u);
  EXPECT_EQ(total->severity, v1::SEVERITY_DATA_LOSS);
  EXPECT_EQ(model.WorstSeverity(), v1::SEVERITY_DATA_LOSS);
}

TEST_F(ActivityControllerTest, ShutdownClosesTheWindowFlushesAndPublishes) {
  Init(Options());
  OpenWindow();
  fake_.Emit(Kernel("_Z1kv", 1, 1000));  // in the buffer being filled
  fake_.calls.clear();
  controller_.Shutdown();
  EXPECT_THAT(fake_.calls,
              ElementsAre("disable 10", "disable 48", "disable 1", "disable 22", "disable 2",
                          "disable 49", "disable 50", "disable 5", "disable 12", "disable 13",
                          "disable 38", "disable 9", "disable 8", "flush forced", "dropped"));
  EXPECT_EQ(writer_->Counter(stats::kActivityRecords.name), 1u);  // published by Shutdown
  fake_.calls.clear();
  controller_.Flush(false);
  EXPECT_THAT(fake_.calls, IsEmpty());
  EXPECT_EQ(CloseAndLoad().kernels.size(), 1u);
}

TEST_F(ActivityControllerTest, ShutdownAfterTheWindowClosedLeavesWindowKindsAlone) {
  Init(Options());
  OpenWindow();
  std::string error;
  ASSERT_TRUE(controller_.SetEnabled(false, &error));
  fake_.calls.clear();
  controller_.Shutdown();
  EXPECT_THAT(fake_.calls, ElementsAre("disable 9", "disable 8", "flush forced", "dropped"));
}

TEST_F(ActivityControllerTest, BuffersCompletedAfterShutdownAreIgnored) {
  Init(Options());
  OpenWindow();
  fake_.hold_buffers = true;  // CUPTI keeps the buffer through the forced flush
  fake_.Emit(Kernel("_Z1kv", 1, 1000));
  fake_.Emit(Kernel("_Z1kv", 2, 2000));
  uint8_t* held = fake_.filling_buffer();
  controller_.Shutdown();
  fake_.DeliverAll();
  EXPECT_EQ(fake_.records_delivered, 2u);
  EXPECT_EQ(Published(stats::kActivityRecords.name), 0u);
  EXPECT_EQ(writer_->Counter(stats::kActivityBuffers.name), 0u);
  // The buffer went back to the pool all the same.
  uint8_t* buffer = nullptr;
  size_t size = 0, max_records = 0;
  controller_.BufferRequested(&buffer, &size, &max_records);
  EXPECT_EQ(buffer, held);
  controller_.BufferCompleted(buffer, size, 0);
  EXPECT_TRUE(CloseAndLoad().kernels.empty());
}

TEST_F(ActivityControllerTest, AbandonAfterForkTouchesNothing) {
  Init(Options());
  OpenWindow();
  fake_.hold_buffers = true;
  fake_.Emit(Kernel("_Z1kv", 1, 1000));
  fake_.calls.clear();
  controller_.AbandonAfterFork();
  fake_.DeliverAll();  // a buffer completed in the child
  std::string error;
  EXPECT_FALSE(controller_.SetEnabled(false, &error));
  EXPECT_EQ(error, "");
  controller_.Flush(true);
  controller_.Shutdown();
  EXPECT_THAT(fake_.calls, IsEmpty());
  EXPECT_EQ(Published(stats::kActivityRecords.name), 0u);
  EXPECT_TRUE(CloseAndLoad().kernels.empty());
}

TEST_F(ActivityControllerTest, BuffersArePooled) {
  Init(Options());
  // Takes six buffers as CUPTI would, then hands them all back empty.
  auto take_six_and_return_them = [&] {
    std::vector<uint8_t*> taken;
    for (int i = 0; i < 6; ++i) {
      uint8_t* buffer = nullptr;
      size_t size = 0, max_records = 1;
      controller_.BufferRequested(&buffer, &size, &max_records);
      ASSERT_NE(buffer, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 8, 0u);
      EXPECT_EQ(size, kBufferBytes);
      EXPECT_EQ(max_records, 0u);
      taken.push_back(buffer);
    }
    for (uint8_t* buffer : taken) controller_.BufferCompleted(buffer, kBufferBytes, 0);
  };
  take_six_and_return_them();
  EXPECT_EQ(Published(stats::kActivityBuffersAllocated.name), 6u);
  controller_.BufferCompleted(nullptr, 0, 0);
  // Four come back from the pool, two are new: the other two of the first six were unmapped.
  take_six_and_return_them();
  EXPECT_EQ(Published(stats::kActivityBuffersAllocated.name), 8u);
  EXPECT_EQ(writer_->Counter(stats::kActivityBuffers.name), 0u);  // empty buffers are not counted
}

// The session's thread keeps two buffers in the pool, faulted in: at start and after each
// flush. CUPTI's requests take those, so a program thread never faults in a fresh buffer.
TEST_F(ActivityControllerTest, SpareBuffersAreReadyAtStartAndAfterEachFlush) {
  Init(Options());
  EXPECT_EQ(Published(stats::kActivityBuffersAllocated.name), 2u);
  std::vector<uint8_t*> taken;
  auto take = [&](int n) {
    for (int i = 0; i < n; ++i) {
      uint8_t* buffer = nullptr;
      size_t size = 0, max_records = 0;
      controller_.BufferRequested(&buffer, &size, &max_records);
      ASSERT_NE(buffer, nullptr);
      taken.push_back(buffer);
    }
  };
  take(3);  // the two spares, then one mapped on the spot
  EXPECT_EQ(Published(stats::kActivityBuffersAllocated.name), 3u);
  controller_.Flush(false);  // the pool is empty: two more, faulted in
  EXPECT_EQ(Published(stats::kActivityBuffersAllocated.name), 5u);
  take(2);  // from the pool
  EXPECT_EQ(Published(stats::kActivityBuffersAllocated.name), 5u);
  controller_.Flush(false);
  EXPECT_EQ(Published(stats::kActivityBuffersAllocated.name), 7u);
  for (uint8_t* buffer : taken) controller_.BufferCompleted(buffer, kBufferBytes, 0);
  controller_.Flush(false);  // the pool is full: nothing new
  EXPECT_EQ(Published(stats::kActivityBuffersAllocated.name), 7u);
}

TEST_F(ActivityControllerTest, ATranslationErrorLosesOneBuffer) {
  Init(Options());
  OpenWindow();
  fake_.Emit(Kernel("_Z1kv", 1, 1000));
  fake_.throw_in_next_record = true;
  controller_.Flush(true);
  EXPECT_EQ(writer_->Counter(stats::kActivityBuffersLost.name), 1u);
  fake_.throw_in_next_record = false;
  fake_.Emit(Kernel("_Z1kv", 2, 2000));
  controller_.Flush(true);
  EXPECT_EQ(Published(stats::kActivityRecords.name), 1u);
  // Only the two spares: the lost buffer came back to the pool and was taken again.
  EXPECT_EQ(writer_->Counter(stats::kActivityBuffersAllocated.name), 2u);
  TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.kernels.size(), 1u);
  EXPECT_EQ(model.kernels[0].correlation_id, 2u);
  const StatCounter* lost = FindStat(model, stats::kActivityBuffersLost.name);
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->severity, v1::SEVERITY_DATA_LOSS);
}

TEST_F(ActivityControllerTest, DeviceRecordsCarryTheDriversSharedMemoryLimits) {
  Init(Options());
  fake_.shared_memory_limits[0] = {232448, 1024};
  controller_.QueryDeviceSharedMemoryLimits(0);
  fake_.shared_memory_limits[1] = {101376, 1024};
  fake_.driver_loaded = false;  // device 1's cannot be read
  controller_.QueryDeviceSharedMemoryLimits(1);
  fake_.Emit(Device(0));
  fake_.Emit(Device(1));
  controller_.Flush(true);
  TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.devices.size(), 2u);
  EXPECT_EQ(model.devices[0].max_shared_memory_per_block_optin, 232448u);
  EXPECT_EQ(model.devices[0].reserved_shared_memory_per_block, 1024u);
  EXPECT_EQ(model.devices[0].max_shared_memory_per_block, 49152u);
  EXPECT_EQ(model.devices[1].max_shared_memory_per_block_optin, 0u);
  EXPECT_EQ(model.devices[1].reserved_shared_memory_per_block, 0u);
}

TEST_F(ActivityControllerTest, TranslatorOptionsApply) {
  ActivityOptions o = Options();
  o.filter_trivial_api = false;
  o.suppress_nvtx_name = "capture";
  Init(o);
  OpenWindow();
  fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 1, 1000));
  fake_.Emit(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 2000, "capture"));
  fake_.Emit(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 3000, "step"));
  fake_.Emit(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 4000, nullptr));
  fake_.Emit(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 5000, nullptr));
  controller_.Flush(true);
  TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.api_calls.size(), 1u);
  EXPECT_EQ(model.api_calls[0].name, "cudaGetDevice");
  ASSERT_EQ(model.nvtx_ranges.size(), 1u);
  EXPECT_EQ(model.nvtx_ranges[0].name, "step");
}

}  // namespace
}  // namespace warpscope::testing
