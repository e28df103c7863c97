// The activity controller without a GPU (the fixture: activity_controller_fixture.h): its
// calls into CUPTI at start-up, at capture window edges and for the runtime API filter.
#include "collectors/activity/activity_controller.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <cupti_runtime_cbid.h>

#include "analyzers/model/trace_model.h"
#include "collectors/activity/activity_translator.h"
#include "collectors/memory/live_blocks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/writer/stats_table.h"
#include "tests/activity/activity_controller_fixture.h"

namespace warpscope::testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;

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
  EXPECT_THAT(
      InitThenOpenWindow(Options()),
      ElementsAre("enable 10", "enable 48", "enable 1", "enable 22", "enable 2", "enable 49",
                  "enable 50", "enable 5", "enable 12", "enable 13", "enable 38"));
  fake_.calls.clear();
  std::string error;
  EXPECT_TRUE(controller_.SetEnabled(false, &error));
  EXPECT_EQ(error, "");
  EXPECT_THAT(fake_.calls, ElementsAre("disable 10", "disable 48", "disable 1", "disable 22",
                                       "disable 2", "disable 49", "disable 50", "disable 5",
                                       "disable 12", "disable 13", "disable 38"));
}

TEST_F(ActivityControllerTest, WindowEdgesFollowTheConfiguredKinds) {
  ActivityOptions o = Options();
  o.kinds = EveryKind(true);
  EXPECT_THAT(InitThenOpenWindow(o),
              ElementsAre("enable 10", "enable 48", "enable 1", "enable 22", "enable 2",
                          "enable 49", "enable 50", "enable 5", "enable 4", "enable 12",
                          "enable 13", "enable 38", "enable 17", "enable 51"));
}

// Trace kind `alloc`: CUPTI is asked for the allocating library, MEMORY2 records reach the
// trace, and with live_blocks (the flight recorder) the live-block table too.
TEST_F(ActivityControllerTest, AllocationRecordsReachTheTraceAndTheLiveTable) {
  ProcessLiveBlocks().Clear();
  ActivityOptions o = Options();
  o.live_blocks = true;
  Init(o);
  EXPECT_TRUE(fake_.allocation_source);
  OpenWindow();
  auto m = ZeroedActivity<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.address = 0x7f0000000000;
  m.bytes = 4096;
  m.timestamp = kTimeBase + 10;
  m.correlationId = 5;
  fake_.Emit(m);
  controller_.Flush(true);
  EXPECT_EQ(writer_->Counter("writer.events_written.memory"), 1u);
  EXPECT_EQ(ProcessLiveBlocks().counts().blocks, 1u);
  EXPECT_EQ(ProcessLiveBlocks().counts().bytes, 4096u);
  ProcessLiveBlocks().Clear();
}

TEST_F(ActivityControllerTest, WithoutAllocNoAllocationRecords) {
  ActivityOptions o = Options();
  o.kinds.alloc = false;
  EXPECT_THAT(InitThenOpenWindow(o), Not(Contains("enable 49")));
  EXPECT_FALSE(fake_.allocation_source);
}

TEST_F(ActivityControllerTest, ACuptiWithoutInternalLaunchRecordsStillTraces) {
  fake_.fail["enable 48"] = 1;  // INTERNAL_LAUNCH_API refused: the other kinds go on
  Init(Options());
  std::string error;
  EXPECT_TRUE(controller_.SetEnabled(true, &error));
  EXPECT_EQ(error, "");
  EXPECT_THAT(fake_.calls, Contains("enable 5"));
}

TEST_F(ActivityControllerTest, AttachEarlyTurnsTheWindowKindsOnAndOffInInit) {
  ActivityOptions o = Options();
  o.attach_early = true;
  fake_.flush_ns = 0;
  Init(o);
  // After the always-on kinds: every window kind on, then off again, before any window.
  const std::vector<std::string> calls = fake_.calls;
  const auto first = std::find(calls.begin(), calls.end(), "enable 10");
  ASSERT_NE(first, calls.end());
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "enable 10"), 1);
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "disable 10"), 1);
  EXPECT_EQ(calls.back(), "disable 38");
  // The kinds are off again until a window opens: a kernel now is not recorded.
  fake_.Emit(Kernel("_Z6beforev", 1, 1000));
  EXPECT_EQ(fake_.records_not_enabled, 1u);
  EXPECT_TRUE(CloseAndLoad().kernels.empty());
}

TEST_F(ActivityControllerTest, EnableTimesOfEachKind) {
  Init(Options());
  OpenWindow();
  const std::vector<KindEnableTime> times = controller_.last_enable_times();
  ASSERT_EQ(times.size(), 11u);
  EXPECT_EQ(times[0].kind, ActivityKind::kConcurrentKernel);
  EXPECT_EQ(times[1].kind, ActivityKind::kInternalLaunchApi);
}

TEST_F(ActivityControllerTest, RuntimeLaunchCallsLeftToTheLaunchLog) {
  Init(Options());
  controller_.SetLaunchCallsElsewhere(true);
  OpenWindow();
  // CUPTI is told to leave the launch calls out, while kRuntime is on.
  for (uint32_t cbid : RuntimeLaunchApis()) {
    EXPECT_THAT(fake_.runtime_api_calls, Contains("skip " + std::to_string(cbid)));
  }
  EXPECT_GE(RuntimeLaunchApis().size(), 13u);
  fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 1000));  // left out
  fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 2, 2000));   // kept
  controller_.Flush(true);
  EXPECT_EQ(fake_.records_not_enabled, 1u);
  TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.api_calls.size(), 1u);
  EXPECT_EQ(model.api_calls[0].correlation_id, 2u);  // the copy
}

// Trace kind `runtime` from the launch log: no RUNTIME activity is enabled, a window opened
// before the hand-over is still closed whole, and a runtime record is not made.
TEST_F(ActivityControllerTest, RuntimeCallsLeftToTheLaunchLog) {
  Init(Options());
  OpenWindow();
  EXPECT_THAT(fake_.calls, Contains("enable 5"));  // RUNTIME, before the hand-over
  std::string error;
  EXPECT_TRUE(controller_.SetEnabled(false, &error));
  EXPECT_THAT(fake_.calls, Contains("disable 5"));
  controller_.SetRuntimeCallsElsewhere(true);
  fake_.calls.clear();
  EXPECT_TRUE(controller_.SetEnabled(true, &error));
  EXPECT_THAT(fake_.calls, Not(Contains("enable 5")));
  EXPECT_THAT(fake_.calls, Contains("enable 10"));  // the kernels still
  fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 2, 2000));
  controller_.Flush(true);
  EXPECT_EQ(fake_.records_not_enabled, 1u);
  EXPECT_TRUE(CloseAndLoad().api_calls.empty());
}

// Trace kind `sync` from the launch log: no SYNCHRONIZATION activity is enabled from the next
// window on, and a window opened before the hand-over is still closed whole.
TEST_F(ActivityControllerTest, SyncRecordsLeftToTheLaunchLog) {
  Init(Options());
  OpenWindow();
  EXPECT_THAT(fake_.calls, Contains("enable 38"));  // SYNCHRONIZATION, before the hand-over
  controller_.SetSyncCallsElsewhere(true);
  std::string error;
  EXPECT_TRUE(controller_.SetEnabled(false, &error));
  EXPECT_THAT(fake_.calls, Contains("disable 38"));
  fake_.calls.clear();
  EXPECT_TRUE(controller_.SetEnabled(true, &error));
  EXPECT_THAT(fake_.calls, Not(Contains("enable 38")));
  EXPECT_THAT(fake_.calls, Contains("enable 10"));  // the kernels still
  EXPECT_TRUE(controller_.SetEnabled(false, &error));
  EXPECT_THAT(fake_.calls, Contains("disable 38"));  // closing covers every kind
}

TEST_F(ActivityControllerTest, LaunchRecordsCuptiMakesAnywayAreNotWrittenTwice) {
  fake_.fail["runtime_api"] = 1;  // CUPTI records every runtime call whatever it is told
  Init(Options());
  controller_.SetLaunchCallsElsewhere(true);
  OpenWindow();
  fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, 1, 1000));
  fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, 2, 1500));
  fake_.Emit(RuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 3, 2000));
  controller_.Flush(true);
  EXPECT_EQ(Published(stats::kActivityLaunchCallsLeftOut.name), 2u);
  TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.api_calls.size(), 1u);
  EXPECT_EQ(model.api_calls[0].correlation_id, 3u);  // the copy
}

TEST_F(ActivityControllerTest, InternalLaunchesAreDriverCallsOfTheirKernel) {
  Init(Options());
  OpenWindow();
  CUpti_ActivityAPI internal = RuntimeApi(0, 77, 3000);
  internal.kind = CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API;
  fake_.Emit(internal);
  controller_.Flush(true);
  EXPECT_EQ(Published(stats::kActivityInternalLaunches.name), 1u);
  TraceModel model = CloseAndLoad();
  ASSERT_EQ(model.api_calls.size(), 1u);
  EXPECT_EQ(model.api_calls[0].name, kInternalLaunchName);
  EXPECT_EQ(model.api_calls[0].correlation_id, 77u);
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
  EXPECT_THAT(fake_.calls,
              ElementsAre("enable 48", "enable 1", "enable 22", "enable 2", "enable 49",
                          "enable 50", "enable 5", "enable 12", "enable 13", "enable 38"));
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
  EXPECT_EQ(fake_.calls.size(), 11u);
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

}  // namespace
}  // namespace warpscope::testing
