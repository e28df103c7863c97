// String interning: each string, launch configuration and thread is written once as its own
// packet and later referred to by id. The tables remember what was written, up to a bound.
#ifndef WARPSCOPE_PROTO_WRITER_STRING_INTERNING_H_
#define WARPSCOPE_PROTO_WRITER_STRING_INTERNING_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "proto/writer/trace_records.h"

namespace warpscope::writer_internal {

// Bounds on what interning remembers; past them values are written again on each use.
inline constexpr size_t kMaxInternedStringBytes = 32 << 20;
inline constexpr size_t kMaxInternedConfigs = 1 << 16;
inline constexpr size_t kMaxInternedThreads = 1 << 16;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct LaunchConfigHash {
  size_t operator()(const LaunchConfigRecord& c) const {
    const uint32_t fields[] = {c.grid_x, c.grid_y, c.grid_z, c.block_x, c.block_y, c.block_z,
                               c.cluster_x, c.cluster_y, c.cluster_z, c.registers_per_thread,
                               c.static_shared_memory, c.dynamic_shared_memory,
                               c.local_memory_per_thread, c.shared_memory_executed,
                               c.shared_memory_config, c.shared_memory_carveout_requested,
                               c.shmem_limit_config};
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (uint32_t f : fields) {
      h ^= f;
      h *= 0xff51afd7ed558ccdull;
      h ^= h >> 32;
    }
    return static_cast<size_t>(h);
  }
};

// What has been interned so far, and the next ids. Guarded by the writer's lock.
struct InternTables {
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> strings;
  size_t string_bytes = 0;
  uint64_t next_string_id = 1;
  std::unordered_map<LaunchConfigRecord, uint64_t, LaunchConfigHash> configs;
  uint64_t next_config_id = 1;
  std::unordered_map<uint64_t, uint64_t> threads;
  uint64_t next_thread_id = 1;
};

}  // namespace warpscope::writer_internal

#endif  // WARPSCOPE_PROTO_WRITER_STRING_INTERNING_H_
