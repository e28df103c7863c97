// Generates the writer's records, encoders and Batch::Write functions from trace.proto. A
// record holds one member per field of its message, in schema order, except where
// record_rules.h says otherwise; its encoder writes every field, in schema order, with the
// sink call of its wire type (proto/writer/wire_format.h), taking what the record does not
// hold (relative times, ids the writer gives) as arguments. Messages without a record whose
// fields are all singular get an encoder that takes every field as an argument.
#include "proto/codegen/record_code.h"

#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "proto/codegen/codegen_names.h"
#include "proto/codegen/record_rules.h"

namespace warpscope::codegen {
namespace {

namespace gp = ::google::protobuf;
using FD = gp::FieldDescriptor;

// What a message field is to its record and encoder.
enum class Role {
  kCopy,            // a record member of the same name
  kArgument,        // an encoder argument (writer values; every field of a record-less message)
  kStart,           // record: absolute start_ns; encoder argument: relative start_ns
  kDuration,        // record: absolute end_ns; encoder argument: duration_ns
  kTimestamp,       // record: absolute timestamp_ns; encoder argument: relative
  kBytesView,       // record: std::span<const uint8_t>
  kPointerAndSize,  // record: const void* <field> and size_t size
};

const RecordRule* FindRecord(const gp::Descriptor& message) {
  for (const RecordRule& rule : kRecords) {
    if (rule.message == message.name()) return &rule;
  }
  return nullptr;
}

Role RoleOf(const gp::Descriptor& message, const FD& field) {
  if (FindRecord(message) == nullptr) return Role::kArgument;
  const std::string qualified = message.name() + "." + field.name();
  for (const FieldException& e : kFieldExceptions) {
    if (e.field != qualified) continue;
    switch (e.rule) {
      case FieldRule::kWriterValue: return Role::kArgument;
      case FieldRule::kBytesView: return Role::kBytesView;
      case FieldRule::kPointerAndSize: return Role::kPointerAndSize;
    }
  }
  if (field.name() == "start_ns" && message.FindFieldByName("duration_ns") != nullptr) {
    return Role::kStart;
  }
  if (field.name() == "duration_ns" && message.FindFieldByName("start_ns") != nullptr) {
    return Role::kDuration;
  }
  if (field.name() == "timestamp_ns") return Role::kTimestamp;
  return Role::kCopy;
}

bool IsTime(Role role) {
  return role == Role::kStart || role == Role::kDuration || role == Role::kTimestamp;
}

// The record member a time field is kept in.
std::string MemberName(const FD& field, Role role) {
  return role == Role::kDuration ? "end_ns" : field.name();
}

// C++ type of one value of `field`, or "" when the writer cannot hold it.
std::string ValueType(const FD& field) {
  switch (field.type()) {
    case FD::TYPE_UINT32: return "uint32_t";
    case FD::TYPE_SINT32: return field.is_repeated() ? "" : "int32_t";
    case FD::TYPE_UINT64: return "uint64_t";
    case FD::TYPE_BOOL: return "bool";
    case FD::TYPE_DOUBLE: return field.is_repeated() ? "double" : "";
    case FD::TYPE_ENUM: return field.enum_type()->name();
    case FD::TYPE_STRING:
    case FD::TYPE_BYTES: return "std::string";
    default: return "";
  }
}

// A varint field: uint32, sint32, uint64, bool or enum, singular.
bool IsVarint(const FD& field) {
  return !field.is_repeated() &&
         (field.type() == FD::TYPE_UINT32 || field.type() == FD::TYPE_SINT32 ||
          field.type() == FD::TYPE_UINT64 || field.type() == FD::TYPE_BOOL ||
          field.type() == FD::TYPE_ENUM);
}

// Every field a varint: the body has a bound known here, and goes through EmitSmall.
bool IsFixedShape(const gp::Descriptor& message) {
  for (int i = 0; i < message.field_count(); ++i) {
    if (!IsVarint(*message.field(i))) return false;
  }
  return true;
}

size_t VarintBytes(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

// Largest body of a fixed-shape message: every field at its largest value.
size_t MaxBodyBytes(const gp::Descriptor& message) {
  size_t bytes = 0;
  for (int i = 0; i < message.field_count(); ++i) {
    const FD& f = *message.field(i);
    const size_t value = f.type() == FD::TYPE_UINT64 ? 10 : f.type() == FD::TYPE_BOOL ? 1 : 5;
    bytes += VarintBytes(static_cast<uint64_t>(f.number()) << 3) + value;
  }
  return bytes;
}

std::string EnumDefault(const gp::EnumDescriptor& e) {
  for (int i = 0; i < e.value_count(); ++i) {
    if (e.value(i)->number() == 0) return e.name() + "::" + EnumValueName(e, i);
  }
  return e.name() + "::" + EnumValueName(e, 0);
}

bool Unsupported(const gp::Descriptor& message, const FD& field, std::string_view what,
                 std::string* error) {
  *error = message.name() + "." + field.name() + ": " + std::string(what) +
           "; give it a rule in proto/codegen/record_rules.h";
  return false;
}

// The struct member(s) holding `field`; "" for none.
bool MemberLines(const gp::Descriptor& message, const FD& field, std::string* out,
                 std::string* error) {
  const Role role = RoleOf(message, field);
  const std::string name = MemberName(field, role);
  switch (role) {
    case Role::kArgument: *out = ""; return true;
    case Role::kStart:
    case Role::kDuration:
    case Role::kTimestamp:
      *out = field.is_repeated() ? "std::vector<uint64_t> " + name + ";  // absolute"
                                 : "uint64_t " + name + " = 0;  // absolute";
      return true;
    case Role::kBytesView: *out = "std::span<const uint8_t> " + name + ";"; return true;
    case Role::kPointerAndSize:
      *out = "const void* " + name + " = nullptr;\n  size_t size = 0;";
      return true;
    case Role::kCopy: break;
  }
  if (field.type() == FD::TYPE_MESSAGE) {
    if (!field.is_repeated()) return Unsupported(message, field, "a singular message", error);
    if (field.message_type()->name() == "KeyValue") {
      *out = "KeyValueList " + name + ";";
      return true;
    }
    const RecordRule* element = FindRecord(*field.message_type());
    if (element == nullptr) return Unsupported(message, field, "a message without record", error);
    *out = "std::vector<" + std::string(element->record) + "> " + name + ";";
    return true;
  }
  const std::string type = ValueType(field);
  if (type.empty()) return Unsupported(message, field, "a type the writer has no sink for", error);
  if (field.is_repeated()) {
    *out = "std::vector<" + type + "> " + name + ";";
  } else if (field.type() == FD::TYPE_STRING || field.type() == FD::TYPE_BYTES) {
    *out = type + " " + name + ";";
  } else if (field.type() == FD::TYPE_ENUM) {
    *out = type + " " + name + " = " + EnumDefault(*field.enum_type()) + ";";
  } else {
    *out = type + " " + name + (field.type() == FD::TYPE_BOOL ? " = false;" : " = 0;");
  }
  return true;
}

// The encoder's parameter for `field`, when it is one.
bool ArgumentType(const gp::Descriptor& message, const FD& field, std::string* out,
                  std::string* error) {
  if (field.is_repeated()) {
    if (field.type() == FD::TYPE_UINT64) {
      *out = "std::span<const uint64_t>";
      return true;
    }
    return Unsupported(message, field, "a repeated encoder argument", error);
  }
  switch (field.type()) {
    case FD::TYPE_STRING: *out = "std::string_view"; return true;
    case FD::TYPE_BYTES: *out = "std::span<const uint8_t>"; return true;
    case FD::TYPE_MESSAGE: return Unsupported(message, field, "a message argument", error);
    default: break;
  }
  *out = ValueType(field);
  if (out->empty()) return Unsupported(message, field, "a type the writer has no sink for", error);
  return true;
}

// The sink call(s) that write `field` from the C++ expression `value`.
bool EncodeLines(const gp::Descriptor& message, const FD& field, const std::string& value,
                 std::string* out, std::string* error) {
  const std::string k = "F::k" + CamelCase(field.name());
  const Role role = RoleOf(message, field);
  if (role == Role::kPointerAndSize) {
    *out = "s.Bytes(" + k + ", " + value + ", r.size);";
    return true;
  }
  if (field.is_repeated()) {
    switch (field.type()) {
      case FD::TYPE_UINT32:
      case FD::TYPE_UINT64:
        *out = "s.PackedVarint(" + k + ", std::span<const " + ValueType(field) + ">(" + value +
               "));";
        return true;
      case FD::TYPE_DOUBLE:
        *out = "s.PackedDouble(" + k + ", std::span<const double>(" + value + "));";
        return true;
      case FD::TYPE_STRING:
        *out = "for (const std::string& e : " + value + ") s.RepeatedString(" + k + ", e);";
        return true;
      case FD::TYPE_MESSAGE: {
        const gp::Descriptor& element = *field.message_type();
        const std::string call =
            element.name() == "KeyValue"
                ? "EncodeKeyValue(m, e.first, e.second)"
                : "Encode" + element.name() + "(m, e)";
        *out = "for (const auto& e : " + value + ") {\n    wire::Nested(s, " + k +
               ", [&](auto& m) { " + call + "; });\n  }";
        return true;
      }
      default: return Unsupported(message, field, "a repeated type without packed sink", error);
    }
  }
  switch (field.type()) {
    case FD::TYPE_UINT32:
    case FD::TYPE_UINT64: *out = "s.Uint(" + k + ", " + value + ");"; return true;
    case FD::TYPE_SINT32: *out = "s.Sint(" + k + ", " + value + ");"; return true;
    case FD::TYPE_BOOL: *out = "s.Bool(" + k + ", " + value + ");"; return true;
    case FD::TYPE_ENUM: *out = "s.EnumValue(" + k + ", " + value + ");"; return true;
    case FD::TYPE_STRING: *out = "s.String(" + k + ", " + value + ");"; return true;
    case FD::TYPE_BYTES:
      *out = "s.Bytes(" + k + ", " + value + ".data(), " + value + ".size());";
      return true;
    default: return Unsupported(message, field, "a type the writer has no sink for", error);
  }
}

// A message gets an encoder when it has a record (other than a struct-only one) or when all
// its fields can be arguments.
bool HasEncoder(const gp::Descriptor& message) {
  if (const RecordRule* rule = FindRecord(message)) return rule->emit != Emit::kStructOnly;
  for (int i = 0; i < message.field_count(); ++i) {
    const FD& f = *message.field(i);
    if (f.is_repeated() || f.type() == FD::TYPE_MESSAGE || ValueType(f).empty()) return false;
  }
  return true;
}

std::string Guard(const gp::FileDescriptor& file, std::string_view suffix) {
  std::string_view stem = file.name();
  if (stem.ends_with(".proto")) stem.remove_suffix(6);
  std::string guard = std::string(stem) + std::string(suffix);
  for (char& c : guard) {
    c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
  }
  return guard;
}

std::string Banner(const gp::FileDescriptor& file, std::string_view job) {
  return "// Generated from " + file.name() +
         " by proto/codegen/ (record_rules.h holds what the schema\n"
         "// does not say); do not edit. " +
         std::string(job) + "\n";
}

// The opening of a generated header: what made it and what it holds, its guard, its includes
// (<system> ones first, then "project/..." ones).
std::string HeaderStart(const gp::FileDescriptor& file, std::string_view guard_suffix,
                        std::string_view job, std::initializer_list<std::string_view> includes) {
  const std::string guard = Guard(file, guard_suffix);
  std::string out = Banner(file, job) + "#ifndef " + guard + "\n#define " + guard + "\n\n";
  bool project = false;
  for (std::string_view include : includes) {
    const bool quoted = include.find('/') != std::string_view::npos;
    if (quoted && !project) out += "\n";
    project |= quoted;
    out += quoted ? "#include \"" + std::string(include) + "\"\n"
                  : "#include <" + std::string(include) + ">\n";
  }
  return out + "\n";
}

std::string HeaderEnd(const gp::FileDescriptor& file, std::string_view guard_suffix,
                      std::string_view name_space) {
  return "\n}  // namespace " + std::string(name_space) + "\n\n#endif  // " +
         Guard(file, guard_suffix) + "\n";
}

}  // namespace

bool GenerateRecords(const gp::FileDescriptor& file, std::string* text, std::string* error) {
  std::ostringstream out;
  out << HeaderStart(file, "_RECORDS_H_",
                     "The plain C++ records collectors hand to the TraceWriter:\n// absolute "
                     "timestamps (ns, trace clock), strings by interned id, no CUPTI or protobuf "
                     "types.\n// What each field means, and its unit: the .proto file.",
                     {"cstddef", "cstdint", "span", "string", "utility", "vector"})
      << "namespace warpscope {\n";
  for (int i = 0; i < file.enum_type_count(); ++i) {
    const gp::EnumDescriptor& e = *file.enum_type(i);
    out << "\n// " << e.full_name() << "\nenum class " << e.name() << " : uint32_t {\n";
    for (int v = 0; v < e.value_count(); ++v) {
      out << "  " << EnumValueName(e, v) << " = " << e.value(v)->number() << ",\n";
    }
    out << "};\n";
  }
  out << "\n// A repeated KeyValue: (key, value) pairs.\n"
      << "using KeyValueList = std::vector<std::pair<std::string, std::string>>;\n";
  for (int i = 0; i < file.message_type_count(); ++i) {
    const gp::Descriptor& message = *file.message_type(i);
    const RecordRule* rule = FindRecord(message);
    if (rule == nullptr) continue;
    out << "\n// " << message.full_name() << ".";
    if (!rule->comment.empty()) out << " " << rule->comment;
    out << "\nstruct " << rule->record << " {\n";
    for (int f = 0; f < message.field_count(); ++f) {
      std::string lines;
      if (!MemberLines(message, *message.field(f), &lines, error)) return false;
      if (!lines.empty()) out << "  " << lines << "\n";
    }
    if (IsFixedShape(message)) {
      out << "  friend bool operator==(const " << rule->record << "&, const " << rule->record
          << "&) = default;\n";
    }
    out << "};\n";
  }
  out << HeaderEnd(file, "_RECORDS_H_", "warpscope");
  *text = out.str();
  return true;
}

bool GenerateEncoders(const gp::FileDescriptor& file, std::string* text, std::string* error) {
  std::ostringstream out;
  out << HeaderStart(file, "_ENCODERS_H_",
                     "One encoder per message: each field in schema order\n// with the sink "
                     "call of its wire type, into a wire::SizeSink (to measure) or a "
                     "wire::BufferSink.\n// Arguments after the record are what it does not "
                     "hold, in schema order (times relative to\n// Header.time_base_ns). Always inlined: "
                     "a call would pass the sink through memory, and\n// every byte it "
                     "writes may alias it, so each write would reload the sink's position.",
                     {"cstddef", "cstdint", "span", "string", "string_view",
                      "proto/writer/wire_format.h", "warpscope/v1/trace_fields.h",
                      "warpscope/v1/trace_records.h"})
      << "namespace warpscope::writer_internal {\n";
  for (int i = 0; i < file.message_type_count(); ++i) {
    const gp::Descriptor& message = *file.message_type(i);
    if (!HasEncoder(message)) continue;
    const RecordRule* rule = FindRecord(message);
    std::string params, body;
    if (rule != nullptr) params = ", const " + std::string(rule->record) + "& r";
    for (int f = 0; f < message.field_count(); ++f) {
      const FD& field = *message.field(f);
      const Role role = RoleOf(message, field);
      std::string value = "r." + MemberName(field, role);
      if (role == Role::kArgument || IsTime(role)) {
        std::string type;
        if (!ArgumentType(message, field, &type, error)) return false;
        params += ", " + type + " " + field.name();
        value = field.name();
      }
      std::string lines;
      if (!EncodeLines(message, field, value, &lines, error)) return false;
      body += "  " + lines + "\n";
    }
    out << "\n// " << message.full_name() << "\ntemplate <typename Sink>\n"
        << "[[gnu::always_inline]] inline void Encode"
        << message.name() << "(Sink& s" << params << ") {\n  using F = fields::" << message.name()
        << ";\n"
        << body << "}\n";
    if (IsFixedShape(message)) {
      out << "// Largest " << message.name() << " body: every field at its largest value.\n"
          << "inline constexpr size_t kMax" << message.name()
          << "Bytes = " << MaxBodyBytes(message) << ";\n";
    }
  }
  out << HeaderEnd(file, "_ENCODERS_H_", "warpscope::writer_internal");
  *text = out.str();
  return true;
}

bool GenerateRecordWriters(const gp::FileDescriptor& file, std::string* text,
                           std::string* error) {
  const gp::Descriptor* packet = file.FindMessageTypeByName("TracePacket");
  if (packet == nullptr) {
    *error = "no TracePacket message";
    return false;
  }
  std::ostringstream out;
  out << Banner(file, "TraceWriter::Batch::Write for the records that need\n"
                      "// no hand-written code (proto/writer/record_writers.cc has the "
                      "others): times made relative,\n// then the packet emitted; messages of "
                      "varint fields only through EmitSmall's stack buffer.\n")
      << "#include \"proto/writer/writer_impl.h\"\n"
      << "#include \"warpscope/v1/trace_encoders.h\"\n\nnamespace warpscope {\n\n"
      << "using wire::BufferSink;\nusing writer_internal::Packet;\n";
  for (int i = 0; i < file.message_type_count(); ++i) {
    const gp::Descriptor& message = *file.message_type(i);
    const RecordRule* rule = FindRecord(message);
    if (rule == nullptr || rule->emit != Emit::kWrite) continue;
    const FD* oneof_member = nullptr;
    for (int f = 0; f < packet->field_count(); ++f) {
      if (packet->field(f)->message_type() == &message) oneof_member = packet->field(f);
    }
    if (oneof_member == nullptr) {
      *error = message.name() + " is not a TracePacket member; it cannot be written alone";
      return false;
    }
    const bool small = IsFixedShape(message);
    std::string times, args;
    for (int f = 0; f < message.field_count(); ++f) {
      const FD& field = *message.field(f);
      const Role role = RoleOf(message, field);
      if (role == Role::kArgument || (IsTime(role) && field.is_repeated())) {
        return Unsupported(message, *message.field(f),
                           "a value Batch::Write cannot compute (make the record kStructOnly)",
                           error);
      }
      if (!IsTime(role)) continue;
      const std::string& name = field.name();
      times += "  const uint64_t " + name + " = " +
               (role == Role::kDuration ? "w.Duration(r.start_ns, r.end_ns)"
                                        : "w.RelTime(r." + name + ")") +
               ";\n";
      args += ", " + name;
    }
    const std::string packet_field = "Packet::k" + CamelCase(oneof_member->name());
    out << "\nbool TraceWriter::Batch::Write(const " << rule->record << "& r) {\n"
        << "  if (!locked_) return false;\n  Impl& w = *writer_.impl_;\n";
    if (small) {
      out << "  static_assert(writer_internal::kMax" << message.name()
          << "Bytes <= writer_internal::kSmallBodyBytes);\n"
          << times << "  return w.EmitSmall(" << packet_field << ", [&](BufferSink& s) {\n"
          << "    writer_internal::Encode" << message.name() << "(s, r" << args << ");\n  });\n";
    } else {
      // EmitSized checks nothing itself: refuse first, as every sized write does.
      out << "  if (w.RefuseIfClosed()) return false;\n"
          << times << "  return w.EmitSized(" << packet_field << ", [&](auto& s) {\n"
          << "    writer_internal::Encode" << message.name() << "(s, r" << args << ");\n  });\n";
    }
    out << "}\n";
  }
  out << "\n}  // namespace warpscope\n";
  *text = out.str();
  return true;
}

}  // namespace warpscope::codegen
