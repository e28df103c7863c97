// What the export formats (Chrome trace-event JSON, Kineto JSON) share: which rank each trace
// is, how it is labelled, and the offset that puts several traces on one time line.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_COMMON_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_COMMON_H_

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include "analyzers/model/trace_model.h"

namespace warpscope {

struct ExportedTrace {
  const TraceModel* model = nullptr;
  int64_t rank = 0;    // RANK (or a launcher's equivalent) from the header, else the position
  std::string label;   // "rank 0: host (pid 123)"
  // Added to the trace's times (ns since its time 0) so that traces recorded together share
  // one time line: each trace's wall-clock start minus the earliest one's. 0 for every trace
  // when one of them lacks a wall-clock start (Header.unix_time_base_ns).
  uint64_t offset_ns = 0;
};

// The traces in the order given, with ranks, labels and offsets filled in.
std::vector<ExportedTrace> PrepareExport(std::span<const TraceModel* const> models);

// Nanoseconds as exact microseconds ("12.345"), the unit of trace-event timestamps.
std::string TraceEventMicros(uint64_t ns);

// The API call that launched each correlation id (a runtime call rather than the driver call
// beneath it when both were traced), as indices into model.api_calls.
std::vector<std::pair<uint32_t, uint32_t>> LaunchCallsByCorrelation(const TraceModel& model);
// Looks `correlation_id` up in the sorted table LaunchCallsByCorrelation returns; nullptr when
// no API call has it.
const ApiCallEvent* FindLaunchCall(const TraceModel& model,
                                   const std::vector<std::pair<uint32_t, uint32_t>>& table,
                                   uint32_t correlation_id);

// Host thread ids as the OS knows them (ThreadInfo.os_tid) by warpscope's thread id.
class HostTids {
 public:
  explicit HostTids(const TraceModel& model);
  // The OS thread id, else warpscope's own id when the trace does not know it.
  int64_t Of(uint64_t thread_id) const;

 private:
  std::map<uint64_t, int64_t> os_tid_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_EXPORT_COMMON_H_
