// `warpscope info`: what a trace holds (header, devices, event counts, time span, stats
// counters, notices, import problems, truncation), rendered as text or JSON.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_INFO_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_INFO_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/render/output.h"
#include "analyzers/render/report.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// Events per packet kind, named as the TracePacket oneof fields ("kernel", "memcpy", ...),
// in schema order; kinds with no events are included (count 0).
std::vector<std::pair<std::string, uint64_t>> CountEventsByKind(const TraceModel& model);

// Formats ns since the epoch as "2026-11-21T00:20:01.123456789Z"; "" for 0.
std::string FormatUtcTimestamp(uint64_t unix_ns);

struct TraceInfoOptions {
  std::string display_name;  // shown as the trace's name; model.source_name when empty
};

// OutputFormat::kTable gives the text report, kJson one nested object; kCsv renders as JSON
// (the CLI's CSV is TraceInfoReport's).
std::string RenderTraceInfo(const TraceModel& model, OutputFormat format,
                            const TraceInfoOptions& options = {});

// The figures as a report (info_report.cc): scalars (the trace, header, span, truncation,
// worst severity) and tables devices, events (a row per packet kind), capture_windows,
// counters (stats and import counters with severity and meaning) and notices.
Report TraceInfoReport(const TraceModel& model, const TraceInfoOptions& options = {});

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_INFO_H_
