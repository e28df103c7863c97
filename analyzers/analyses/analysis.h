// An analysis as a row of one list (analysis_list.cc): its name, the traces it reads, its
// options as rows and the function that runs it and returns a Report. The CLI's one runner
// (cli/analysis_runner.cc) parses a row's flags, loads its traces, runs it and renders the
// report; `warpscope help` lists the rows. Adding an analysis is its own files and one line in
// the list.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_ANALYSIS_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_ANALYSIS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/render/output.h"
#include "analyzers/render/report.h"
#include "analyzers/render/report_scope.h"
#include "analyzers/render/short_names.h"

namespace warpscope {

// The traces an analysis reads. Every kind takes files, folders and globs
// (model/trace_paths.h); the count is checked after they are expanded.
enum class AnalysisInput {
  kOneTrace,    // exactly one trace, loaded
  kOneOrMore,   // one or more traces (one per rank), loaded
  kPair,        // two traces, BASE and NEW, loaded
  kJob,         // the ranks of a job: the analysis reads the files itself, in parallel
  kTraceOrJob,  // one trace file (loaded), or the ranks of a job (a folder, several traces)
};

// What an option's value is; the runner checks it before any trace is read.
enum class OptionKind {
  kSwitch,      // no value: given or not
  kText,        // any text (a regex, a range name); the analysis checks it
  kCount,       // a whole number, 0 or more (capped at 2^20)
  kInteger,     // a whole number; the analysis checks its range
  kDevice,      // a device id, 0 or more
  kOutputFile,  // a file the analysis writes; checked as every output path (output_path.h)
};

struct AnalysisOption {
  AnalysisOption(std::string name_, std::string short_name_, OptionKind kind_,
                 std::string value_name_, std::string help_, std::string default_value_,
                 std::string example_file_ = "", bool required_ = false)
      : name(std::move(name_)), short_name(std::move(short_name_)), kind(kind_),
        value_name(std::move(value_name_)), help(std::move(help_)),
        default_value(std::move(default_value_)), example_file(std::move(example_file_)),
        required(required_) {}
  std::string name;        // long flag name without dashes, the Python keyword with '_'
  std::string short_name;  // one letter, or empty
  OptionKind kind = OptionKind::kText;
  std::string value_name;  // shown in help: "N", "REGEX", "FILE"
  std::string help;
  std::string default_value;  // what the analysis sees when the option is not given
  std::string example_file;   // kOutputFile: a file name offered when a folder is given
  bool required = false;      // the analysis cannot run without it (timeline's --svg)
};

// Options several analyses share, defined once: --short-names (every analysis that prints
// kernel names), -k/--kernel REGEX, --device N and -n/--top N (20) for the per-kernel rows,
// and --literal-ranges.
AnalysisOption ShortNamesOption();
AnalysisOption KernelRegexOption();
AnalysisOption KernelDeviceOption();
AnalysisOption TopKernelsOption();
AnalysisOption LiteralRangesOption();

// The options given to one run, against the row's option list. Check() validates every value
// by its kind; after it the getters cannot fail.
class OptionValues {
 public:
  OptionValues(const std::vector<AnalysisOption>* options, std::map<std::string, std::string> given)
      : options_(options), given_(std::move(given)) {}

  // InvalidArgument naming the flag: a count below 0, a number that is not one, ...
  absl::Status Check() const;

  bool Has(std::string_view name) const;  // given (a switch: given and not false)
  std::string Text(std::string_view name) const;  // the value or the default
  size_t Count(std::string_view name) const;
  int64_t Integer(std::string_view name) const;
  std::optional<uint32_t> Device(std::string_view name = "device") const;

 private:
  const AnalysisOption* Find(std::string_view name) const;
  const std::vector<AnalysisOption>* options_;
  std::map<std::string, std::string> given_;
};

// Kernel names as --short-names asks (render/short_names.h): whole without it; with it, short
// and distinct over every kernel name of `traces` (read again where a trace was loaded without
// its kernels) and `more` (names a report takes from elsewhere, such as PC samples).
KernelNames KernelNamesOf(const OptionValues& options,
                          const std::vector<const TraceModel*>& traces,
                          const std::vector<std::string_view>& more = {});

// Of occupancy, tail and stalls: no event table, no samples (PC sample batches without their
// records). Occupancy and tail read the kernels and the PM samples again one at a time
// (ForEachEvent, ForEachPmSample) and sort them through temporary files (pm_sweep.h); stalls
// reads the kernels and the PC records again (ForEachEvent, ForEachPcRecords). Memory grows
// with neither.
TraceModelOptions SamplesReadAgainLoad(const OptionValues& options);

// What the runner hands an analysis: the trace files (expanded) and, for the kinds that are
// loaded, the models in the same order.
struct AnalysisInputs {
  std::vector<std::string> given;  // the arguments as typed
  std::vector<std::string> paths;  // the trace files they stand for
  std::vector<const TraceModel*> traces;
  // What the caller renders of the report (default: every table).
  ReportScope scope;
};

// A file an analysis made besides its report (an SVG, an HTML page), written by the runner
// to the path of its kOutputFile option.
struct AnalysisFile {
  std::string option;   // the option that named the path, e.g. "svg"
  std::string content;
  std::string detail;   // said after the path on stderr ("wrote x.svg (detail)"); may be empty
};

struct AnalysisResult {
  Report report;
  std::vector<AnalysisFile> files;
  // Lines for stderr after the report (each starts "warpscope: "): what limits the figures.
  std::vector<std::string> notices;
  // A verdict for scripts: the exit status (diff --fail-on-regression: 3), with its line.
  int exit_status = 0;
  std::string exit_message;
};

// Errors: InvalidArgument is a usage error (exit status 2: options or traces that do not fit
// the analysis); every other code is an input error (exit status 1).
using AnalysisFunction = absl::StatusOr<AnalysisResult> (*)(const AnalysisInputs& inputs,
                                                             const OptionValues& options);
// An error of the traces themselves, whatever its code: an input error (exit status 1).
absl::Status AsInputError(const absl::Status& status);

struct AnalysisRow {
  std::string name;     // the command: `warpscope NAME`
  std::string summary;  // one line for `warpscope help`
  std::string usage;    // after the name in the usage line: "TRACE.wst [flags]"
  std::string about;    // what --help says after the flags: method, needs, docs page
  AnalysisInput input = AnalysisInput::kOneTrace;
  std::vector<AnalysisOption> options;
  // Checks the options the analysis parses itself (a sort key, a window), before any trace
  // is read; nullptr: none. InvalidArgument naming the flag.
  absl::Status (*check)(const OptionValues& options) = nullptr;
  // How the traces are loaded (only what the analysis reads); nullptr: everything.
  TraceModelOptions (*load_options)(const OptionValues& options) = nullptr;
  AnalysisFunction run = nullptr;
};

// What every caller of a row checks before it runs it (the CLI's runner, the Python
// extension), written once. The options' values by kind, the row's own check, then the
// output files (a required one given, each path one that can be written): InvalidArgument
// naming the option.
absl::Status CheckRowOptions(const AnalysisRow& row, const OptionValues& values);
// Writes a file the analysis made to the path of its option; the error names both.
absl::Status WriteAnalysisFile(const AnalysisFile& file, const OptionValues& values);
// The expanded traces fit the row's input kind (the count, after folders and globs):
// InvalidArgument saying what it reads.
absl::Status CheckTraceCount(const AnalysisRow& row, const AnalysisInputs& in);
// Whether the row reads these files as loaded models (else it reads them itself, as a job).
bool LoadsTraces(const AnalysisRow& row, const AnalysisInputs& in);

// The list, in the order `warpscope help` gives it.
const std::vector<AnalysisRow>& AnalysisRows();
const AnalysisRow* FindAnalysis(std::string_view name);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_ANALYSIS_H_
