// The traces a command line names: files as given, a folder for the .wst files in it (as
// `record -o DIR/` writes one per rank), and a glob ("run/rank_*.wst", quoted so that the shell
// leaves it) for the files it matches. Every command and Python entry that reads traces
// expands its arguments here, so they all take the same things.
#ifndef WARPSCOPE_ANALYZERS_MODEL_TRACE_PATHS_H_
#define WARPSCOPE_ANALYZERS_MODEL_TRACE_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace warpscope {

// The trace files `args` stand for, in order; a folder's and a glob's by name. An argument
// that exists is taken as it is (a file whose name holds '*' included). Errors
// (InvalidArgument, naming the argument): a folder without .wst files, a glob that matches
// nothing, no argument at all.
absl::StatusOr<std::vector<std::string>> ExpandTracePaths(const std::vector<std::string>& args);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_TRACE_PATHS_H_
