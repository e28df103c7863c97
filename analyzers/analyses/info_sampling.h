// What PM and PC sampling produced in a trace, for `warpscope info`: the samples of each PM
// metric set, and PC sampling's figures with, for a run that asked for samples and got none,
// the likeliest reason.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_INFO_SAMPLING_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_INFO_SAMPLING_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/model/trace_model.h"

namespace warpscope {

// One metric set's samples, for the "pm sampling" lines.
struct PmSetSummary {
  const PmMetricSet* set = nullptr;
  uint64_t samples = 0;
  uint64_t sampled_ns = 0;  // sum of the samples' durations
};

std::vector<PmSetSummary> SummarizePm(const TraceModel& m);

// The value of the writer's stats counter `name`; 0 when the trace has none of that name.
uint64_t StatCounterValue(const TraceModel& m, std::string_view name);

// PC sampling as the trace tells it: whether it was asked for, what came of it, and for a
// run with no samples the likeliest reason (from the collector's own counters).
struct PcSummary {
  bool requested = false;  // WARPSCOPE_PC_SAMPLING in the header, or any PC data
  uint64_t samples = 0, dropped = 0, buffer_full = 0, batches = 0, pc_records = 0;
  uint64_t cubins = 0, cubin_bytes = 0, contexts = 0, cupti_total = 0, non_user = 0;
  std::string diagnosis;  // empty unless sampling was on and produced no samples
};

PcSummary SummarizePc(const TraceModel& m);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_INFO_SAMPLING_H_
