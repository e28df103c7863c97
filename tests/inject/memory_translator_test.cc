// Tests for the translation of CUPTI's allocation records (Memory4) and memory pool records
// (MemoryPool3) into MemoryEvent records, with synthetic CUDA 13.0 records (no GPU needed).
#include <gtest/gtest.h>

#include <vector>

#include "collectors/activity/activity_translator.h"
#include "tests/activity/fake_activity_api.h"
#include "tests/activity/fake_record_sink.h"

namespace warpscope {
namespace {

using testing::ZeroedActivity;

ActivityTranslator MakeTranslator() { return ActivityTranslator(nullptr, nullptr); }

const CUpti_Activity* AsActivity(const void* p) { return static_cast<const CUpti_Activity*>(p); }

CUpti_ActivityMemory4 Allocation(uint64_t address, uint64_t bytes, uint32_t correlation) {
  auto m = ZeroedActivity<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.address = address;
  m.bytes = bytes;
  m.timestamp = 5000;
  m.deviceId = 1;
  m.contextId = 2;
  m.streamId = 0xffffffffu;  // CUPTI_INVALID_STREAM_ID: not stream-ordered
  m.correlationId = correlation;
  m.source = "libnccl.so.2";
  return m;
}

TEST(MemoryTranslatorTest, AllocationAndReleaseFields) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  CUpti_ActivityMemory4 a = Allocation(0x7f0000000000, 1 << 20, 17);
  CUpti_ActivityMemory4 f = Allocation(0x7f0000000000, 1 << 20, 18);
  f.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  f.timestamp = 6000;
  f.source = nullptr;
  t.Translate(AsActivity(&a), sink);
  t.Translate(AsActivity(&f), sink);
  ASSERT_EQ(sink.memory.size(), 2u);
  const MemoryRecord& r = sink.memory[0];
  EXPECT_EQ(r.operation, MemoryOperation::kAllocate);
  EXPECT_EQ(r.memory_kind, MemoryKind::kDevice);
  EXPECT_EQ(r.address, 0x7f0000000000u);
  EXPECT_EQ(r.bytes, 1u << 20);
  EXPECT_EQ(r.timestamp_ns, 5000u);
  EXPECT_EQ(r.device_id, 1u);
  EXPECT_EQ(r.context_id, 2u);
  EXPECT_EQ(r.stream_id, 0u);
  EXPECT_EQ(r.correlation_id, 17u);
  EXPECT_EQ(r.pool_address, 0u);
  EXPECT_EQ(sink.names[r.source_id], "libnccl.so.2");
  EXPECT_EQ(sink.memory[1].operation, MemoryOperation::kRelease);
  EXPECT_EQ(sink.memory[1].timestamp_ns, 6000u);
  EXPECT_EQ(sink.memory[1].source_id, 0u);
  EXPECT_EQ(t.counters().memory_events, 2u);
}

TEST(MemoryTranslatorTest, SourceIsInternedOnce) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  CUpti_ActivityMemory4 a = Allocation(0x1000, 64, 1);
  CUpti_ActivityMemory4 b = Allocation(0x2000, 64, 2);
  t.Translate(AsActivity(&a), sink);
  t.Translate(AsActivity(&b), sink);
  ASSERT_EQ(sink.memory.size(), 2u);
  EXPECT_NE(sink.memory[0].source_id, 0u);
  EXPECT_EQ(sink.memory[0].source_id, sink.memory[1].source_id);
  EXPECT_EQ(sink.ids.size(), 1u);
}

TEST(MemoryTranslatorTest, MemoryKindsMap) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  const std::vector<std::pair<CUpti_ActivityMemoryKind, MemoryKind>> kinds = {
      {CUPTI_ACTIVITY_MEMORY_KIND_PINNED, MemoryKind::kPinned},
      {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, MemoryKind::kManaged},
      {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, MemoryKind::kDeviceStatic},
      {CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, MemoryKind::kPageable},
      {static_cast<CUpti_ActivityMemoryKind>(99), MemoryKind::kUnknown}};
  for (const auto& [cupti, ours] : kinds) {
    CUpti_ActivityMemory4 a = Allocation(0x1000, 64, 1);
    a.memoryKind = cupti;
    t.Translate(AsActivity(&a), sink);
    EXPECT_EQ(sink.memory.back().memory_kind, ours) << static_cast<int>(cupti);
  }
}

TEST(MemoryTranslatorTest, StreamOrderedAllocationCarriesItsPool) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  CUpti_ActivityMemory4 a = Allocation(0x7f1000000000, 4096, 30);
  a.streamId = 7;
  a.isAsync = 1;
  a.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  a.memoryPoolConfig.address = 0x7f1000000000;
  a.memoryPoolConfig.pool.size = 32 << 20;
  a.memoryPoolConfig.utilizedSize = 4096;
  t.Translate(AsActivity(&a), sink);
  // An imported pool has no size (the union holds the exporting process id).
  CUpti_ActivityMemory4 b = a;
  b.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED;
  b.memoryPoolConfig.pool.processId = 4242;
  t.Translate(AsActivity(&b), sink);
  ASSERT_EQ(sink.memory.size(), 2u);
  EXPECT_EQ(sink.memory[0].stream_id, 7u);
  EXPECT_EQ(sink.memory[0].pool_address, 0x7f1000000000u);
  EXPECT_EQ(sink.memory[0].pool_reserved_bytes, 32u << 20);
  EXPECT_EQ(sink.memory[0].pool_used_bytes, 4096u);
  EXPECT_EQ(sink.memory[1].pool_address, 0x7f1000000000u);
  EXPECT_EQ(sink.memory[1].pool_reserved_bytes, 0u);
  EXPECT_EQ(sink.memory[1].pool_used_bytes, 0u);
}

TEST(MemoryTranslatorTest, PoolCreateTrimDestroy) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  auto p = ZeroedActivity<CUpti_ActivityMemoryPool3>(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
  p.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  p.address = 0x7f2000000000;
  p.deviceId = 3;
  p.correlationId = 40;
  p.timestamp = 100;
  p.size = 64 << 20;
  p.utilizedSize = 1 << 20;
  for (auto op : {CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED,
                  CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED,
                  CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED,
                  CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_INVALID}) {
    p.memoryPoolOperationType = op;
    t.Translate(AsActivity(&p), sink);
  }
  p.isManagedPool = 1;
  p.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED;
  p.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
  t.Translate(AsActivity(&p), sink);
  ASSERT_EQ(sink.memory.size(), 5u);
  EXPECT_EQ(sink.memory[0].operation, MemoryOperation::kPoolCreate);
  EXPECT_EQ(sink.memory[1].operation, MemoryOperation::kPoolTrim);
  EXPECT_EQ(sink.memory[2].operation, MemoryOperation::kPoolDestroy);
  EXPECT_EQ(sink.memory[3].operation, MemoryOperation::kUnknown);
  const MemoryRecord& r = sink.memory[0];
  EXPECT_EQ(r.memory_kind, MemoryKind::kDevice);
  EXPECT_EQ(r.pool_address, 0x7f2000000000u);
  EXPECT_EQ(r.address, 0x7f2000000000u);
  EXPECT_EQ(r.device_id, 3u);
  EXPECT_EQ(r.correlation_id, 40u);
  EXPECT_EQ(r.timestamp_ns, 100u);
  EXPECT_EQ(r.bytes, 64u << 20);
  EXPECT_EQ(r.pool_reserved_bytes, 64u << 20);
  EXPECT_EQ(r.pool_used_bytes, 1u << 20);
  EXPECT_EQ(sink.memory[4].memory_kind, MemoryKind::kManaged);
  EXPECT_EQ(sink.memory[4].pool_reserved_bytes, 0u);  // imported: no size
}

TEST(MemoryTranslatorTest, ObserverSeesEveryMemoryRecord) {
  FakeSink sink;
  ActivityTranslator t = MakeTranslator();
  std::vector<MemoryRecord> seen;
  t.set_memory_observer([&](const MemoryRecord& r) { seen.push_back(r); });
  CUpti_ActivityMemory4 a = Allocation(0x3000, 128, 9);
  t.Translate(AsActivity(&a), sink);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].address, 0x3000u);
  EXPECT_EQ(seen[0].bytes, 128u);
}

}  // namespace
}  // namespace warpscope
