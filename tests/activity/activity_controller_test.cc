// The activity controller without a GPU: a fake ActivityApi fills the controller's buffers
// with synthetic CUDA 13.0 activity records; the controller writes them through a real
// TraceWriter, and the tests read the file back with the TraceModel.
#include "collectors/activity/activity_controller.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <cupti_runtime_cbid.h>

#include "analyzers/model/trace_model.h"
#include "collectors/activity/activity_translator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_writer.h"
#include "tests/activity/fake_activity_api.h"
#include "tests/collectors/written_trace_test.h"
#include "tests/reader/trace_test_util.h"

namespace warpscope {
namespace {

using testing::Context;
using testing::Device;
using ::testing::ElementsAre;
using testing::FakeActivityApi;
using ::testing::IsEmpty;
using testing::Kernel;
using testing::kTimeBase;
using testing::Marker;
using testing::Memcpy;
using testing::RuntimeApi;

constexpr size_t kBufferBytes = 4096;  // a few dozen records: traces span several buffers

TraceKinds EveryKind(bool on) {
  return TraceKinds{.kernel = on,
                    .memory = on,
                    .runtime = on,
                    .driver = on,
                    .nvtx = on,
                    .sync = on,
                    .overhead = on,
                    .graph = on};
}

const StatCounter* FindStat(const TraceModel& model, std::string_view name) {
  for (const StatCounter& c : model.stats) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

class ActivityControllerTest : public testing::WrittenTraceTest {
 protected:
  void SetUp() override {
    HeaderRecord header;
    header.clock_domain = ClockDomain::kMonotonic;
    header.time_base_ns = kTimeBase;
    TraceWriterOptions options;
    options.stats_interval_ms = 0;  // only the final Stats packet
    ASSERT_NO_FATAL_FAILURE(OpenWriter("activity_controller_test", header, options));
  }

  static ActivityOptions Options() {
    ActivityOptions o;
    o.buffer_bytes = kBufferBytes;
    return o;
  }
  void Init(const ActivityOptions& options) {
    std::string error;
    ASSERT_TRUE(controller_.Init(options, writer_.get(), &error)) << error;
  }
  void OpenWindow() {
    std::string error;
    ASSERT_TRUE(controller_.SetEnabled(true, &error)) << error;
  }
  // The calls opening the first capture window makes.
  std::vector<std::string> InitThenOpenWindow(const ActivityOptions& options) {
    Init(options);
    fake_.calls.clear();
    OpenWindow();
    return fake_.calls;
  }
  // An open window, with a clock at 10 ms into the trace on which reading a record takes
  // 1 us and a flush 500 ns more.
  void TraceWithAClock() {
    Init(Options());
    OpenWindow();
    fake_.now_ns = kTimeBase + 10'000'000;
    fake_.record_ns = 1'000;
    fake_.flush_ns = 500;
  }
  // The activity counters as they would go into the next Stats packet.
  uint64_t Published(std::string_view name) {
    controller_.PublishCounters();
    return writer_->Counter(name);
  }
  TraceModel CloseAndLoad() { return WrittenTraceTest::CloseAndLoad(kTimeBase + 1'000'000'000); }

  FakeActivityApi fake_;
  ActivityController controller_{fake_};
};

TEST_F(ActivityControllerTest, InitMakesItsCallsInOrder) {
  ActivityOptions o = Options();
  o.monotonic_clock = true;
  o.device_buffer_bytes = 32 << 20;
  o.device_buffer_pool = 500;
  o.kernels_always_on = true;
  Init(o);
  EXPECT_THAT(fake_.calls, ElementsAre("timestamp_callback", "device_buffer_size 33554432",
                                       "device_buffer_pool 500", "system_thread_ids",
                                       "register_callbacks", "enable 9", "enable 8", "enable 10"));
}

TEST_F(ActivityControllerTest, InitWithDefaultsLeavesCuptiSettingsAlone) {
  Init(Options());
  EXPECT_THAT(fake_.calls,
              ElementsAre("system_thread_ids", "register_callbacks", "enable 9", "enable 8"));
}

TEST_F(ActivityControllerTest, TimestampCallbackFailureStopsInitWithOneLine) {
  fake_.fail["timestamp_callback"] = 17;
  ActivityOptions o = Options();
  o.monotonic_clock = true;
  std::string error;
  EXPECT_FALSE(controller_.Init(o, writer_.get(), &error));
  EXPECT_EQ(error,
            "warpscope: cuptiActivityRegisterTimestampCallback failed: CUPTI_ERROR_FAKE (17)");
  EXPECT_THAT(fake_.calls, ElementsAre("timestamp_callback"));
}

TEST_F(ActivityControllerTest, RegisterCallbacksFailureStopsInitAndFlushes) {
  fake_.fail["register_callbacks"] = 1;
  std::string error;
  EXPECT_FALSE(controller_.Init(Options(), writer_.get(), &error));
  EXPECT_EQ(error, "warpscope: cuptiActivityRegisterCallbacks failed: CUPTI_ERROR_FAKE (1)");
  EXPECT_THAT(fake_.calls, ElementsAre("system_thread_ids", "register_callbacks"));
  controller_.Flush(true);  // nothing registered: no flush
  EXPECT_THAT(fake_.CallsStartingWith("flush"), IsEmpty());
  // A buffer CUPTI might still hand back is not translated.
  uint8_t* buffer = nullptr;
  size_t size = 0, max_records = 0;
  controller_.BufferRequested(&buffer, &size, &max_records);
  ASSERT_NE(buffer, nullptr);
  const CUpti_ActivityContext3 context = Context(1, 0);
  const uint64_t padded = (sizeof context + 7) / 8 * 8;
  std::memcpy(buffer, &padded, 8);
  std::memcpy(buffer + 8, &context, sizeof context);
  controller_.BufferCompleted(buffer, size, 8 + padded);
  EXPECT_EQ(Published(stats::kActivityRecords.name), 0u);
  EXPECT_TRUE(CloseAndLoad().contexts.empty());
}

TEST_F(ActivityControllerTest, DeviceBufferSettingFailuresDoNotStopTracing) {
  fake_.fail["device_buffer_size 16777216"] = 1;
  fake_.fail["device_buffer_pool 8"] = 1;  // silently ignored, as before
  ActivityOptions o = Options();
  o.device_buffer_bytes = 16 << 20;
  o.device_buffer_pool = 8;
  ::testing::internal::CaptureStderr();
  std::string error;
  EXPECT_TRUE(controller_.Init(o, writer_.get(), &error));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "warpscope: cannot set the CUPTI device buffer size: CUPTI_ERROR_FAKE (1)\n");
  EXPECT_EQ(error, "");
  EXPECT_THAT(fake_.calls,
              ElementsAre("device_buffer_size 16777216", "device_buffer_pool 8",
                          "system_thread_ids", "register_callbacks", "enable 9", "enable 8"));
}

TEST_F(ActivityControllerTest, WindowEdgesTurnTheDefaultKindsOnAndOffInOrder) {
  EXPECT_THAT(InitThenOpenWindow(Options()),
              ElementsAre("enable 10", "enable 1", "enable 22", "enable 2", "enable 5", "enable 12",
                          "enable 13", "enable 38"));
  fake_.calls.clear();
  std::string error;
  EXPECT_TRUE(controller_.SetEnabled(false, &error));
  EXPECT_EQ(error, "");
  EXPECT_THAT(fake_.calls, ElementsAre("disable 10", "disable 1", "disable 22", "disable 2",
                                       "disable 5", "disable 12", "disable 13", "disable 38"));
}

TEST_F(ActivityControllerTest, WindowEdgesFollowTheConfiguredKinds) {
  ActivityOptions o = Options();
  o.kinds = EveryKind(true);
  EXPECT_THAT(InitThenOpenWindow(o),
              ElementsAre("enable 10", "enable 1", "enable 22", "enable 2", "enable 5", "enable 4",
                          "enable 12", "enable 13", "enable 38", "enable 17", "enable 51"));
}

TEST_F(ActivityControllerTest, WindowEdgesWithNoKindsCallNothing) {
  ActivityOptions o = Options();
  o.kinds = EveryKind(false);
  EXPECT_THAT(InitThenOpenWindow(o), IsEmpty());
  std::string error;
  EXPECT_TRUE(controller_.SetEnabled(false, &error));
  EXPECT_THAT(fake_.calls, IsEmpty());
}

TEST_F(ActivityControllerTest, KernelsAlwaysOnRecordsKernelsOutsideWindows) {
  ActivityOptions o = Options();
  o.kernels_always_on = true;
  Init(o);
  fake_.calls.clear();
  // Before any window: kernel records are on, copies are not.
  fake_.Emit(Kernel("_Z6beforev", 1, 1000));
  fake_.Emit(Memcpy(2, 2000));
  OpenWindow();
  EXPECT_THAT(fake_.calls, ElementsAre("enable 1", "enable 22", "enable 2", "enable 5", "enable 12",
                                       "enable 13", "enable 38"));
  fake_.Emit(Memcpy(3, 3000));
  controller_.Shutdown();
  TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.kernels.size(), 1u);
  EXPECT_EQ(model.kernels[0].name, "before()");
  ASSERT_EQ(model.memcpys.size(), 1u);
  EXPECT_EQ(model.memcpys[0].correlation_id, 3u);
}

TEST_F(ActivityControllerTest, KernelsAlwaysOnFallsBackToWindowsWhenRefused) {
  fake_.fail["enable 10"] = 22;  // CUPTI_ERROR_NOT_COMPATIBLE next to PC sampling
  ActivityOptions o = Options();
  o.kernels_always_on = true;
  Init(o);
  EXPECT_THAT(fake_.calls, ElementsAre("system_thread_ids", "register_callbacks", "enable 9",
                                       "enable 8", "enable 10"));
  fake_.fail.clear();
  fake_.calls.clear();
  OpenWindow();
  ASSERT_FALSE(fake_.calls.empty());
  EXPECT_EQ(fake_.calls[0], "enable 10");
}

TEST_F(ActivityControllerTest, KernelsAlwaysOnNeedsKernelRecords) {
  ActivityOptions o = Options();
  o.kinds.kernel = false;
  o.kernels_always_on = true;
  Init(o);
  EXPECT_THAT(fake_.CallsStartingWith("enable 10"), IsEmpty());
  OpenWindow();
  EXPECT_THAT(fake_.CallsStartingWith("enable 10"), IsEmpty());
}

TEST_F(ActivityControllerTest, EnableFailureGivesTheFirstErrorAndTriesEveryKind) {
  Init(Options());
  fake_.fail["enable 22"] = 22;
  fake_.fail["enable 5"] = 3;
  fake_.calls.clear();
  std::string error;
  EXPECT_FALSE(controller_.SetEnabled(true, &error));
  EXPECT_EQ(error, "warpscope: cannot enable CUPTI activity kind 22: CUPTI_ERROR_FAKE (22)");
  EXPECT_EQ(fake_.calls.size(), 8u);
  fake_.fail["disable 38"] = 3;
  error.clear();
  EXPECT_FALSE(controller_.SetEnabled(false, &error));
  EXPECT_EQ(error, "warpscope: cannot disable CUPTI activity kind 38: CUPTI_ERROR_FAKE (3)");
}

TEST_F(ActivityControllerTest, TrivialRuntimeApisAreLeftOutAfterEachRuntimeEnable) {
  Init(Options());
  const size_t trivial = TrivialRuntimeApis().size();
  ASSERT_GT(trivial, 20u);
  for (int window = 0; window < 2; ++window) {
    fake_.runtime_api_calls.clear();
    OpenWindow();
    // Every trivial id, each while kRuntime was on (enabling it again resets CUPTI's choice).
    ASSERT_EQ(fake_.runtime_api_calls.size(), trivial);
    EXPECT_EQ(fake_.runtime_api_calls[0],
              "skip " + std::to_string(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
    for (const std::string& call : fake_.runtime_api_calls) {
      EXPECT_EQ(call.find("runtime off"), std::string::npos) << call;
    }
    fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 10 + window, 1000));
    fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 20 + window, 2000));
    std::string error;
    ASSERT_TRUE(controller_.SetEnabled(false, &error)) << error;
  }
  controller_.Flush(true);
  EXPECT_EQ(fake_.records_not_enabled, 2u);  // the two cudaGetDevice calls
  EXPECT_EQ(Published(stats::kActivityApiCallsFiltered.name), 0u);
  TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.api_calls.size(), 2u);
  EXPECT_EQ(model.api_calls[0].name, "cudaLaunchKernel");
}

TEST_F(ActivityControllerTest, TrivialRuntimeApisAreRecordedWithTheFilterOff) {
  ActivityOptions o = Options();
  o.filter_trivial_api = false;
  Init(o);
  OpenWindow();
  EXPECT_THAT(fake_.runtime_api_calls, IsEmpty());
  o = Options();
  o.kinds.runtime = false;  // no runtime records: nothing to leave out
  ActivityController other(fake_);
  std::string error;
  ASSERT_TRUE(other.Init(o, writer_.get(), &error)) << error;
  ASSERT_TRUE(other.SetEnabled(true, &error)) << error;
  EXPECT_THAT(fake_.runtime_api_calls, IsEmpty());
}

TEST_F(ActivityControllerTest, ACuptiWithoutRuntimeApiSelectionKeepsTheTranslatorFilter) {
  fake_.fail["runtime_api"] = 1;
  Init(Options());
  OpenWindow();
  EXPECT_EQ(fake_.runtime_api_calls.size(), 1u);  // the first refusal ends the attempt
  fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 1, 1000));
  std::string error;
  ASSERT_TRUE(controller_.SetEnabled(false, &error)) << error;
  ASSERT_TRUE(controller_.SetEnabled(true, &error)) << error;
  EXPECT_EQ(fake_.runtime_api_calls.size(), 1u);  // not tried again
  controller_.Flush(true);
  EXPECT_EQ(Published(stats::kActivityApiCallsFiltered.name), 1u);
  EXPECT_TRUE(CloseAndLoad().api_calls.empty());
}

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
  EXPECT_THAT(fake_.calls, ElementsAre("disable 10", "disable 1", "disable 22", "disable 2",
                                       "disable 5", "disable 12", "disable 13", "disable 38",
                                       "disable 9", "disable 8", "flush forced", "dropped"));
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
  EXPECT_EQ(writer_->Counter(stats::kActivityBuffersAllocated.name), 1u);  // the lost one came back
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
}  // namespace warpscope
