// `warpscope export --format chrome`: traces as Chrome trace-event JSON, the format that
// chrome://tracing, Perfetto UI and Perfetto's trace processor load. docs/export.md
// lists every track, event and argument.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_CHROME_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_CHROME_H_

#include <span>
#include <string>

#include "absl/status/status.h"
#include "analyzers/analyses/export/export_common.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// One process per trace (rank). Host threads carry API calls, NVTX ranges and marks; one
// thread per GPU stream (per device) carries kernels, copies and memsets; a flow goes from
// each API call to the GPU work it launched (correlation id); counter tracks carry the PM
// samples (GPU-wide active warps and every sampled metric); capture windows are async
// ranges (an instant when the window was still open at the end). Times are microseconds on
// one time line for all traces (export_common.h).
// Written to `out` as it is made; the events of each trace are read kind by kind from its
// model, or from its file for the tables the model was loaded without (ForEachEvent), so that a
// trace of any length is converted in memory that grows with its definitions and launches
// (LaunchCalls), not with its events. Errors: those of reading a trace file again.
absl::Status WriteChromeTraceJson(std::span<const TraceModel* const> models, ExportOutput& out);
// The same as a string, for models that hold all their events (tests).
std::string ExportChromeTraceJson(std::span<const TraceModel* const> models);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_CHROME_H_
