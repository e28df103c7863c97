// `warpscope summary`: per-device kernel and memory-operation statistics, CUDA API
// statistics, NVTX ranges with the GPU work launched inside them, and GPU busy/idle time, for
// one trace or several (one per rank) with a combined view. Columns follow Nsight Systems'
// cuda_gpu_kern_sum / cuda_api_sum / nvtx_gpu_proj_sum / nvtx_kern_sum reports.
#ifndef WARPSCOPE_ANALYZERS_ANALYSES_SUMMARY_H_
#define WARPSCOPE_ANALYZERS_ANALYSES_SUMMARY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/analyses/memory.h"
#include "analyzers/measures/duration_sketch.h"
#include "analyzers/measures/nvtx_projection.h"
#include "analyzers/render/output.h"
#include "analyzers/render/report.h"
#include "analyzers/render/short_names.h"
#include "analyzers/model/trace_model.h"

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
  // From a sketch: median and deviation exact up to DurationSketch::kExactValues instances,
  // then within its stated error.
  static DurationStats Of(const DurationSketch& sketch);
};

// One row of the kernel or API tables: all instances sharing a name.
struct NamedDurations {
  std::string name;
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
  // Records that came after their place in time had been folded (IntervalUnionStream, more
  // than its window out of file order): busy_ns may count idle time before them as busy.
  uint64_t late_records = 0;
  uint64_t span_ns() const { return end_ns - begin_ns; }
};

// One kernel name or memory operation launched inside an NVTX range group (nvtx-kernels).
struct NvtxWorkSummary {
  std::string name;
  GpuWorkTotals time;
  double range_percent = 0;  // of the range group's GPU time
};

// One row of the NVTX table: the instances of one range (domain, path, thread) with their
// host time and the GPU work launched inside them (nvtx_projection.h).
struct NvtxRangeSummary {
  std::string domain;
  std::string name;
  std::string path;
  bool all_threads = false;  // the combined view over traces
  uint32_t os_tid = 0;       // 0 = unknown
  std::string thread_name;
  DurationStats cpu;  // host time of the instances
  uint64_t gpu_time_ns = 0;
  uint64_t gpu_span_ns = 0;
  uint64_t kernels = 0;
  uint64_t copies = 0;
  uint64_t graph_launches = 0;
  uint64_t cut_instances = 0;
  std::vector<NvtxWorkSummary> work;  // by GPU time; filled for the nvtx-kernels report
  // GPU time over host time; 0 when the host time is 0.
  double gpu_cpu_ratio() const {
    return cpu.total_ns == 0 ? 0 : static_cast<double>(gpu_time_ns) / cpu.total_ns;
  }
};

// One row of the syncs and launch-sites reports: the calls made from one call site
// (measures/call_sites.h) of one trace.
struct CallSiteSummary {
  std::string site;      // "train.py:57", or why there is none ("no stack", ...)
  std::string function;  // "train_step"
  std::string source_file;  // the whole path; "" when the call has no frame
  uint32_t line = 0;        // Python: the line; 0 for native frames and none
  bool stack_cut = false;   // found past frames the recorder left out (CallSite::past_cut)
  // syncs: the CUDA calls that waited there ("cudaStreamSynchronize", "cudaMemcpyAsync");
  // launch-sites: the kernels launched there. Most time first.
  std::vector<std::string> calls;
  DurationStats time;        // syncs: host time blocked; launch-sites: kernel time
  double time_percent = 0;   // of the table's total for the trace
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
  std::vector<NvtxRangeSummary> nvtx_ranges;
  std::vector<CallSiteSummary> syncs;         // host time blocked, by call site
  std::vector<CallSiteSummary> launch_sites;  // kernel time, by the site that launched it
  uint64_t api_stacks = 0;  // calls with a recorded stack (0: recorded without stacks)
  // What the GPU projection of NVTX ranges rests on (0 for the combined view).
  uint64_t api_call_records = 0;
  uint64_t gpu_records = 0;
  uint64_t gpu_records_without_api_call = 0;
  // Device memory over time (memory.h DigestMemory), with the memory report; no events and no
  // devices when the trace has no memory events (and for the combined view).
  MemoryDigest device_memory;
};

enum class SummarySort { kTotal, kCount, kAvg, kMax, kName };

struct SummaryOptions {
  SummarySort sort = SummarySort::kTotal;
  size_t top = 0;  // rows per table; 0 = all
  bool kernels = true;
  bool api = true;
  bool memory = true;
  bool nvtx = true;
  bool nvtx_kernels = false;  // per NVTX range group, the kernels and copies it launched
  bool idle = true;
  bool syncs = false;         // host time blocked in syncs and blocking copies, by call site
  bool launch_sites = false;  // kernel time by the call site that launched it
  KernelNames names;  // how kernel names show: whole, or short (--short-names, short_names.h)
  size_t name_width = 0;     // cut names in text tables to this many columns; 0 = whole
  // NVTX rows by the names as written; by default numbered ranges are one row (step_<N>).
  bool literal_ranges = false;
  // The combined view (labelled "*", last) for a single trace too: every device's work and
  // the NVTX ranges over all threads (diff compares traces by it).
  bool combined = false;
};

// Parses --sort (total|count|avg|max|name) and --report (comma-separated subset of
// kernels,api,memory,nvtx,nvtx-kernels,idle,syncs,launch-sites) into `options`. `total` orders the NVTX table by
// GPU time (host time breaks ties); `count`, `avg` and `max` by the host time figures.
absl::Status ParseSummarySort(std::string_view name, SummaryOptions* options);
absl::Status ParseSummaryReports(std::string_view list, SummaryOptions* options);

// Summarizes one trace from its tables (loaded whole: TraceModel::Load's default). Rows are
// sorted and cut to options.top.
TraceSummary SummarizeTrace(const TraceModel& model, std::string label,
                            const SummaryOptions& options);
// Summarizes several traces from their tables: one TraceSummary per trace, then (for two or
// more) a combined one labelled "*" whose single DeviceSummary covers every device of every
// trace.
std::vector<TraceSummary> SummarizeTraces(const std::vector<const TraceModel*>& models,
                                          const std::vector<std::string>& labels,
                                          const SummaryOptions& options);
// The same for models loaded with SummaryLoadOptions: each trace's GPU work and API calls are
// read again from its file in one pass and folded as they come (kernels, copies and calls by
// name in DurationSketch, busy time in IntervalUnionStream, the NVTX projection bounded by
// NvtxProjector::kFileOrderInFlight), so that memory grows with names and NVTX ranges, not
// with events. Errors: those of reading a file again.
absl::StatusOr<std::vector<TraceSummary>> SummarizeTraceFiles(
    const std::vector<const TraceModel*>& models, const std::vector<std::string>& labels,
    const SummaryOptions& options);
// What SummarizeTraceFiles needs loaded: the NVTX ranges (and, for the syncs and launch-sites
// reports or --short-names, every table: they read the calls and kernels whole).
TraceModelOptions SummaryLoadOptions(const SummaryOptions& options, bool short_names);

// The summaries as a report, as the CLI (text, CSV, JSON) and Python give it: one table per
// report asked for in `options` (whole names, durations in ns, with `file` and `device`
// columns), named kernels, api, memory, nvtx, nvtx_kernels, idle, syncs, launch_sites. Its text
// form: a section per trace and device with human durations; its notes: what limits the NVTX
// GPU figures of each trace (GPU work without API records, ranges cut by capture windows),
// each starting "TRACE: ".
Report SummaryReport(const std::vector<TraceSummary>& summaries, const SummaryOptions& options);

// Device memory (summary_memory.cc), with the memory report, for traces with memory events: the
// table `device_memory` (one row per trace and device: peak in use, reserved, capacity, who
// held the peak, growth per steady step and whether it is a leak, refused requests), and per
// trace a line per leak and refused request (DeviceMemoryLines). HasDeviceMemory: whether
// any trace has a row (without, no table is added: the reports stay as they were).
bool HasDeviceMemory(const std::vector<TraceSummary>& summaries);
Table DeviceMemoryTable(const std::vector<TraceSummary>& summaries, bool human);
std::vector<std::string> DeviceMemoryLines(const TraceSummary& summary);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_ANALYSES_SUMMARY_H_
