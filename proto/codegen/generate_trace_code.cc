// Build-time generator: turns the schema's FileDescriptorSet (trace.desc) into the writer's
// C++ code, so that the writer, which links no libprotobuf, takes its numbers, records and
// encoders from trace.proto instead of copies.
//
//   generate_trace_code DESCRIPTOR_SET PROTO_FILE OUT_DIR
//
// e.g. `generate_trace_code trace.desc warpscope/v1/trace.proto fields_include` writes, under
// OUT_DIR/warpscope/v1/:
//  - trace_fields.h: each message as a struct of `static constexpr uint32_t` field numbers
//    named after the field (`start_ns` -> kStartNs) plus kMaxFieldNumber; each enum a struct of
//    its values with the enum's prefix dropped (CLOCK_DOMAIN_MONOTONIC_RAW ->
//    ClockDomain::kMonotonicRaw);
//  - trace_records.h, trace_encoders.h, trace_record_writers.cc: the records collectors fill,
//    an encoder per message and TraceWriter::Batch::Write (record_code.h; the few fields that
//    are not plain copies are in record_rules.h).
// A file is rewritten only when its text changes, so a schema edit that changes no number or
// name does not rebuild the writer and what includes its records.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "proto/codegen/codegen_names.h"
#include "proto/codegen/record_code.h"

namespace {

namespace gp = ::google::protobuf;
using warpscope::codegen::CamelCase;
using warpscope::codegen::EnumValueName;

// Writes the structs of messages and enums into `out`.
class HeaderWriter {
 public:
  explicit HeaderWriter(std::ostream& out) : out_(out) {}

  // False with *error set when the schema holds something the writer cannot encode.
  bool Message(const gp::Descriptor& message, const std::string& indent, std::string* error) {
    out_ << indent << "// " << message.full_name() << "\n";
    out_ << indent << "struct " << message.name() << " {\n";
    const std::string inner = indent + "  ";
    std::set<std::string> names;
    uint32_t max_number = 0;
    for (int i = 0; i < message.field_count(); ++i) {
      const gp::FieldDescriptor& field = *message.field(i);
      const std::string name = "k" + CamelCase(field.name());
      if (!names.insert(name).second) return Clash(message.full_name(), name, error);
      out_ << inner << "static constexpr uint32_t " << name << " = " << field.number() << ";\n";
      max_number = std::max(max_number, static_cast<uint32_t>(field.number()));
    }
    if (!names.insert("kMaxFieldNumber").second) {
      return Clash(message.full_name(), "kMaxFieldNumber", error);
    }
    out_ << inner << "static constexpr uint32_t kMaxFieldNumber = " << max_number << ";\n";
    for (int i = 0; i < message.nested_type_count(); ++i) {
      if (!names.insert(message.nested_type(i)->name()).second) {
        return Clash(message.full_name(), message.nested_type(i)->name(), error);
      }
      if (!Message(*message.nested_type(i), inner, error)) return false;
    }
    for (int i = 0; i < message.enum_type_count(); ++i) {
      if (!names.insert(message.enum_type(i)->name()).second) {
        return Clash(message.full_name(), message.enum_type(i)->name(), error);
      }
      if (!Enum(*message.enum_type(i), inner, error)) return false;
    }
    out_ << indent << "};\n";
    return true;
  }

  bool Enum(const gp::EnumDescriptor& e, const std::string& indent, std::string* error) {
    out_ << indent << "// " << e.full_name() << "\n";
    out_ << indent << "struct " << e.name() << " {\n";
    std::set<std::string> names;
    for (int i = 0; i < e.value_count(); ++i) {
      const gp::EnumValueDescriptor& value = *e.value(i);
      if (value.number() < 0) {
        *error = value.full_name() + " is negative; the writer encodes enums as unsigned";
        return false;
      }
      const std::string name = EnumValueName(e, i);
      if (!names.insert(name).second) return Clash(e.full_name(), name, error);
      out_ << indent << "  static constexpr uint32_t " << name << " = " << value.number()
           << ";\n";
    }
    out_ << indent << "};\n";
    return true;
  }

 private:
  static bool Clash(const std::string& scope, const std::string& name, std::string* error) {
    *error = "two names in " + scope + " both become " + name + "; rename one in the schema";
    return false;
  }

  std::ostream& out_;
};

bool ReadFile(const std::string& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *bytes = buffer.str();
  return true;
}

// The header text for `file`, or false with *error set.
bool GenerateFields(const gp::FileDescriptor& file, std::string* text, std::string* error) {
  std::string_view stem = file.name();  // warpscope/v1/trace.proto -> WARPSCOPE_V1_TRACE_...
  if (stem.ends_with(".proto")) stem.remove_suffix(6);
  std::string guard = std::string(stem) + "_FIELDS_H_";
  for (char& c : guard) {
    c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
  }
  std::ostringstream out;
  HeaderWriter writer(out);
  out << "// Generated from " << file.name() << " by proto/codegen/generate_trace_code.cc; do not\n"
      << "// edit. The schema's field numbers and enum values for the writer, which encodes\n"
      << "// without libprotobuf. What each field means, and its unit: the .proto file.\n"
      << "#ifndef " << guard << "\n#define " << guard << "\n\n"
      << "#include <cstdint>\n#include <string_view>\n\n"
      << "namespace warpscope::fields {\n";
  for (int i = 0; i < file.enum_type_count(); ++i) {
    out << "\n";
    if (!writer.Enum(*file.enum_type(i), "", error)) return false;
  }
  for (int i = 0; i < file.message_type_count(); ++i) {
    out << "\n";
    if (!writer.Message(*file.message_type(i), "", error)) return false;
  }
  // The writer names its per-kind counters (writer.events_written.<field>) after these.
  if (const gp::Descriptor* packet = file.FindMessageTypeByName("TracePacket")) {
    int max_number = 0;
    for (int i = 0; i < packet->field_count(); ++i) {
      max_number = std::max(max_number, packet->field(i)->number());
    }
    out << "\n// TracePacket's field names, by field number (\"\" for numbers it does not use).\n"
        << "inline constexpr std::string_view kTracePacketFieldNames[] = {\n";
    for (int number = 0; number <= max_number; ++number) {
      const gp::FieldDescriptor* field = packet->FindFieldByNumber(number);
      out << "    \"" << (field != nullptr ? field->name() : "") << "\",\n";
    }
    out << "};\n";
  }
  out << "\n}  // namespace warpscope::fields\n\n#endif  // " << guard << "\n";
  *text = out.str();
  return true;
}

int Fail(const std::string& message) {
  std::cerr << "generate_trace_code: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return Fail("usage: generate_trace_code DESCRIPTOR_SET PROTO_FILE OUT_DIR");
  const std::string descriptor_path = argv[1], proto_name = argv[2], out_dir = argv[3];

  std::string bytes;
  gp::FileDescriptorSet set;
  if (!ReadFile(descriptor_path, &bytes) || !set.ParseFromString(bytes)) {
    return Fail("cannot read a FileDescriptorSet from " + descriptor_path +
                "; it is protoc's --descriptor_set_out");
  }
  gp::DescriptorPool pool;
  for (const gp::FileDescriptorProto& file : set.file()) {
    if (pool.BuildFile(file) == nullptr) {
      return Fail(descriptor_path + ": cannot build " + file.name() +
                  " (are its imports in the set? pass --include_imports to protoc)");
    }
  }
  const gp::FileDescriptor* file = pool.FindFileByName(proto_name);
  if (file == nullptr) return Fail(descriptor_path + " does not hold " + proto_name);

  using Generator = bool (*)(const gp::FileDescriptor&, std::string*, std::string*);
  const std::pair<const char*, Generator> outputs[] = {
      {"trace_fields.h", GenerateFields},
      {"trace_records.h", warpscope::codegen::GenerateRecords},
      {"trace_encoders.h", warpscope::codegen::GenerateEncoders},
      {"trace_record_writers.cc", warpscope::codegen::GenerateRecordWriters},
  };
  for (const auto& [name, generate] : outputs) {
    std::string text, error;
    if (!generate(*file, &text, &error)) return Fail(proto_name + ": " + error);
    const std::string out_path = out_dir + "/warpscope/v1/" + name;
    std::string existing;
    if (ReadFile(out_path, &existing) && existing == text) continue;
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return Fail("cannot write " + out_path);
  }
  return 0;
}
