// Output file naming (output_name.h): one parser of the pattern syntax, which expands a pattern
// for one process, tells whether its names differ per process, and turns it into a wildcard.
#include "proto/writer/output_name.h"

#include <sys/stat.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include "proto/settings/job_variables.h"
#include "proto/settings/setting_error.h"
#include "proto/writer/writer_impl.h"

namespace warpscope {
namespace {

// What the escapes stand for in one pass over a pattern.
struct EscapeValues {
  uint32_t pid = 0;
  uint32_t window = 1;  // %w
  std::string_view hostname;
  const OutputGetEnv* getenv_fn = nullptr;
  // Every escape becomes '*' and literal glob characters are escaped (OutputPatternGlob).
  bool wildcard = false;
};

// A pattern with its escapes other than %n substituted: the text between %n escapes (the
// sequence number goes between segments), and whether the last path component has a literal
// '.' after its first character (what decides if ".wst" is appended; substituted text never
// does).
struct ExpandedPattern {
  std::vector<std::string> segments = std::vector<std::string>(1);
  bool component_has_dot = false;
  bool component_empty = true;
  bool per_process = false;  // an escape gave a value that differs per process
  bool wildcard = false;

  void Append(std::string_view text, bool literal) {
    for (char c : text) {
      if (wildcard && literal && (c == '*' || c == '?' || c == '[' || c == '\\')) {
        segments.back() += '\\';
      }
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
  // The value of an escape (not literal text).
  void Substitute(std::string_view value) { Append(wildcard ? "*" : value, false); }
};

const char* GetEnv(const EscapeValues& values, const std::string& name) {
  return values.getenv_fn != nullptr && *values.getenv_fn ? (*values.getenv_fn)(name.c_str())
                                                          : nullptr;
}

// %r: the first rank variable set (and not empty), else "pid<PID>".
std::string RankOrPid(const EscapeValues& values) {
  for (std::string_view variable : kRankVariables) {
    const char* value = GetEnv(values, std::string(variable));
    if (value != nullptr && value[0] != '\0') return value;
  }
  return "pid" + std::to_string(values.pid);
}

// %q{NAME}: `i` is at the 'q'; on success moves it to the '}'.
bool SubstituteVariable(std::string_view pattern, size_t* i, const EscapeValues& values,
                        ExpandedPattern* out, std::string* why) {
  const size_t close = pattern.find('}', *i + 1);
  if (*i + 1 >= pattern.size() || pattern[*i + 1] != '{' || close == std::string_view::npos) {
    *why = "unterminated %q{; write %q{VARIABLE}";
    return false;
  }
  const std::string name(pattern.substr(*i + 2, close - (*i + 2)));
  if (name.empty()) {
    *why = "empty %q{}; write %q{VARIABLE}";
    return false;
  }
  const char* value = GetEnv(values, name);
  if (value != nullptr && value[0] != '\0') out->per_process = true;
  out->Substitute(value != nullptr ? value : "");
  *i = close;
  return true;
}

// Substitutes every escape but %n (in wildcard mode, %n too); on a malformed pattern returns
// false with *why set.
bool SubstituteEscapes(std::string_view pattern, const EscapeValues& values, ExpandedPattern* out,
                       std::string* why) {
  out->wildcard = values.wildcard;
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
        out->Substitute(std::to_string(values.pid));
        out->per_process = true;
        break;
      case 'r':
        out->Substitute(values.wildcard ? "*" : RankOrPid(values));
        out->per_process = true;
        break;
      case 'h':
        out->Substitute(values.hostname);
        break;
      case 'w':
        out->Substitute(std::to_string(values.window));
        break;
      case '%':
        out->Append("%", true);
        break;
      case 'n':
        if (values.wildcard) {
          out->Substitute("*");
        } else {
          out->segments.emplace_back();
        }
        out->component_empty = false;
        break;
      case 'q':
        if (!SubstituteVariable(pattern, &i, values, out, why)) return false;
        break;
      default:
        *why = std::string("unknown escape %") + escape +
               "; use %p, %h, %r, %q{VAR}, %n, %w or %% (or end with '/' for a folder)";
        return false;
    }
  }
  return true;
}

// The folder form stands for the file it names in the folder.
std::string FilePattern(std::string_view pattern) {
  std::string file(pattern);
  if (IsFolderPattern(pattern)) file += kFolderPatternFile;
  return file;
}

}  // namespace

bool IsFolderPattern(std::string_view pattern) { return !pattern.empty() && pattern.back() == '/'; }

bool ExpandOutputPattern(std::string_view pattern, uint32_t pid, std::string_view hostname,
                         const OutputGetEnv& getenv_fn,
                         const std::function<bool(const std::string&)>& file_exists,
                         std::string* out, std::string* error, uint32_t window) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  try {
    auto fail = [&](std::string_view why) {
      *error = "warpscope: output name " + QuoteValue(pattern) + ": " + std::string(why);
      return false;
    };
    ExpandedPattern expanded;
    std::string why;
    const EscapeValues values{
        .pid = pid, .window = window, .hostname = hostname, .getenv_fn = &getenv_fn};
    if (!SubstituteEscapes(FilePattern(pattern), values, &expanded, &why)) return fail(why);
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

bool OutputPatternHasWindow(std::string_view pattern) {
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (pattern[i + 1] == 'w') return true;
    ++i;  // "%%" and the other escapes: skip the escaped character
  }
  return false;
}

bool OutputPatternIsPerProcess(std::string_view pattern, const OutputGetEnv& getenv_fn) {
  ExpandedPattern expanded;
  std::string why;
  EscapeValues values;
  values.getenv_fn = &getenv_fn;
  return SubstituteEscapes(FilePattern(pattern), values, &expanded, &why) && expanded.per_process;
}

std::string WithSuffixBeforeExtension(std::string_view name, std::string_view suffix) {
  const size_t slash = name.rfind('/');
  const size_t start = slash == std::string_view::npos ? 0 : slash + 1;
  const size_t dot = name.rfind('.');
  std::string out(name);
  if (dot == std::string_view::npos || dot <= start) return out.append(suffix);
  return out.insert(dot, suffix);
}

std::string OutputPatternGlob(std::string_view pattern) {
  ExpandedPattern expanded;
  std::string why;
  EscapeValues values;
  values.wildcard = true;
  if (!SubstituteEscapes(FilePattern(pattern), values, &expanded, &why)) return "";
  return expanded.segments[0] + (expanded.component_has_dot ? "" : ".wst");
}

bool MakeOutputFolder(const std::string& trace_path, std::string* error) {
  const size_t slash = trace_path.rfind('/');
  if (slash == std::string::npos || slash == 0) return true;  // the current folder, or /
  const std::string folder = trace_path.substr(0, slash);
  if (::mkdir(folder.c_str(), 0755) == 0) return true;
  const int err = errno;
  struct stat st {};
  if (err == EEXIST && ::stat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return true;
  *error = "warpscope: cannot create the trace folder " + QuoteValue(folder) + ": " +
           (err == EEXIST ? std::string("a file has that name") : writer_internal::ErrnoText(err)) +
           "; choose another output folder";
  return false;
}

}  // namespace warpscope
