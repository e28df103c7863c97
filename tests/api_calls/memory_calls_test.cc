// The allocation functions' callbacks with synthetic calls: a request refused for want of
// memory gives one ALLOCATE_FAILED (bytes asked, device, correlation id, thread, result) and
// the stack of its call; VMM maps and unmaps give MAP and UNMAP; successful requests give
// nothing (CUPTI's MEMORY2 records stand for them). And the live-block table of the
// out-of-memory dump: allocations, frees, an address used again, a free it never saw.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "collectors/api_calls/api_call_recorder.h"
#include "collectors/memory/live_blocks.h"
#include "collectors/stacks/stack_table.h"
#include "tests/activity/fake_record_sink.h"

namespace warpscope {
namespace {

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

class CountingStackSink final : public StackSink {
 public:
  uint64_t InternString(std::string_view) override { return ++strings; }
  void Write(const StackFrameRecord&) override {}
  void Write(const CallStackRecord&) override {}
  uint64_t strings = 0;
};

uint64_t g_now = 1000;
uint64_t Tick() { return g_now += 100; }
int g_out_of_memory = 0;
void CountOutOfMemory() { ++g_out_of_memory; }

ApiCallRecorderOptions AllocOnly() {
  ApiCallRecorderOptions o;
  o.launch_calls = false;
  o.alloc_calls = true;
  o.stacks.syncs = o.stacks.copies = o.stacks.launches = false;
  o.stacks.allocs = true;
  o.on_out_of_memory = &CountOutOfMemory;
  return o;
}

struct Harness {
  explicit Harness(ApiCallRecorderOptions options)
      : table(&stack_sink, 16, false),
        recorder(options, &table, &Tick,
                 [this](std::string_view name) { return sink.InternString(name); }) {
    recorder.SetRecording(true);
  }
  void Call(bool runtime, uint32_t cbid, const char* function, uint32_t correlation,
            const MemoryCallParams& params, uint32_t result, uint32_t device = 0) {
    ApiCallSite site{runtime, cbid, function, correlation};
    recorder.OnEnter(site);
    site.memory = &params;  // read at exit only
    site.device_id = device;
    recorder.OnExit(site, result);
  }
  CountingStackSink stack_sink;
  StackTable table;
  FakeSink sink;
  ApiCallRecorder recorder;
};

MemoryCallParams Request(uint64_t bytes, MemoryKind kind = MemoryKind::kDevice) {
  return {.operation = MemoryOperation::kAllocate, .kind = kind, .bytes = bytes};
}

TEST(MemoryCalls, AFailedRequestIsWrittenWithItsBytesAndStack) {
  g_out_of_memory = 0;
  Harness h(AllocOnly());
  EXPECT_TRUE(h.recorder.Wants(true, 20, "cudaMalloc_v3020"));
  EXPECT_TRUE(h.recorder.Wants(false, 600, "cuMemMap"));
  h.Call(true, 20, "cudaMalloc_v3020", 41, Request(1ull << 40), kOutOfMemoryResult, 3);
  h.Call(true, 20, "cudaMalloc_v3020", 42, Request(4096), 0);  // succeeded: MEMORY2's
  h.Call(true, 211, "cudaMallocManaged_v6000", 43, Request(8192, MemoryKind::kManaged), 1);
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.memory.size(), 1u);
  const MemoryRecord& r = h.sink.memory[0];
  EXPECT_EQ(r.operation, MemoryOperation::kAllocateFailed);
  EXPECT_EQ(r.memory_kind, MemoryKind::kDevice);
  EXPECT_EQ(r.bytes, 1ull << 40);
  EXPECT_EQ(r.address, 0u);
  EXPECT_EQ(r.device_id, 3u);
  EXPECT_EQ(r.correlation_id, 41u);
  EXPECT_EQ(r.thread_id, Tid() + 1000u);  // FakeSink: the OS thread id + 1000
  EXPECT_EQ(r.result, kOutOfMemoryResult);
  EXPECT_GT(r.timestamp_ns, 0u);
  EXPECT_EQ(g_out_of_memory, 1);
  // Every allocation call has its stack, the failed one included: the join by correlation id.
  ASSERT_EQ(h.sink.stacks.size(), 3u);
  EXPECT_EQ(h.sink.stacks[0].correlation_id, 41u);
  EXPECT_NE(h.sink.stacks[0].stack_id, 0u);
  EXPECT_EQ(h.sink.names[h.sink.stacks[0].name_id], "cudaMalloc");
  EXPECT_EQ(h.recorder.counts().memory.failed, 1u);
}

TEST(MemoryCalls, VmmMapsAndUnmapsAreWrittenWhenTheySucceed) {
  Harness h(AllocOnly());
  const MemoryCallParams map{.operation = MemoryOperation::kMap,
                             .kind = MemoryKind::kDevice,
                             .address = 0x7f0000000000,
                             .bytes = 20 << 20};
  MemoryCallParams unmap = map;
  unmap.operation = MemoryOperation::kUnmap;
  h.Call(false, 600, "cuMemMap", 1, map, 0, 1);
  h.Call(false, 600, "cuMemMap", 2, map, 1);  // refused: nothing was mapped
  h.Call(false, 601, "cuMemUnmap", 3, unmap, 0, 1);
  h.recorder.Drain(h.sink);
  ASSERT_EQ(h.sink.memory.size(), 2u);
  EXPECT_EQ(h.sink.memory[0].operation, MemoryOperation::kMap);
  EXPECT_EQ(h.sink.memory[0].address, 0x7f0000000000u);
  EXPECT_EQ(h.sink.memory[0].bytes, 20u << 20);
  EXPECT_EQ(h.sink.memory[0].device_id, 1u);
  EXPECT_EQ(h.sink.memory[1].operation, MemoryOperation::kUnmap);
  EXPECT_EQ(h.sink.memory[1].correlation_id, 3u);
  EXPECT_EQ(h.recorder.counts().memory.maps, 2u);
}

TEST(MemoryCalls, NothingWithoutTheAllocKindOrOutsideAWindow) {
  ApiCallRecorderOptions o = AllocOnly();
  o.alloc_calls = false;
  o.stacks.allocs = false;
  Harness off(o);
  EXPECT_FALSE(off.recorder.Wants(true, 20, "cudaMalloc_v3020"));
  off.Call(true, 20, "cudaMalloc_v3020", 1, Request(64), kOutOfMemoryResult);
  off.recorder.Drain(off.sink);
  EXPECT_TRUE(off.sink.memory.empty());

  Harness closed(AllocOnly());
  closed.recorder.SetRecording(false);
  closed.Call(true, 20, "cudaMalloc_v3020", 1, Request(64), kOutOfMemoryResult);
  closed.recorder.Drain(closed.sink);
  EXPECT_TRUE(closed.sink.memory.empty());
}

TEST(MemoryCalls, AFullBufferCountsWhatItLoses) {
  g_out_of_memory = 0;
  ApiCallRecorderOptions o = AllocOnly();
  o.stacks.allocs = false;
  Harness h(o);
  for (uint32_t i = 0; i < MemoryCallLog::kCapacity + 3; ++i) {
    h.Call(true, 20, "cudaMalloc_v3020", i + 1, Request(64), kOutOfMemoryResult);
  }
  h.recorder.Drain(h.sink);
  EXPECT_EQ(h.sink.memory.size(), MemoryCallLog::kCapacity);
  EXPECT_EQ(h.recorder.counts().memory.dropped, 3u);
  EXPECT_EQ(g_out_of_memory, static_cast<int>(MemoryCallLog::kCapacity + 3));
  // The next drain starts empty and takes events again.
  h.Call(true, 20, "cudaMalloc_v3020", 99999, Request(64), kOutOfMemoryResult);
  h.recorder.Drain(h.sink);
  EXPECT_EQ(h.sink.memory.back().correlation_id, 99999u);
}

TEST(MemoryCalls, MapsAndAllocationStacksReachTheLiveTable) {
  LiveBlockTable live;
  ApiCallRecorderOptions o = AllocOnly();
  o.live_blocks = &live;
  Harness h(o);
  const MemoryCallParams map{.operation = MemoryOperation::kMap,
                             .kind = MemoryKind::kDevice,
                             .address = 0x5000,
                             .bytes = 2 << 20};
  h.Call(false, 600, "cuMemMap", 7, map, 0);
  h.recorder.Drain(h.sink);
  const LiveBlockSnapshot s = live.Snapshot();
  ASSERT_EQ(s.blocks.size(), 1u);
  EXPECT_EQ(s.blocks[0].operation, MemoryOperation::kMap);
  ASSERT_EQ(s.stacks.size(), 1u);
  EXPECT_EQ(s.stacks[0].correlation_id, 7u);
  EXPECT_NE(s.stacks[0].stack_id, 0u);
}

MemoryRecord Block(MemoryOperation op, uint64_t address, uint64_t bytes, uint32_t correlation,
                   uint64_t ts) {
  return {.operation = op,
          .memory_kind = MemoryKind::kDevice,
          .address = address,
          .bytes = bytes,
          .timestamp_ns = ts,
          .device_id = 1,
          .correlation_id = correlation};
}

ApiStackRecord StackOf(uint32_t correlation, uint64_t stack_id) {
  return {.correlation_id = correlation, .stack_id = stack_id, .timestamp_ns = 1};
}

TEST(LiveBlockTable, AllocFreeReuseAndUnknownFree) {
  LiveBlockTable t;
  t.OnMemory(Block(MemoryOperation::kAllocate, 0x1000, 100, 1, 10));
  t.OnStack(StackOf(1, 501));
  t.OnStack(StackOf(2, 502));  // its record comes later
  t.OnMemory(Block(MemoryOperation::kAllocate, 0x2000, 200, 2, 20));
  t.OnMemory(Block(MemoryOperation::kAllocate, 0x3000, 300, 3, 30));
  t.OnMemory(Block(MemoryOperation::kRelease, 0x1000, 100, 4, 40));
  t.OnMemory(Block(MemoryOperation::kRelease, 0x9000, 900, 5, 50));  // never seen
  // The freed address given out again: a new block, with its own correlation id.
  t.OnMemory(Block(MemoryOperation::kAllocate, 0x1000, 50, 6, 60));
  t.OnMemory(Block(MemoryOperation::kPoolTrim, 0x2000, 0, 7, 70));  // changes nothing
  LiveBlockCounts c = t.counts();
  EXPECT_EQ(c.blocks, 3u);
  EXPECT_EQ(c.bytes, 550u);
  EXPECT_EQ(c.unknown_frees, 1u);
  EXPECT_EQ(c.replaced, 0u);
  const LiveBlockSnapshot s = t.Snapshot();
  ASSERT_EQ(s.blocks.size(), 3u);
  EXPECT_EQ(s.blocks[0].address, 0x2000u);  // oldest first
  EXPECT_EQ(s.blocks[1].address, 0x3000u);
  EXPECT_EQ(s.blocks[2].address, 0x1000u);
  EXPECT_EQ(s.blocks[2].bytes, 50u);
  EXPECT_EQ(s.blocks[2].correlation_id, 6u);
  EXPECT_EQ(s.blocks[2].timestamp_ns, 60u);
  // Only the live blocks' stacks: 0x1000's first stack went with its free.
  ASSERT_EQ(s.stacks.size(), 1u);
  EXPECT_EQ(s.stacks[0].correlation_id, 2u);
  EXPECT_EQ(s.stacks[0].stack_id, 502u);
}

TEST(LiveBlockTable, AnAllocationAtAHeldAddressReplacesIt) {
  LiveBlockTable t;
  t.OnMemory(Block(MemoryOperation::kAllocate, 0x1000, 100, 1, 10));
  t.OnMemory(Block(MemoryOperation::kMap, 0x1000, 64, 2, 20));  // its free was lost
  EXPECT_EQ(t.counts().replaced, 1u);
  EXPECT_EQ(t.counts().bytes, 64u);
  t.OnMemory(Block(MemoryOperation::kUnmap, 0x1000, 64, 3, 30));
  EXPECT_EQ(t.counts().blocks, 0u);
  EXPECT_EQ(t.counts().bytes, 0u);
  EXPECT_TRUE(t.Snapshot().blocks.empty());
}

TEST(LiveBlockTable, StacksOfFreesAreBounded) {
  LiveBlockTable t;
  t.OnMemory(Block(MemoryOperation::kAllocate, 0x1000, 100, 1, 10));
  t.OnStack(StackOf(1, 7));
  for (uint32_t id = 2; id < LiveBlockTable::kMaxPendingStacks + 10; ++id)
    t.OnStack(StackOf(id, 9));
  const LiveBlockSnapshot s = t.Snapshot();
  ASSERT_EQ(s.stacks.size(), 1u);  // the live block's stack stayed
  EXPECT_EQ(s.stacks[0].stack_id, 7u);
}

}  // namespace
}  // namespace warpscope
