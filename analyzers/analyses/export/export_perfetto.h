// `warpscope export --format perfetto`: traces as Perfetto's native protobuf trace (a `Trace`
// of `TracePacket`s, analyses/export_perfetto.proto), which Perfetto UI and its trace
// processor load without conversion. docs/export.md lists every track and event.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_PERFETTO_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_PERFETTO_H_

#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analyzers/analyses/export/export_common.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// The content of the Chrome export (export_chrome.h) as Perfetto tracks: one process track
// per trace; a thread track per host thread with API calls, push/pop NVTX ranges (slices)
// and marks (instants); a track per GPU stream with kernels, copies and memsets; flows from
// each launching API call to its GPU work; a counter track per PM metric and device; tracks
// for start/end NVTX ranges and capture windows. Slices that overlap without nesting go to
// extra tracks beside their own ("... overlapping N"), since a Perfetto track's slices must
// nest. Timestamps are ns on the trace's clock (Header.clock_domain), declared as Perfetto's
// trace clock; event names, categories and argument names are interned on one sequence.
// Written to `out` as the packets are made. The events are read kind by kind (ForEachEvent)
// and put in order through temporary files (spill_sort.h), so memory does not grow with them
// but for LaunchCalls (24 bytes per API call); the temporary files take up to twice the
// output's size. Errors: those of reading a trace again and of the temporary files.
absl::Status WritePerfettoTrace(std::span<const TraceModel* const> models, ExportOutput& out);
// The same as a string (tests).
absl::StatusOr<std::string> ExportPerfettoTrace(std::span<const TraceModel* const> models);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_EXPORT_PERFETTO_H_
