// Build-time generator: turns the schema's FileDescriptorSet (trace.desc) into a plain C++
// header of field numbers and enum values, so that the writer, which links no libprotobuf,
// takes its numbers from trace.proto instead of copies.
//
//   generate_trace_fields DESCRIPTOR_SET PROTO_FILE OUT_HEADER
//
// e.g. `generate_trace_fields trace.desc warpscope/v1/trace.proto warpscope/v1/trace_fields.h`.
// Each message becomes a struct of `static constexpr uint32_t` field numbers named after the
// field (`start_ns` -> kStartNs) plus kMaxFieldNumber; each enum a struct of its values with
// the enum's prefix dropped (CLOCK_DOMAIN_MONOTONIC_RAW -> ClockDomain::kMonotonicRaw). The
// header is rewritten only when its text changes, so a schema edit that changes no number or
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

namespace {

namespace gp = ::google::protobuf;

// snake_case or UPPER_SNAKE to CamelCase: "start_ns" -> "StartNs", "MONOTONIC_RAW" ->
// "MonotonicRaw", "l2_cache_bytes" -> "L2CacheBytes".
std::string CamelCase(std::string_view name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    const auto u = static_cast<unsigned char>(c);
    out += static_cast<char>(upper ? std::toupper(u) : std::tolower(u));
    upper = false;
  }
  return out;
}

// CamelCase to UPPER_SNAKE, the prefix protobuf style gives enum values: "ClockDomain" ->
// "CLOCK_DOMAIN_".
std::string EnumValuePrefix(std::string_view enum_name) {
  std::string out;
  for (size_t i = 0; i < enum_name.size(); ++i) {
    const auto c = static_cast<unsigned char>(enum_name[i]);
    if (i > 0 && std::isupper(c)) out += '_';
    out += static_cast<char>(std::toupper(c));
  }
  return out + "_";
}

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
    const std::string prefix = EnumValuePrefix(e.name());
    bool all_prefixed = true;
    for (int i = 0; i < e.value_count(); ++i) {
      const std::string& value = e.value(i)->name();
      all_prefixed &= value.size() > prefix.size() && value.starts_with(prefix);
    }
    out_ << indent << "// " << e.full_name() << "\n";
    out_ << indent << "struct " << e.name() << " {\n";
    std::set<std::string> names;
    for (int i = 0; i < e.value_count(); ++i) {
      const gp::EnumValueDescriptor& value = *e.value(i);
      if (value.number() < 0) {
        *error = value.full_name() + " is negative; the writer encodes enums as unsigned";
        return false;
      }
      const std::string_view bare =
          std::string_view(value.name()).substr(all_prefixed ? prefix.size() : 0);
      const std::string name = "k" + CamelCase(bare);
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
bool GenerateHeader(const gp::FileDescriptor& file, std::string* text, std::string* error) {
  std::string_view stem = file.name();  // warpscope/v1/trace.proto -> WARPSCOPE_V1_TRACE_...
  if (stem.ends_with(".proto")) stem.remove_suffix(6);
  std::string guard = std::string(stem) + "_FIELDS_H_";
  for (char& c : guard) {
    c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
  }
  std::ostringstream out;
  HeaderWriter writer(out);
  out << "// Generated from " << file.name()
      << " by proto/codegen/generate_trace_fields.cc; do not\n"
      << "// edit. The schema's field numbers and enum values for the writer, which encodes\n"
      << "// without libprotobuf. What each field means, and its unit: the .proto file.\n"
      << "#ifndef " << guard << "\n#define " << guard << "\n\n"
      << "#include <cstdint>\n\n"
      << "namespace warpscope::fields {\n";
  for (int i = 0; i < file.enum_type_count(); ++i) {
    out << "\n";
    if (!writer.Enum(*file.enum_type(i), "", error)) return false;
  }
  for (int i = 0; i < file.message_type_count(); ++i) {
    out << "\n";
    if (!writer.Message(*file.message_type(i), "", error)) return false;
  }
  out << "\n}  // namespace warpscope::fields\n\n#endif  // " << guard << "\n";
  *text = out.str();
  return true;
}

int Fail(const std::string& message) {
  std::cerr << "generate_trace_fields: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return Fail("usage: generate_trace_fields DESCRIPTOR_SET PROTO_FILE OUT_HEADER");
  const std::string descriptor_path = argv[1], proto_name = argv[2], out_path = argv[3];

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

  std::string text, error;
  if (!GenerateHeader(*file, &text, &error)) return Fail(proto_name + ": " + error);

  std::string existing;
  if (ReadFile(out_path, &existing) && existing == text) return 0;
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Fail("cannot write " + out_path);
  return 0;
}
