// The definitions a writer keeps (TraceWriterOptions::keep_definitions): every packet that
// later packets refer to by id (strings, launch configs, threads, devices, contexts, stack
// frames and stacks, PM metric sets, PC stall reasons, cubins), copied as encoded, so that a
// next file (StartNextFile) or a flight-recorder dump (DumpRing) can begin with all of them.
// Internal to proto/writer.
#ifndef WARPSCOPE_PROTO_WRITER_KEPT_DEFINITIONS_H_
#define WARPSCOPE_PROTO_WRITER_KEPT_DEFINITIONS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "proto/writer/packet_framing.h"

namespace warpscope::writer_internal {

// The packet kinds that define something other packets refer to by id (the reader's interned
// tables and the model's devices, contexts, metric sets, stall reasons and cubins).
inline constexpr uint64_t kDefinitionFields =
    (uint64_t{1} << Packet::kDevice) | (uint64_t{1} << Packet::kInternedString) |
    (uint64_t{1} << Packet::kLaunchConfig) | (uint64_t{1} << Packet::kThread) |
    (uint64_t{1} << Packet::kPmMetricSet) | (uint64_t{1} << Packet::kPcStallReasons) |
    (uint64_t{1} << Packet::kContext) | (uint64_t{1} << Packet::kCubin) |
    (uint64_t{1} << Packet::kStackFrame) | (uint64_t{1} << Packet::kCallStack);
static_assert(kNumPacketFields <= 64);

constexpr bool IsDefinition(uint32_t field) { return ((kDefinitionFields >> field) & 1) != 0; }

// Default bound on the memory kept (TraceWriterOptions::max_kept_definition_bytes).
inline constexpr size_t kDefaultMaxKeptDefinitionBytes = 64 << 20;

using PacketCounts = std::array<uint64_t, kNumPacketFields>;

// The packets kept when it was taken: they stay where they are, unchanged, as long as the
// KeptDefinitions lives (it is only ever appended to), so they can be written without a lock.
struct DefinitionsSnapshot {
  std::vector<std::span<const uint8_t>> parts;
  size_t bytes = 0;      // Sum of the parts.
  PacketCounts counts{};  // Packets per kind.
};

// Append-only, in the order the packets entered the stream. Past its bound it keeps nothing
// more (so what it holds is always a prefix of the definitions written). Guarded by the
// writer's lock; snapshots are read without it.
class KeptDefinitions {
 public:
  explicit KeptDefinitions(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Copies one whole packet of kind `field`. False when it was not kept: the bound is reached
  // (or memory ran out) now or before.
  bool Keep(const uint8_t* packet, size_t size, uint32_t field);
  // False when out of memory.
  bool TakeSnapshot(DefinitionsSnapshot* out) const;

  bool stopped() const { return stopped_; }
  size_t memory_bytes() const { return memory_bytes_; }  // Blocks allocated.

 private:
  static constexpr size_t kBlockBytes = 64 << 10;
  struct Block {
    std::unique_ptr<uint8_t[]> data;
    size_t used = 0;
    size_t capacity = 0;
  };
  size_t max_bytes_;
  bool stopped_ = false;
  size_t memory_bytes_ = 0;
  std::vector<Block> blocks_;
  PacketCounts counts_{};
};

}  // namespace warpscope::writer_internal

#endif  // WARPSCOPE_PROTO_WRITER_KEPT_DEFINITIONS_H_
