// One run of `warpscope export` in chrome, perfetto or kineto: the destination checked before
// any trace is read, the traces loaded as the format needs them, the files written. The CLI's
// export command and the Python package's warpscope.export share it (Parquet is written by
// the package itself).
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_RUN_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_RUN_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/analyses/slice.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// The formats, in the order the help lists them.
inline constexpr const char* kExportFormats[] = {"chrome", "perfetto", "kineto", "parquet"};

// The options of an export besides its format and output: the slice options (slice.h),
// --step-range and --all. The CLI makes its flags of them; Python its keywords.
std::vector<AnalysisOption> ExportOptions();

struct ExportRequest {
  std::string format;               // chrome, perfetto or kineto
  std::string output;               // a file, a directory (kineto of several traces) or "-"
  std::vector<std::string> traces;  // the trace files, folders and globs expanded
  SliceRequest slice;
  std::string step_range;  // kineto's ProfilerStep#N and --step's numbering
  bool all = false;        // write a whole trace however large
};

// The request of `values` (options of ExportOptions()): InvalidArgument naming the flag.
absl::StatusOr<ExportRequest> ExportRequestOf(std::string format, std::string output,
                                              std::vector<std::string> traces,
                                              const OptionValues& values);

// Checks what can be checked before the traces are read, and makes kineto's directory:
// a whole trace over the size limit without --all, stdout for several kineto files, an
// output path that cannot be written. InvalidArgument (a usage error) saying what to do.
absl::Status PrepareExport(const ExportRequest& request);

// Only what the format reads (chrome and kineto stream their events from the file).
TraceModelOptions ExportLoadOptions(const std::string& format);

// Writes the export of `traces` (the request's, loaded with ExportLoadOptions) and returns the
// paths written ("-" for stdout). An error is the traces' or the output's (an input error).
absl::StatusOr<std::vector<std::string>> WriteExport(const ExportRequest& request,
                                                     const std::vector<const TraceModel*>& traces);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_RUN_H_
