// Output file naming: ExpandOutputPattern turns a name pattern (%p, %h, %q{VAR}, %n, %%)
// into the trace's file name (declared in trace_writer.h).
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/common/setting_error.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

// A pattern with its escapes other than %n substituted: the text between %n escapes (the
// sequence number goes between segments), and whether the last path component has a literal
// '.' after its first character (what decides if ".wst" is appended; substituted text never
// does).
struct ExpandedPattern {
  std::vector<std::string> segments = std::vector<std::string>(1);
  bool component_has_dot = false;
  bool component_empty = true;

  void Append(std::string_view text, bool literal) {
    for (char c : text) {
      segments.back() += c;
      if (c == '/') {
        component_has_dot = false;
        component_empty = true;
        continue;
      }
      if (literal && c == '.' && !component_empty) component_has_dot = true;
      component_empty = false;
    }
  }
};

// Substitutes every escape but %n; on a malformed pattern returns false with *why set.
bool SubstituteEscapes(std::string_view pattern, uint32_t pid, std::string_view hostname,
                       const std::function<const char*(const char*)>& getenv_fn,
                       ExpandedPattern* out, std::string* why) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c != '%') {
      out->Append(std::string_view(&pattern[i], 1), true);
      continue;
    }
    if (i + 1 == pattern.size()) {
      *why = "ends with a lone '%'; write %% for a literal '%'";
      return false;
    }
    const char escape = pattern[++i];
    switch (escape) {
      case 'p':
        out->Append(std::to_string(pid), false);
        break;
      case 'h':
        out->Append(hostname, false);
        break;
      case '%':
        out->Append("%", true);
        break;
      case 'n':
        out->segments.emplace_back();
        out->component_empty = false;
        break;
      case 'q': {
        const size_t close = pattern.find('}', i + 1);
        if (i + 1 >= pattern.size() || pattern[i + 1] != '{' || close == std::string_view::npos) {
          *why = "unterminated %q{; write %q{VARIABLE}";
          return false;
        }
        const std::string name(pattern.substr(i + 2, close - (i + 2)));
        if (name.empty()) {
          *why = "empty %q{}; write %q{VARIABLE}";
          return false;
        }
        const char* value = getenv_fn ? getenv_fn(name.c_str()) : nullptr;
        if (value != nullptr) out->Append(value, false);
        i = close;
        break;
      }
      default:
        *why = std::string("unknown escape %") + escape + "; use %p, %h, %q{VAR}, %n or %%";
        return false;
    }
  }
  return true;
}

}  // namespace

bool ExpandOutputPattern(std::string_view pattern, uint32_t pid, std::string_view hostname,
                         const std::function<const char*(const char*)>& getenv_fn,
                         const std::function<bool(const std::string&)>& file_exists,
                         std::string* out, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  try {
    auto fail = [&](std::string_view why) {
      *error = "warpscope: output name " + QuoteValue(pattern) + ": " + std::string(why);
      return false;
    };
    ExpandedPattern expanded;
    std::string why;
    if (!SubstituteEscapes(pattern, pid, hostname, getenv_fn, &expanded, &why)) return fail(why);
    const std::vector<std::string>& segments = expanded.segments;
    const std::string_view extension = expanded.component_has_dot ? "" : ".wst";
    if (segments.size() == 1) {
      *out = segments[0] + std::string(extension);
      return true;
    }
    for (uint32_t n = 1; n <= 1000000; ++n) {
      const std::string number = std::to_string(n);
      std::string candidate = segments[0];
      for (size_t s = 1; s < segments.size(); ++s) candidate += number + segments[s];
      candidate += extension;
      if (!file_exists || !file_exists(candidate)) {
        *out = std::move(candidate);
        return true;
      }
    }
    return fail("%n found no free number up to 1000000; remove old traces or pick a new name");
  } catch (...) {
    *error = "warpscope: cannot expand the output name (out of memory)";
    return false;
  }
}

}  // namespace warpscope
