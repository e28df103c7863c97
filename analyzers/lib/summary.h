// `warpscope summary`: per-device kernel and memory-operation statistics, CUDA API and NVTX
// range statistics, and GPU busy/idle time, for one trace or several (one per rank) with a
// combined view. Columns follow Nsight Systems' cuda_gpu_kern_sum / cuda_api_sum reports.
#ifndef WARPSCOPE_ANALYZERS_LIB_SUMMARY_H_
#define WARPSCOPE_ANALYZERS_LIB_SUMMARY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/lib/output.h"
#include "analyzers/lib/trace_model.h"

namespace warpscope {

// Count, total, average, median, extremes and sample standard deviation of durations (ns).
struct DurationStats {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  double avg_ns = 0;
  double median_ns = 0;  // mean of the two middle values for an even count
  double stddev_ns = 0;  // sample standard deviation (n - 1); 0 for fewer than 2 values

  // Sorts `durations` in place.
  static DurationStats Of(std::vector<uint64_t>& durations);
};

// One row of the kernel, API or NVTX tables: all instances sharing a name.
struct NamedDurations {
  std::string name;
  std::string domain;  // NVTX domain ("" = default); empty for kernels and API calls
  DurationStats time;
  double time_percent = 0;  // of the table's total time
};

// One row of the memory table: one operation kind ("[CUDA memcpy HtoD]", "[CUDA memset]").
struct MemoryOperationSummary {
  std::string operation;
  DurationStats time;
  double time_percent = 0;
  uint64_t total_bytes = 0;
  uint64_t min_bytes = 0;
  uint64_t max_bytes = 0;
  double avg_bytes = 0;
};

// GPU activity (kernels, memcpy, memset) on one device, from its first start to its last end.
struct GpuBusy {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint64_t busy_ns = 0;  // union of activity intervals
  uint64_t idle_ns = 0;  // span - busy
  uint64_t gaps = 0;     // idle stretches between activities
  uint64_t longest_gap_ns = 0;
  uint64_t span_ns() const { return end_ns - begin_ns; }
};

struct DeviceSummary {
  bool all_devices = false;  // the combined view over every trace and device
  uint32_t device_id = 0;
  std::string device_name;  // "" when the trace has no Device packet for it
  std::vector<NamedDurations> kernels;
  std::vector<MemoryOperationSummary> memory;
  bool has_busy = false;  // false without GPU activity, and for the combined view
  GpuBusy busy;
};

struct TraceSummary {
  std::string label;  // the trace's path, or "*" for the combined view
  std::vector<DeviceSummary> devices;
  std::vector<NamedDurations> api_calls;
  std::vector<NamedDurations> nvtx_ranges;
};

enum class SummarySort { kTotal, kCount, kAvg, kMax, kName };

struct SummaryOptions {
  SummarySort sort = SummarySort::kTotal;
  size_t top = 0;  // rows per table; 0 = all
  bool kernels = true;
  bool api = true;
  bool memory = true;
  bool nvtx = true;
  bool idle = true;
};

// Parses --sort (total|count|avg|max|name) and --report (comma-separated subset of
// kernels,api,memory,nvtx,idle) into `options`.
absl::Status ParseSummarySort(std::string_view name, SummaryOptions* options);
absl::Status ParseSummaryReports(std::string_view list, SummaryOptions* options);

// Summarizes one trace. Rows are sorted and cut to options.top.
TraceSummary SummarizeTrace(const TraceModel& model, std::string label,
                            const SummaryOptions& options);
// Summarizes several traces: one TraceSummary per trace, then (for two or more) a combined
// one labelled "*" whose single DeviceSummary covers every device of every trace.
std::vector<TraceSummary> SummarizeTraces(const std::vector<const TraceModel*>& models,
                                          const std::vector<std::string>& labels,
                                          const SummaryOptions& options);

// Table: sections per trace and device with human durations. CSV: one table per report
// (with `file` and `device` columns, durations in ns), each preceded by a "# report: NAME"
// line, separated by blank lines. JSON: one object with an array of rows per report.
std::string RenderSummary(const std::vector<TraceSummary>& summaries, OutputFormat format,
                          const SummaryOptions& options);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_LIB_SUMMARY_H_
