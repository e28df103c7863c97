// Trace file names: the output pattern (%p, %h, %r, %q{VAR}, %n, %w, %%, and the folder form
// "DIR/") expanded into one process's file name, the checks a process of a job makes on it,
// and the wildcard that finds every name a pattern gave. Plain C++: the injected library
// expands names with it, `warpscope record` checks and finds them with it.
#ifndef WARPSCOPE_PROTO_WRITER_OUTPUT_NAME_H_
#define WARPSCOPE_PROTO_WRITER_OUTPUT_NAME_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace warpscope {

using OutputGetEnv = std::function<const char*(const char*)>;

// The file a folder pattern names in its folder: one trace per rank.
inline constexpr std::string_view kFolderPatternFile = "rank%r.wst";

// Whether `pattern` is the folder form: it ends in '/', and each process writes
// DIR/rank%r.wst in that folder.
bool IsFolderPattern(std::string_view pattern);

// Expands an output name pattern: %p pid, %h host name, %r the process's global rank (the
// first of proto/settings/job_variables.h's kRankVariables set and not empty; "pid<PID>" where
// none is), %q{VAR} environment variable (empty when unset), %n the smallest sequence number
// >= 1 that names no existing file, %w the capture window's (or flight-recorder dump's)
// number `window`, %% a '%'. A pattern that ends in '/' is a folder:
// DIR/ stands for DIR/rank%r.wst. Appends ".wst" when the result has no extension: when the
// last path component has no '.' written literally in the pattern after its first character
// (a '.' from %h or %q{} does not count, so "trace_%h" on host "node1.cluster" still gets
// ".wst"). Returns false and sets *error (one line starting with "warpscope:") for an unknown
// escape, a lone trailing '%', an unterminated or empty %q{}, or when %n finds no free number
// up to 1000000.
bool ExpandOutputPattern(std::string_view pattern, uint32_t pid, std::string_view hostname,
                         const OutputGetEnv& getenv_fn,
                         const std::function<bool(const std::string&)>& file_exists,
                         std::string* out, std::string* error, uint32_t window = 1);

// Whether `pattern` has the %w escape (one file per capture window or dump).
bool OutputPatternHasWindow(std::string_view pattern);

// Whether every process that expands `pattern` gets a name of its own here: it has %p or %r
// (a rank, else the pid), is the folder form, or has a %q{VAR} whose VAR is set and not empty
// in this process. False for a malformed pattern.
bool OutputPatternIsPerProcess(std::string_view pattern, const OutputGetEnv& getenv_fn);

// `name` (a pattern or a file name) with `suffix` before the extension of its last component,
// or at its end when that has no '.' after its first character: ("run.wst", "_%p") gives
// "run_%p.wst", ("out.d/run", "_7") gives "out.d/run_7".
std::string WithSuffixBeforeExtension(std::string_view name, std::string_view suffix);

// The names `pattern` gives, as a glob(3) pattern: each escape becomes '*', and the literal
// characters glob would read ('*', '?', '[', '\') are escaped; ".wst" is appended as
// ExpandOutputPattern appends it. Empty for a malformed pattern.
std::string OutputPatternGlob(std::string_view pattern);

// Creates the folder that holds `trace_path` (a name expanded from a folder pattern), one
// level, mode 0755. True when the folder is there afterwards; else *error is one line
// starting with "warpscope:".
bool MakeOutputFolder(const std::string& trace_path, std::string* error);

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_WRITER_OUTPUT_NAME_H_
