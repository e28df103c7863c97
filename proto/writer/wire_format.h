// Protobuf wire-format primitives for the TraceWriter: varints, tags, length-delimited and
// packed fields, written straight into caller-owned bytes (no message objects, no heap).
// Internal to proto/writer; readers use the generated classes instead.
#ifndef WARPSCOPE_PROTO_WRITER_WIRE_FORMAT_H_
#define WARPSCOPE_PROTO_WRITER_WIRE_FORMAT_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

namespace warpscope::wire {

// Packed doubles and fixed64 are copied with memcpy: the wire format is little-endian.
static_assert(std::endian::native == std::endian::little, "wire encoder assumes little-endian");

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kFixed32 = 5,
};

constexpr uint32_t MakeTag(uint32_t field, WireType type) { return (field << 3) | type; }

constexpr size_t kMaxVarintBytes = 10;

// Bytes a varint takes: 1 + (significant bits - 1) / 7, computed without a loop.
constexpr size_t VarintSize(uint64_t value) {
  return (static_cast<size_t>(std::bit_width(value | 1)) * 9 + 64) / 64;
}

// The hot path writes small values (ids, stream numbers) far more often than big ones, so the
// one-byte case is tested first and the rest is a short loop.
inline uint8_t* WriteVarint(uint64_t value, uint8_t* out) {
  if (value < 0x80) {
    *out = static_cast<uint8_t>(value);
    return out + 1;
  }
  do {
    *out++ = static_cast<uint8_t>(value | 0x80);
    value >>= 7;
  } while (value >= 0x80);
  *out++ = static_cast<uint8_t>(value);
  return out;
}

constexpr uint64_t ZigZag64(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}

// Size of a length-delimited field (tag + length + payload).
constexpr size_t LengthDelimitedSize(uint32_t field, size_t payload) {
  return VarintSize(MakeTag(field, kLengthDelimited)) + VarintSize(payload) + payload;
}

// Replaces each byte that does not belong to a well-formed UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF included) with '?', in place.
inline void ReplaceInvalidUtf8(uint8_t* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    const uint8_t c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool ok = len != 0 && i + len <= n && p[i + 1] >= lo && p[i + 1] <= hi;
    for (size_t k = 2; ok && k < len; ++k) ok = (p[i + k] & 0xC0) == 0x80;
    if (ok) {
      i += len;
    } else {
      p[i++] = '?';
    }
  }
}

// The two sinks below share one interface so that each message is encoded by one template
// function that can either measure (SizeSink) or write (BufferSink). SinkRules holds what
// both do alike: singular scalar fields follow proto3 (zero, false and empty are not
// written), repeated elements always are; each sink adds how a field is written or measured.
template <typename Sink>
class SinkRules {
 public:
  void Uint(uint32_t field, uint64_t value) {
    if (value != 0) self().VarintField(field, value);
  }
  void Bool(uint32_t field, bool value) { Uint(field, value ? 1 : 0); }
  // sint32: zigzag, so that small negative values (-1 for "none") take one byte.
  void Sint(uint32_t field, int32_t value) {
    Uint(field, (static_cast<uint32_t>(value) << 1) ^ static_cast<uint32_t>(value >> 31));
  }
  template <typename Enum>
  void EnumValue(uint32_t field, Enum value) {
    Uint(field, static_cast<uint64_t>(value));
  }
  void String(uint32_t field, std::string_view value) {
    if (!value.empty()) self().RepeatedString(field, value);
  }
  // A `bytes` field, written as given (no UTF-8 repair).
  void Bytes(uint32_t field, const void* data, size_t size) {
    if (size != 0) self().RawField(field, data, size);
  }
  void Bytes(uint32_t field, std::span<const uint8_t> value) {
    Bytes(field, value.data(), value.size());
  }
  template <typename T>
  void PackedVarint(uint32_t field, std::span<const T> values) {
    if (!values.empty()) self().PackedVarintField(field, values);
  }
  // Doubles are copied as they are in memory: the wire format is little-endian.
  void PackedDouble(uint32_t field, std::span<const double> values) {
    Bytes(field, values.data(), values.size() * sizeof(double));
  }

  template <typename T>
  static size_t PackedVarintPayload(std::span<const T> values) {
    size_t n = 0;
    for (T v : values) n += VarintSize(static_cast<uint64_t>(v));
    return n;
  }

 private:
  Sink& self() { return static_cast<Sink&>(*this); }
};

// Writes into a buffer the caller has sized (from a SizeSink pass, or a bound known at
// compile time for fixed-shape messages).
class BufferSink : public SinkRules<BufferSink> {
 public:
  explicit BufferSink(uint8_t* out) : begin_(out), out_(out) {}

  size_t size() const { return static_cast<size_t>(out_ - begin_); }
  uint8_t* position() const { return out_; }

  // Protobuf readers refuse a `string` field that is not valid UTF-8, so every invalid byte
  // (kernel names, argv and NVTX text are arbitrary bytes) becomes '?'; the length is kept.
  void RepeatedString(uint32_t field, std::string_view value) {
    LengthDelimitedHeader(field, value.size());
    if (!value.empty()) std::memcpy(out_, value.data(), value.size());
    ReplaceInvalidUtf8(out_, value.size());
    out_ += value.size();
  }
  // The header of an embedded message or bytes field whose payload the caller writes next.
  void LengthDelimitedHeader(uint32_t field, size_t payload) {
    out_ = WriteVarint(MakeTag(field, kLengthDelimited), out_);
    out_ = WriteVarint(payload, out_);
  }

 private:
  friend class SinkRules<BufferSink>;
  void VarintField(uint32_t field, uint64_t value) {
    out_ = WriteVarint(MakeTag(field, kVarint), out_);
    out_ = WriteVarint(value, out_);
  }
  void RawField(uint32_t field, const void* data, size_t size) {
    LengthDelimitedHeader(field, size);
    std::memcpy(out_, data, size);
    out_ += size;
  }
  template <typename T>
  void PackedVarintField(uint32_t field, std::span<const T> values) {
    LengthDelimitedHeader(field, PackedVarintPayload(values));
    for (T v : values) out_ = WriteVarint(static_cast<uint64_t>(v), out_);
  }

  uint8_t* begin_;
  uint8_t* out_;
};

// Measures what a BufferSink would write.
class SizeSink : public SinkRules<SizeSink> {
 public:
  size_t size() const { return size_; }

  void RepeatedString(uint32_t field, std::string_view value) {
    size_ += LengthDelimitedSize(field, value.size());
  }
  void LengthDelimitedHeader(uint32_t field, size_t payload) {
    size_ += VarintSize(MakeTag(field, kLengthDelimited)) + VarintSize(payload);
  }
  void AddPayload(size_t bytes) { size_ += bytes; }

 private:
  friend class SinkRules<SizeSink>;
  void VarintField(uint32_t field, uint64_t value) {
    size_ += VarintSize(MakeTag(field, kVarint)) + VarintSize(value);
  }
  void RawField(uint32_t field, const void* /*data*/, size_t size) {
    size_ += LengthDelimitedSize(field, size);
  }
  template <typename T>
  void PackedVarintField(uint32_t field, std::span<const T> values) {
    size_ += LengthDelimitedSize(field, PackedVarintPayload(values));
  }

  size_t size_ = 0;
};

// An embedded message: measures `encode` once to write the length, then writes it. Nesting is
// one level deep in the schema, so the second pass costs little.
template <typename Sink, typename EncodeFn>
void Nested(Sink& sink, uint32_t field, EncodeFn&& encode) {
  SizeSink measure;
  encode(measure);
  sink.LengthDelimitedHeader(field, measure.size());
  if constexpr (std::is_same_v<Sink, SizeSink>) {
    sink.AddPayload(measure.size());  // Already measured; no second pass.
  } else {
    encode(sink);
  }
}

}  // namespace warpscope::wire

#endif  // WARPSCOPE_PROTO_WRITER_WIRE_FORMAT_H_
