// Decoding of protobuf messages whose fields are all varints, straight from their bytes: the
// fast path of the trace decoders (TraceColumns, TraceModel), which hand anything else to
// protobuf. Field numbers and types come from the schema's descriptors, so no field is
// written down twice.
#ifndef WARPSCOPE_ANALYZERS_MODEL_WIRE_FIELDS_H_
#define WARPSCOPE_ANALYZERS_MODEL_WIRE_FIELDS_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace warpscope::wire_fields {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// Field values of one message by field number, normalised as protobuf reads them: uint32
// fields keep their low 32 bits, int32 and enum fields are sign-extended from them, bools
// are 0 or 1.
constexpr int kMaxField = 32;
using FieldValues = std::array<uint64_t, kMaxField>;
enum class FieldKind : uint8_t { kNone, kUint64, kUint32, kInt32, kBool };

inline FieldKind KindOf(const FieldDescriptor* f) {
  if (f == nullptr || f->is_repeated() || f->number() >= kMaxField) return FieldKind::kNone;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT64:
      return FieldKind::kUint64;
    case FieldDescriptor::CPPTYPE_UINT32:
      return FieldKind::kUint32;
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_ENUM:
      return FieldKind::kInt32;
    case FieldDescriptor::CPPTYPE_BOOL:
      return FieldKind::kBool;
    default:
      return FieldKind::kNone;
  }
}

inline uint64_t Normalize(FieldKind kind, uint64_t v) {
  switch (kind) {
    case FieldKind::kUint32:
      return v & 0xffffffffu;
    case FieldKind::kInt32:
      return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v)));
    case FieldKind::kBool:
      return v != 0;
    default:
      return v;
  }
}

// The varint at *p (before end): false when it is cut short or longer than 10 bytes.
inline bool ParseVarint(const uint8_t** p, const uint8_t* end, uint64_t* value) {
  if (*p < end && **p < 0x80) {  // most tags and many values: one byte
    *value = *(*p)++;
    return true;
  }
  if (end - *p >= 8) {
    // Up to 8 bytes (times, ids) without a branch per byte: the first byte whose top bit is
    // clear ends it; the 7-bit groups before it are packed together.
    uint64_t word;
    std::memcpy(&word, *p, sizeof(word));
    const uint64_t stops = ~word & 0x8080808080808080u;
    if (stops != 0) {
      const int bits = __builtin_ctzll(stops) + 1;  // 8 * bytes
      uint64_t x = bits == 64 ? word : word & ((uint64_t{1} << bits) - 1);
      x = ((x & 0x7f007f007f007f00u) >> 1) | (x & 0x007f007f007f007fu);
      x = ((x & 0x3fff00003fff0000u) >> 2) | (x & 0x00003fff00003fffu);
      x = ((x & 0x0fffffff00000000u) >> 4) | (x & 0x000000000fffffffu);
      *value = x;
      *p += bits / 8;
      return true;
    }
  }
  uint64_t result = 0;
  const uint8_t* q = *p;
  for (int shift = 0; shift < 70; shift += 7) {
    if (q == end) return false;
    const uint8_t byte = *q++;
    result |= uint64_t{byte & 0x7fu} << shift;
    if (byte < 0x80) {
      *p = q;
      *value = result;
      return true;
    }
  }
  return false;
}

// The fields of one message type, found in the schema by name.
class MessageFields {
 public:
  explicit MessageFields(const Descriptor* type) : type_(type) {
    for (int i = 0; i < type->field_count(); ++i) {
      const FieldDescriptor* f = type->field(i);
      if (KindOf(f) != FieldKind::kNone) {
        kinds_[f->number()] = KindOf(f);
        used_ = std::max<size_t>(used_, f->number() + 1);
      }
    }
  }
  int Number(const char* name) const {
    const FieldDescriptor* f = type_->FindFieldByName(name);
    return f != nullptr && KindOf(f) != FieldKind::kNone ? f->number() : -1;
  }
  // Decodes `data`, a message whose fields are all known varints; false otherwise (the
  // caller then lets protobuf parse the packet).
  bool Decode(std::string_view data, FieldValues* values) const {
    // Only the numbers in use: zeroing the whole array costs more than the decoding.
    std::memset(values->data(), 0, used_ * sizeof(uint64_t));
    const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
    const uint8_t* end = p + data.size();
    while (p < end) {
      uint64_t tag = 0, value = 0;
      if (!ParseVarint(&p, end, &tag) || (tag & 7) != 0 || (tag >> 3) >= kMaxField) return false;
      const FieldKind kind = kinds_[tag >> 3];
      if (kind == FieldKind::kNone || !ParseVarint(&p, end, &value)) return false;
      (*values)[tag >> 3] = Normalize(kind, value);
    }
    return true;
  }
  // The same values from a parsed message.
  void FromMessage(const google::protobuf::Message& m, FieldValues* values) const {
    values->fill(0);
    const google::protobuf::Reflection* r = m.GetReflection();
    for (int i = 0; i < type_->field_count(); ++i) {
      const FieldDescriptor* f = type_->field(i);
      uint64_t v = 0;
      switch (KindOf(f)) {
        case FieldKind::kUint64:
          v = r->GetUInt64(m, f);
          break;
        case FieldKind::kUint32:
          v = r->GetUInt32(m, f);
          break;
        case FieldKind::kInt32:
          v = static_cast<uint64_t>(static_cast<int64_t>(
              f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM ? r->GetEnumValue(m, f)
                                                             : r->GetInt32(m, f)));
          break;
        case FieldKind::kBool:
          v = r->GetBool(m, f) ? 1 : 0;
          break;
        case FieldKind::kNone:
          continue;
      }
      (*values)[f->number()] = v;
    }
  }

 private:
  const Descriptor* type_;
  std::array<FieldKind, kMaxField> kinds_{};
  size_t used_ = 0;  // highest field number + 1
};

}  // namespace warpscope::wire_fields

#endif  // WARPSCOPE_ANALYZERS_MODEL_WIRE_FIELDS_H_
