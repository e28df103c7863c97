// The memory events of the allocation functions' callbacks (see memory_call_log.h).
#include "collectors/api_calls/memory_call_log.h"

#include "collectors/memory/live_blocks.h"

namespace warpscope {

MemoryCallLog::MemoryCallLog() {
  pending_.reserve(kCapacity);
  spare_.reserve(kCapacity);
}

bool MemoryCallLog::OnExit(const ApiCallSite& call, uint32_t result, uint32_t os_tid,
                           uint64_t now) {
  const MemoryCallParams& m = *call.memory;
  MemoryRecord r;
  if (m.operation == MemoryOperation::kAllocate) {
    if (result != kOutOfMemoryResult) return false;  // MEMORY2 records the successful ones
    r.operation = MemoryOperation::kAllocateFailed;
    r.result = result;
  } else if (m.operation == MemoryOperation::kMap || m.operation == MemoryOperation::kUnmap) {
    if (result != 0) return false;
    r.operation = m.operation;
    r.address = m.address;
  } else {
    return false;
  }
  r.memory_kind = m.kind;
  r.bytes = m.bytes;
  r.timestamp_ns = now;
  r.device_id = call.device_id;
  r.correlation_id = call.correlation_id;
  const bool failed = r.operation == MemoryOperation::kAllocateFailed;
  (failed ? failed_ : maps_).fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_.size() >= kCapacity) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return failed;
  }
  pending_.push_back({os_tid, r});  // within the capacity reserved: no allocation
  return failed;
}

void MemoryCallLog::Drain(RecordSink& sink, LiveBlockTable* live) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.swap(spare_);
  }
  for (Pending& p : spare_) {
    // Keyed as CUPTI's records key threads (system thread ids): one ThreadInfo for both.
    p.record.thread_id = sink.InternThread(p.os_tid, p.os_tid);
    sink.Write(p.record);
    if (live != nullptr) live->OnMemory(p.record);
  }
  spare_.clear();  // keeps its capacity for the next swap
}

MemoryCallCounts MemoryCallLog::counts() const {
  return {failed_.load(), maps_.load(), dropped_.load()};
}

}  // namespace warpscope
