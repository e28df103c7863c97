// LiveBlockTable: the memory a CUDA program holds now, block by block, for the out-of-memory
// dump of the flight recorder. Its ring lets old events go, so the allocations still live at
// an out-of-memory failure may no longer be in it; the table keeps them (address, bytes,
// kind, device, correlation id, time) and the stack of the call that made each, and a dump
// writes them back. Fed with every allocation, free and map (MemoryRecord) and with the
// stacks of the allocation calls; allocations are rare, so one mutex guards it. Never on the
// kernel-launch path. Pure: no CUPTI.
#ifndef WARPSCOPE_COLLECTORS_MEMORY_LIVE_BLOCKS_H_
#define WARPSCOPE_COLLECTORS_MEMORY_LIVE_BLOCKS_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "proto/writer/trace_writer.h"

namespace warpscope {

struct LiveBlockCounts {
  uint64_t blocks = 0;         // live now
  uint64_t bytes = 0;          // their sum
  uint64_t unknown_frees = 0;  // releases or unmaps of an address the table did not hold
  uint64_t replaced = 0;       // allocations at an address the table still held
};

// What a dump writes back: the live blocks as ALLOCATE (or MAP) records with their own
// times, and for each one whose stack is known the ApiStackEvent that joins its correlation
// id to that stack.
struct LiveBlockSnapshot {
  std::vector<MemoryRecord> blocks;
  std::vector<ApiStackRecord> stacks;
};

class LiveBlockTable {
 public:
  // Stacks of calls kept while no block claims them, at most (older ones are let go first).
  static constexpr size_t kMaxPendingStacks = 1 << 16;

  // ALLOCATE and MAP add a block (one at an address already held replaces it); RELEASE and
  // UNMAP remove the block at their address. Other operations change nothing.
  void OnMemory(const MemoryRecord& r);
  // The stack of an allocation call (its ApiStackEvent), in either order with its record.
  void OnStack(const ApiStackRecord& s);
  LiveBlockSnapshot Snapshot() const;
  LiveBlockCounts counts() const;
  void Clear();

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, MemoryRecord> blocks_;    // by address
  std::unordered_map<uint32_t, ApiStackRecord> stacks_;  // by correlation id
  std::vector<uint32_t> stack_order_;                    // oldest first, for the bound
  LiveBlockCounts counts_;
};

// The process's one table (never destroyed: CUPTI's threads may still feed it at exit).
LiveBlockTable& ProcessLiveBlocks();

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_MEMORY_LIVE_BLOCKS_H_
