// The definitions store: packets copied into 64 KiB blocks (a larger packet, a cubin part,
// gets a block of its own size), never moved once written.
#include "proto/writer/kept_definitions.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace warpscope::writer_internal {

bool KeptDefinitions::Keep(const uint8_t* packet, size_t size, uint32_t field) {
  if (stopped_) return false;
  if (blocks_.empty() || blocks_.back().capacity - blocks_.back().used < size) {
    const size_t capacity = std::max(kBlockBytes, size);
    if (memory_bytes_ + capacity > max_bytes_) {
      stopped_ = true;
      return false;
    }
    Block block;
    block.data.reset(new (std::nothrow) uint8_t[capacity]);
    if (block.data == nullptr) {
      stopped_ = true;
      return false;
    }
    block.capacity = capacity;
    try {
      blocks_.push_back(std::move(block));
    } catch (...) {
      stopped_ = true;
      return false;
    }
    memory_bytes_ += capacity;
  }
  Block& last = blocks_.back();
  std::memcpy(last.data.get() + last.used, packet, size);
  last.used += size;
  ++counts_[field];
  return true;
}

bool KeptDefinitions::TakeSnapshot(DefinitionsSnapshot* out) const {
  try {
    out->parts.clear();
    out->parts.reserve(blocks_.size());
    out->bytes = 0;
    for (const Block& b : blocks_) {
      out->parts.emplace_back(b.data.get(), b.used);
      out->bytes += b.used;
    }
    out->counts = counts_;
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace warpscope::writer_internal
