// `warpscope info`: what a trace holds (header, devices, event counts, time span, stats
// counters, notices, import problems, truncation), as a report.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_INFO_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_INFO_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/analyses/info_coverage.h"
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

// The figures as a report (info_report.cc), as the CLI (text, CSV, JSON) and Python give it:
// scalars (the trace, header, span, how it ended, truncation, worst severity) and tables
// devices, events (a row per packet kind), capture_windows, counters (stats and import
// counters with severity and meaning), notices, header_values (rank variables and recording
// settings from the header), pm_metric_sets, pc_sampling (one row when PC sampling was asked
// for), sampling_coverage (a row per kind of sampling: what of the kernel time it saw) and
// sampling_holes (the largest stretches of kernel work without samples). Its text form:
// the header, devices, events, sampling, counters and notices for people, with lost data and
// truncation last.
Report TraceInfoReport(const TraceModel& model, const TraceInfoOptions& options = {});

// The text form of TraceInfoReport, into `out`'s text blocks (info.cc).
void AddTraceInfoText(const TraceModel& model, const std::string& name,
                      const InfoSamplingCoverage& coverage, Report& out);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_INFO_H_
