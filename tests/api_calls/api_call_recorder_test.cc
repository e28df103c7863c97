// The API call recorder with synthetic callbacks: every launch path (runtime and driver, plain,
// extended, cooperative, graph, CUDA 13's __cudaLaunchKernel) gives one ApiCallEvent carrying
// the kernel's correlation id, the launching thread and the call's times; syncs and copies
// give stacks only, or with trace kind `runtime` their calls too; windows, -t driver, nesting
// and other threads.
#include "collectors/api_calls/api_call_recorder.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "collectors/stacks/stack_table.h"
#include "tests/activity/fake_record_sink.h"

namespace warpscope {
namespace {

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

class MemoryStackSink final : public StackSink {
 public:
  uint64_t InternString(std::string_view) override { return ++strings; }
  void Write(const StackFrameRecord&) override { ++frames; }
  void Write(const CallStackRecord&) override { ++stacks; }
  uint64_t strings = 0, frames = 0, stacks = 0;
};

// A clock that moves 100 ns at each reading.
uint64_t g_now = 1000;
uint64_t Tick() { return g_now += 100; }

struct Harness {
  explicit Harness(ApiCallRecorderOptions options, bool with_stacks = false)
      : table(&stack_sink, 16, false),
        recorder(options, with_stacks ? &table : nullptr, &Tick,
                 [this](std::string_view name) { return sink.InternString(name); }) {}
  // One whole call: entry, then exit.
  void Call(bool runtime, uint32_t cbid, const char* function, uint32_t correlation,
            uint32_t result = 0) {
    const ApiCallSite site{runtime, cbid, function, correlation};
    recorder.OnEnter(site);
    recorder.OnExit(site, result);
  }
  std::string Name(uint64_t id) { return sink.names[id]; }

  MemoryStackSink stack_sink;
  StackTable table;
  FakeSink sink;
  ApiCallRecorder recorder;
};

ApiCallRecorderOptions LaunchesOnly() {
  ApiCallRecorderOptions o;
  o.stacks.syncs = o.stacks.copies = o.stacks.launches = false;
  return o;
}

TEST(ApiCallRecorder, EveryLaunchPathGetsItsHostSide) {
  Harness h(LaunchesOnly());
  h.recorder.SetRecording(true);
  struct Path {
    bool runtime;
    uint32_t cbid;
    const char* function;
    const char* written;
  };
  const std::vector<Path> paths = {
      {true, 211, "cudaLaunchKernel_v7000", "cudaLaunchKernel"},
      {true, 505, "__cudaLaunchKernel_v13000", "__cudaLaunchKernel"},
      {true, 430, "cudaLaunchKernelExC_v11060", "cudaLaunchKernelExC"},
      {true, 269, "cudaLaunchCooperativeKernel_v9000", "cudaLaunchCooperativeKernel"},
      {true, 311, "cudaGraphLaunch_v10000", "cudaGraphLaunch"},
      {false, 307, "cuLaunchKernel", "cuLaunchKernel"},
      {false, 652, "cuLaunchKernelEx", "cuLaunchKernelEx"},
      {false, 442, "cuLaunchKernel_ptsz", "cuLaunchKernel_ptsz"},
      {false, 514, "cuGraphLaunch", "cuGraphLaunch"},
  };
  uint32_t correlation = 500;
  for (const Path& p : paths) {
    EXPECT_TRUE(h.recorder.Wants(p.runtime, p.cbid, p.function)) << p.function;
    h.Call(p.runtime, p.cbid, p.function, ++correlation, p.runtime ? 0 : 1);
  }
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.apis.size(), paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    const ApiCallRecord& r = h.sink.apis[i];
    EXPECT_EQ(r.correlation_id, 501 + i);
    EXPECT_EQ(h.Name(r.name_id), paths[i].written);
    EXPECT_EQ(r.domain, paths[i].runtime ? ApiDomain::kRuntime : ApiDomain::kDriver);
    EXPECT_EQ(r.callback_id, paths[i].cbid);
    EXPECT_EQ(r.thread_id, Tid() + 1000u);  // FakeSink: the OS thread id + 1000
    EXPECT_LT(r.start_ns, r.end_ns);
    EXPECT_EQ(r.result, paths[i].runtime ? 0u : 1u);
  }
  EXPECT_TRUE(h.sink.stacks.empty());
  EXPECT_EQ(h.recorder.counts().launches_written, paths.size());
}

TEST(ApiCallRecorder, OnlyCallsThatBeginInsideAWindow) {
  Harness h(LaunchesOnly());
  h.Call(true, 211, "cudaLaunchKernel_v7000", 1);  // before the window
  h.recorder.SetRecording(true);
  const ApiCallSite straddling{true, 211, "cudaLaunchKernel_v7000", 2};
  h.recorder.OnEnter(straddling);
  h.recorder.SetRecording(false);
  h.recorder.OnExit(straddling, 0);                // ends after the window closed: kept
  h.Call(true, 211, "cudaLaunchKernel_v7000", 3);  // after it
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.apis.size(), 1u);
  EXPECT_EQ(h.sink.apis[0].correlation_id, 2u);
}

TEST(ApiCallRecorder, HostFunctionsSyncsAndOtherCallsAreNotLaunches) {
  Harness h(LaunchesOnly());
  struct Function {
    bool runtime;
    uint32_t cbid;
    const char* name;
  };
  for (const Function& f : {Function{true, 232, "cudaLaunchHostFunc_v10000"},
                            Function{false, 580, "cuLaunchHostFunc"},
                            Function{true, 131, "cudaStreamSynchronize_v3020"},
                            Function{true, 41, "cudaMemcpyAsync_v3020"},
                            Function{true, 20, "cudaMalloc_v3020"}}) {
    EXPECT_FALSE(h.recorder.Wants(f.runtime, f.cbid, f.name)) << f.name;
  }
  h.recorder.SetRecording(true);
  h.Call(true, 131, "cudaStreamSynchronize_v3020", 9);
  h.recorder.Drain(h.sink);
  EXPECT_TRUE(h.sink.apis.empty());
}

// Trace kind `runtime`: every runtime call but the trivial queries is written from the log,
// as CUPTI's RUNTIME records wrote it; driver calls other than launches are not.
TEST(ApiCallRecorder, RuntimeCallsWrittenButTheTrivialQueries) {
  ApiCallRecorderOptions o = LaunchesOnly();
  o.runtime_calls = true;
  Harness h(o);
  EXPECT_TRUE(h.recorder.Wants(true, 131, "cudaStreamSynchronize_v3020"));
  EXPECT_TRUE(h.recorder.Wants(true, 20, "cudaMalloc_v3020"));
  EXPECT_FALSE(h.recorder.Wants(true, 10, "cudaGetLastError_v3020"));
  EXPECT_FALSE(h.recorder.Wants(false, 0x123, "cuMemcpyDtoH_v2"));
  h.recorder.SetRecording(true);
  h.Call(true, 20, "cudaMalloc_v3020", 1, 2);
  h.Call(true, 10, "cudaGetLastError_v3020", 2);  // enabled by mistake: still not written
  h.Call(true, 211, "cudaLaunchKernel_v7000", 3);
  h.Call(true, 131, "cudaStreamSynchronize_v3020", 4);
  h.Call(false, 0x123, "cuMemcpyDtoH_v2", 5);
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.apis.size(), 3u);
  EXPECT_EQ(h.Name(h.sink.apis[0].name_id), "cudaMalloc");
  EXPECT_EQ(h.sink.apis[0].result, 2u);
  EXPECT_EQ(h.sink.apis[0].callback_id, 20u);
  EXPECT_EQ(h.sink.apis[0].domain, ApiDomain::kRuntime);
  EXPECT_LT(h.sink.apis[0].start_ns, h.sink.apis[0].end_ns);
  EXPECT_EQ(h.sink.apis[1].correlation_id, 3u);
  EXPECT_EQ(h.Name(h.sink.apis[2].name_id), "cudaStreamSynchronize");
  EXPECT_EQ(h.sink.apis[2].correlation_id, 4u);
  EXPECT_EQ(h.recorder.counts().launches_written, 1u);
  EXPECT_EQ(h.recorder.counts().runtime_written, 2u);
}

// `-t kernel,runtime` (no `launch`): runtime launches are written as runtime calls, since no
// RUNTIME activity records them; driver launches are not.
TEST(ApiCallRecorder, RuntimeCallsWithoutTheLaunchKind) {
  ApiCallRecorderOptions o = LaunchesOnly();
  o.launch_calls = false;
  o.runtime_calls = true;
  Harness h(o);
  EXPECT_TRUE(h.recorder.Wants(true, 211, "cudaLaunchKernel_v7000"));
  EXPECT_FALSE(h.recorder.Wants(false, 307, "cuLaunchKernel"));
  h.recorder.SetRecording(true);
  h.Call(true, 211, "cudaLaunchKernel_v7000", 1);
  h.Call(false, 307, "cuLaunchKernel", 2);
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.apis.size(), 1u);
  EXPECT_EQ(h.sink.apis[0].correlation_id, 1u);
}

TEST(ApiCallRecorder, DriverLaunchesLeftToDriverActivity) {
  ApiCallRecorderOptions o = LaunchesOnly();
  o.driver_activity = true;  // -t driver records every driver call itself
  Harness h(o);
  h.recorder.SetRecording(true);
  h.Call(false, 307, "cuLaunchKernel", 1);
  h.Call(true, 211, "cudaLaunchKernel_v7000", 2);
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.apis.size(), 1u);
  EXPECT_EQ(h.sink.apis[0].correlation_id, 2u);
}

// Trace kind `sync` from callbacks: every synchronize call of both APIs is written, with or
// without `runtime`, and nothing else; one that activity records already hold is not.
TEST(ApiCallRecorder, SyncCallsOfBothApisWritten) {
  ApiCallRecorderOptions o = LaunchesOnly();
  o.launch_calls = false;
  o.sync_calls = true;
  Harness h(o);
  EXPECT_TRUE(h.recorder.Wants(true, 131, "cudaStreamSynchronize_v3020"));
  EXPECT_TRUE(h.recorder.Wants(true, 165, "cudaDeviceSynchronize_v3020"));
  EXPECT_TRUE(h.recorder.Wants(false, 126, "cuStreamSynchronize"));
  EXPECT_TRUE(h.recorder.Wants(false, 440, "cuStreamSynchronize_ptsz"));
  EXPECT_TRUE(h.recorder.Wants(false, 17, "cuCtxSynchronize"));
  EXPECT_FALSE(h.recorder.Wants(true, 20, "cudaMalloc_v3020"));
  EXPECT_FALSE(h.recorder.Wants(true, 147, "cudaStreamWaitEvent_v3020"));
  EXPECT_FALSE(h.recorder.Wants(false, 307, "cuLaunchKernel"));
  h.recorder.SetRecording(true);
  h.Call(true, 131, "cudaStreamSynchronize_v3020", 1);
  h.Call(true, 20, "cudaMalloc_v3020", 2);  // enabled for another reason: not written
  h.Call(false, 17, "cuCtxSynchronize", 3);
  h.Call(false, 440, "cuStreamSynchronize_ptsz", 4);
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.apis.size(), 3u);
  EXPECT_EQ(h.Name(h.sink.apis[0].name_id), "cudaStreamSynchronize");
  EXPECT_EQ(h.sink.apis[0].domain, ApiDomain::kRuntime);
  EXPECT_EQ(h.Name(h.sink.apis[1].name_id), "cuCtxSynchronize");
  EXPECT_EQ(h.sink.apis[1].domain, ApiDomain::kDriver);
  EXPECT_EQ(h.sink.apis[1].correlation_id, 3u);
  EXPECT_EQ(h.sink.apis[2].correlation_id, 4u);
  EXPECT_LT(h.sink.apis[2].start_ns, h.sink.apis[2].end_ns);

  o.driver_activity = true;  // -t driver: CUPTI's DRIVER records hold the driver's syncs
  o.runtime_activity = true;  // CUPTI's RUNTIME records, the runtime's
  Harness left(o);
  left.recorder.SetRecording(true);
  left.Call(true, 131, "cudaStreamSynchronize_v3020", 1);
  left.Call(false, 17, "cuCtxSynchronize", 2);
  left.recorder.Drain(left.sink);
  EXPECT_TRUE(left.sink.apis.empty());
}

TEST(ApiCallRecorder, StacksOfSyncsCopiesAndLaunches) {
  ApiCallRecorderOptions o;  // launches and the default stacks: syncs, copies, launches
  o.stacks.launch_every = 1;
  Harness h(o, /*with_stacks=*/true);
  EXPECT_TRUE(h.recorder.Wants(true, 131, "cudaStreamSynchronize_v3020"));
  EXPECT_TRUE(h.recorder.Wants(false, 0x123, "cuMemcpyDtoH_v2"));
  h.recorder.SetRecording(true);
  h.Call(true, 211, "cudaLaunchKernel_v7000", 1);
  h.Call(true, 131, "cudaStreamSynchronize_v3020", 2);
  h.Call(false, 0x123, "cuMemcpyDtoH_v2", 3);
  h.recorder.Drain(h.sink);
  // The launch's host side is written; the sync's and copy's come from activity records.
  ASSERT_EQ(h.sink.apis.size(), 1u);
  EXPECT_EQ(h.sink.apis[0].correlation_id, 1u);
  ASSERT_EQ(h.sink.stacks.size(), 3u);  // native stacks of this test program
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(h.sink.stacks[i].correlation_id, i + 1);
    EXPECT_NE(h.sink.stacks[i].stack_id, 0u);
  }
  EXPECT_EQ(h.Name(h.sink.stacks[1].name_id), "cudaStreamSynchronize");
  EXPECT_EQ(h.sink.stacks[0].timestamp_ns, h.sink.apis[0].start_ns);
  EXPECT_GT(h.stack_sink.stacks, 0u);
}

TEST(ApiCallRecorder, LaunchStacksWithoutLaunchRecords) {
  ApiCallRecorderOptions o;
  o.launch_calls = false;  // -t without `launch`: the stack is still taken
  o.stacks.launch_every = 1;
  Harness h(o, /*with_stacks=*/true);
  h.recorder.SetRecording(true);
  h.Call(true, 211, "cudaLaunchKernel_v7000", 4);
  h.recorder.Drain(h.sink);
  EXPECT_TRUE(h.sink.apis.empty());
  ASSERT_EQ(h.sink.stacks.size(), 1u);
  EXPECT_EQ(h.sink.stacks[0].correlation_id, 4u);
}

TEST(ApiCallRecorder, NestedCallsEachKeepTheirOwnTimes) {
  ApiCallRecorderOptions o = LaunchesOnly();
  Harness h(o);
  h.recorder.SetRecording(true);
  const ApiCallSite outer{true, 311, "cudaGraphLaunch_v10000", 10};
  // The callbacks never send a driver launch inside a runtime launch (the same launch); a
  // recorder handed nested calls still keeps each whole.
  const ApiCallSite inner{false, 307, "cuLaunchKernel", 11};
  h.recorder.OnEnter(outer);
  h.recorder.OnEnter(inner);
  h.recorder.OnExit(inner, 0);
  h.recorder.OnExit(outer, 0);
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.apis.size(), 2u);
  EXPECT_EQ(h.sink.apis[0].correlation_id, 11u);  // logged as each call ends
  EXPECT_EQ(h.sink.apis[1].correlation_id, 10u);
  EXPECT_LT(h.sink.apis[1].start_ns, h.sink.apis[0].start_ns);
  EXPECT_GT(h.sink.apis[1].end_ns, h.sink.apis[0].end_ns);
  // An exit whose entry was never seen (the observer came in between) changes nothing.
  h.recorder.OnExit(outer, 0);
  h.Call(true, 211, "cudaLaunchKernel_v7000", 12);
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.apis.size(), 3u);
  EXPECT_EQ(h.sink.apis[2].correlation_id, 12u);
}

TEST(ApiCallRecorder, EachThreadIsItsOwn) {
  Harness h(LaunchesOnly());
  h.recorder.SetRecording(true);
  uint32_t worker_tid = 0;
  std::thread([&] {
    worker_tid = Tid();
    h.Call(true, 211, "cudaLaunchKernel_v7000", 21);
  }).join();
  h.Call(true, 211, "cudaLaunchKernel_v7000", 22);
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.apis.size(), 2u);
  for (const ApiCallRecord& r : h.sink.apis) {
    EXPECT_EQ(r.thread_id, (r.correlation_id == 21 ? worker_tid : Tid()) + 1000u);
  }
}

TEST(ApiCallRecorder, NothingAfterFork) {
  Harness h(LaunchesOnly());
  h.recorder.SetRecording(true);
  h.recorder.Abandon();
  h.Call(true, 211, "cudaLaunchKernel_v7000", 1);
  h.recorder.Drain(h.sink);
  EXPECT_TRUE(h.sink.apis.empty());
}

}  // namespace
}  // namespace warpscope
