// How the generator spells schema names in C++: fields as kCamelCase constants, enum values
// without their enum's prefix. Shared by the fields header and the records and encoders.
#ifndef WARPSCOPE_PROTO_CODEGEN_CODEGEN_NAMES_H_
#define WARPSCOPE_PROTO_CODEGEN_CODEGEN_NAMES_H_

#include <google/protobuf/descriptor.h>

#include <cctype>
#include <string>
#include <string_view>

namespace warpscope::codegen {

// snake_case or UPPER_SNAKE to CamelCase: "start_ns" -> "StartNs", "MONOTONIC_RAW" ->
// "MonotonicRaw", "l2_cache_bytes" -> "L2CacheBytes".
inline std::string CamelCase(std::string_view name) {
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
inline std::string EnumValuePrefix(std::string_view enum_name) {
  std::string out;
  for (size_t i = 0; i < enum_name.size(); ++i) {
    const auto c = static_cast<unsigned char>(enum_name[i]);
    if (i > 0 && std::isupper(c)) out += '_';
    out += static_cast<char>(std::toupper(c));
  }
  return out + "_";
}

// The C++ name of each value of `e`: the enum's prefix dropped when all values have it, then
// kCamelCase (CLOCK_DOMAIN_MONOTONIC_RAW -> kMonotonicRaw). A copy direction is spelled as
// CUDA does (COPY_KIND_HTOD -> kHtoD).
inline std::string EnumValueName(const google::protobuf::EnumDescriptor& e, int index) {
  const std::string prefix = EnumValuePrefix(e.name());
  bool all_prefixed = true;
  for (int i = 0; i < e.value_count(); ++i) {
    const std::string& value = e.value(i)->name();
    all_prefixed &= value.size() > prefix.size() && value.starts_with(prefix);
  }
  const std::string_view bare =
      std::string_view(e.value(index)->name()).substr(all_prefixed ? prefix.size() : 0);
  if (bare.size() == 4 && bare.substr(1, 2) == "TO") {
    return std::string("k") + bare[0] + "to" + bare[3];
  }
  return "k" + CamelCase(bare);
}

}  // namespace warpscope::codegen

#endif  // WARPSCOPE_PROTO_CODEGEN_CODEGEN_NAMES_H_
