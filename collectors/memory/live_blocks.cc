// The live-block table (see live_blocks.h).
#include "collectors/memory/live_blocks.h"

#include <algorithm>

namespace warpscope {

void LiveBlockTable::OnMemory(const MemoryRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  switch (r.operation) {
    case MemoryOperation::kAllocate:
    case MemoryOperation::kMap: {
      auto [it, inserted] = blocks_.try_emplace(r.address, r);
      if (!inserted) {
        ++counts_.replaced;
        counts_.bytes -= it->second.bytes;
        it->second = r;
      }
      counts_.bytes += r.bytes;
      break;
    }
    case MemoryOperation::kRelease:
    case MemoryOperation::kUnmap: {
      auto it = blocks_.find(r.address);
      if (it == blocks_.end()) {
        ++counts_.unknown_frees;
        break;
      }
      counts_.bytes -= it->second.bytes;
      stacks_.erase(it->second.correlation_id);
      blocks_.erase(it);
      break;
    }
    default:
      break;
  }
  counts_.blocks = blocks_.size();
}

void LiveBlockTable::OnStack(const ApiStackRecord& s) {
  if (s.stack_id == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (stacks_.size() >= kMaxPendingStacks) {
    // The stacks of frees and of blocks long released: keep those of live blocks, drop the
    // older half of the rest.
    std::unordered_map<uint32_t, bool> live;
    for (const auto& [address, block] : blocks_) live[block.correlation_id] = true;
    size_t dropped = 0;
    std::vector<uint32_t> kept;
    for (uint32_t id : stack_order_) {
      if (!stacks_.count(id)) continue;
      if (!live.count(id) && dropped < kMaxPendingStacks / 2) {
        stacks_.erase(id);
        ++dropped;
      } else {
        kept.push_back(id);
      }
    }
    stack_order_ = std::move(kept);
  }
  if (stacks_.insert_or_assign(s.correlation_id, s).second)
    stack_order_.push_back(s.correlation_id);
}

LiveBlockSnapshot LiveBlockTable::Snapshot() const {
  LiveBlockSnapshot out;
  std::lock_guard<std::mutex> lock(mu_);
  out.blocks.reserve(blocks_.size());
  for (const auto& [address, block] : blocks_) {
    out.blocks.push_back(block);
    auto s = stacks_.find(block.correlation_id);
    if (s != stacks_.end()) out.stacks.push_back(s->second);
  }
  // Oldest first, as they were made.
  std::sort(out.blocks.begin(), out.blocks.end(), [](const MemoryRecord& a, const MemoryRecord& b) {
    return a.timestamp_ns != b.timestamp_ns ? a.timestamp_ns < b.timestamp_ns
                                            : a.address < b.address;
  });
  std::sort(out.stacks.begin(), out.stacks.end(),
            [](const ApiStackRecord& a, const ApiStackRecord& b) {
              return a.correlation_id < b.correlation_id;
            });
  return out;
}

LiveBlockCounts LiveBlockTable::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

void LiveBlockTable::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  blocks_.clear();
  stacks_.clear();
  stack_order_.clear();
  counts_ = LiveBlockCounts();
}

LiveBlockTable& ProcessLiveBlocks() {
  static LiveBlockTable* const table = new LiveBlockTable();
  return *table;
}

}  // namespace warpscope
