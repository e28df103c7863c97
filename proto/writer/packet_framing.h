// How one TracePacket is framed in the file: the Trace.packet tag and length, then the oneof
// field's tag and length, then the body. Shared by the chunk pool (which reserves whole
// packets), the record encoders and the writer thread's last packets after a full disk.
#ifndef WARPSCOPE_PROTO_WRITER_PACKET_FRAMING_H_
#define WARPSCOPE_PROTO_WRITER_PACKET_FRAMING_H_

#include <cstddef>
#include <cstdint>

#include "proto/writer/wire_format.h"
#include "warpscope/v1/trace_fields.h"

namespace warpscope::writer_internal {

// TracePacket's oneof members: the field number of each packet kind.
using Packet = fields::TracePacket;
inline constexpr size_t kNumPacketFields = Packet::kMaxFieldNumber + 1;

inline constexpr uint32_t kTracePacketTag =
    wire::MakeTag(fields::Trace::kPacket, wire::kLengthDelimited);
static_assert(kTracePacketTag < 0x80, "PacketSize, MaxBodyIn and WriteFrame take it as one byte");

// Bytes of the frame around a TracePacket body: Trace.packet tag and length, then the oneof
// tag and length.
constexpr size_t PacketSize(uint32_t field, size_t body) {
  const size_t inner = wire::LengthDelimitedSize(field, body);
  return 1 + wire::VarintSize(inner) + inner;
}

// The largest body of `field` that fits in `capacity` bytes (lengths of a chunk fit 5 bytes).
constexpr size_t MaxBodyIn(uint32_t field, size_t capacity) {
  const size_t overhead = 1 + 5 + wire::VarintSize(wire::MakeTag(field, wire::kLengthDelimited)) + 5;
  return capacity > overhead ? capacity - overhead : 0;
}

// Writes the frame of a packet whose body is `body` bytes; returns where the body goes.
inline uint8_t* WriteFrame(uint8_t* out, uint32_t field, size_t body) {
  *out++ = static_cast<uint8_t>(kTracePacketTag);
  out = wire::WriteVarint(wire::LengthDelimitedSize(field, body), out);
  out = wire::WriteVarint(wire::MakeTag(field, wire::kLengthDelimited), out);
  return wire::WriteVarint(body, out);
}

// Largest body of the fixed-shape messages: LaunchConfig has 18 varint fields of at most 11
// bytes (tag + 10) = 198 bytes.
inline constexpr size_t kSmallBodyBytes = 256;

}  // namespace warpscope::writer_internal

#endif  // WARPSCOPE_PROTO_WRITER_PACKET_FRAMING_H_
