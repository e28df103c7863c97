// The part of a trace an analysis or an export reads: --from/--to (ms from the trace's
// start), --step N or N-M (steps as the step rule names them, measures/steps.h) and --window
// K (capture window K), one option set shared by every analysis row (the CLI's runner, the
// Python extension) and the export command. The slice is applied while the trace loads
// (TraceModelOptions::slice): only the timed events that overlap it are kept, events that
// straddle an edge whole, with every definition; memory and time shrink with the slice.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_SLICE_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_SLICE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/analyses/analysis.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

struct SliceRequest {
  std::optional<uint64_t> from_ns, to_ns;  // --from/--to, or --window START:END (ms)
  std::optional<uint64_t> first_step, last_step;  // --step N or N-M
  std::optional<uint32_t> window;  // --window K
  std::string step_range;  // the NVTX range that marks steps ("" = the step rule's choice)
  std::string flags;       // the flags as given, for messages ("--step 3-5")
  bool empty() const { return flags.empty(); }
};

// The options: from, to, step, window. Every row that loads traces takes them
// (analysis_list.cc); the export command makes its flags of them.
std::vector<AnalysisOption> SliceOptions();

// The request in `values` (options of SliceOptions; step_range from --step-range when the
// row has one). InvalidArgument naming the flag: a time that is not a number of ms >= 0,
// --to not after --from, a step range N-M with M < N, a window not K or START:END, or two
// ways of slicing given together.
absl::StatusOr<SliceRequest> ParseSlice(const OptionValues& values);

// The request of one run of `row`, once its traces are known: InvalidArgument when a slice is
// given to a run that reads its traces itself (the ranks of a job).
absl::StatusOr<SliceRequest> SliceOfRun(const AnalysisRow& row, const AnalysisInputs& in,
                                        const OptionValues& values);

// Loads `path` with `options` and the request's slice: steps and capture windows are found
// by a first pass that reads only NVTX ranges and the trace's own packets. An error naming
// the trace's time range, steps or windows when the slice selects nothing.
absl::StatusOr<TraceModel> LoadSlicedTrace(const std::string& path, TraceModelOptions options,
                                           const SliceRequest& request);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_SLICE_H_
