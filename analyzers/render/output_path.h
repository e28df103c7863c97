// Checks that an output file or directory named on the command line (`record -o`, `tail --svg`,
// `export --format parquet -o DIR`) can be written, before the work that produces it starts,
// so that a typo costs one line and not a whole run.
#ifndef WARPSCOPE_ANALYZERS_RENDER_OUTPUT_PATH_H_
#define WARPSCOPE_ANALYZERS_RENDER_OUTPUT_PATH_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace warpscope {

// Whether `path` can be created or replaced by this process: not empty, not a directory, in a
// directory that exists and that this user may create files in; an existing file must be
// writable. Returns true when a file is already there (the caller decides whether replacing it
// is wanted), false when it would be created. Errors are InvalidArgument with one line that
// names `flag` (e.g. "--svg") and says what to do; `example_name` (e.g. "tail.svg") is offered
// as a file name when `path` is a directory.
absl::StatusOr<bool> CheckOutputPath(const std::string& path, std::string_view flag,
                                     std::string_view example_name);

// The same for an output directory: an existing one must let this user create files in it; a
// new one must go into a directory that exists (it is not made here, nor any directory above
// it). Returns true when the directory is there, false when it would be created.
absl::StatusOr<bool> CheckOutputDirectory(const std::string& path, std::string_view flag);

// Writes `content` to `path`, the value of `flag`; the error names both and errno's text.
absl::Status WriteOutputFile(const std::string& path, const std::string& flag,
                             const std::string& content);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_RENDER_OUTPUT_PATH_H_
