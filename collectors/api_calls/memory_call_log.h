// MemoryCallLog: the memory events that CUPTI's activity records do not give, taken in the
// allocation functions' callbacks: requests that failed for want of memory (ALLOCATE_FAILED,
// with the bytes asked for) and VMM mappings (cuMemMap / cuMemUnmap, which CUPTI's MEMORY2
// records do not cover). Allocation calls are rare: one mutex and a buffer reserved up front,
// so that a callback neither allocates nor throws. Drained by the session's thread. Pure.
#ifndef WARPSCOPE_COLLECTORS_API_CALLS_MEMORY_CALL_LOG_H_
#define WARPSCOPE_COLLECTORS_API_CALLS_MEMORY_CALL_LOG_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "collectors/callbacks/cupti_callbacks.h"
#include "collectors/common/record_sink.h"

namespace warpscope {

class LiveBlockTable;

struct MemoryCallCounts {
  uint64_t failed = 0;   // ALLOCATE_FAILED taken
  uint64_t maps = 0;     // MAP and UNMAP taken
  uint64_t dropped = 0;  // lost: the buffer was full between two drains
};

class MemoryCallLog {
 public:
  // Events held between two drains, at most.
  static constexpr size_t kCapacity = 8192;
  MemoryCallLog();

  // At the exit of an allocation or map function (call.memory set), on the calling thread:
  // true when it was an out-of-memory failure. `now`: the trace clock.
  bool OnExit(const ApiCallSite& call, uint32_t result, uint32_t os_tid, uint64_t now);
  // Writes the events taken since the last drain (each with its thread), and gives the maps
  // and unmaps to `live` (may be null).
  void Drain(RecordSink& sink, LiveBlockTable* live);
  MemoryCallCounts counts() const;

 private:
  struct Pending {
    uint32_t os_tid = 0;
    MemoryRecord record;
  };
  std::mutex mu_;
  std::vector<Pending> pending_;  // mu_; capacity kCapacity
  std::vector<Pending> spare_;    // the drain's side; capacity kCapacity
  std::atomic<uint64_t> failed_{0}, maps_{0}, dropped_{0};
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_API_CALLS_MEMORY_CALL_LOG_H_
