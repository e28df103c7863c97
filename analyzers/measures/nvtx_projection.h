// NVTX GPU projection: the GPU work (kernels, copies, memsets, CUDA graph launches) that was
// launched while each NVTX range was open, found through the correlation id of the launching
// runtime/driver API call, as in Nsight Systems' nvtx_gpu_proj_sum and nvtx_kern_sum.
//
// Rules (docs/cli.md, "NVTX GPU projection"):
// - A range claims the API calls that start inside [start, end] on the thread that opened
//   it, and through their correlation ids the GPU records they launched.
// - Figures are inclusive: work launched inside a nested range also counts for every range
//   around it, each in its own row (as host time does).
// - Push/pop ranges nest on their thread; a range's path joins the names of the push/pop
//   ranges around it and its own ("step/forward"). Start/end ranges neither nest nor hold
//   others: their path is their name.
// - A thread that opens no ranges of its own (NCCL's do not count), such as PyTorch's autograd
//   threads that run the backward pass, launches for the ranges open at that moment on the one
//   thread that has a range of its own open; when several threads have, for none.
// - Numbered ranges group as one: paths are RangeFamily's ("step_<N>/forward", steps.h)
//   unless NvtxProjectionOptions::literal_ranges.
// - One API call can launch many GPU records (a CUDA graph launch); a GraphLaunchEvent
//   counts as work only when the trace has no kernel records of that launch (`-t graph`).
#ifndef WARPSCOPE_ANALYZERS_MEASURES_NVTX_PROJECTION_H_
#define WARPSCOPE_ANALYZERS_MEASURES_NVTX_PROJECTION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analyzers/model/trace_model.h"

namespace warpscope {

// Durations (ns) of one kind of GPU work (a kernel name, "[CUDA memcpy HtoD]", ...).
struct GpuWorkTotals {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  void Add(uint64_t duration_ns);
  void Merge(const GpuWorkTotals& other);
};

// All instances of one NVTX range on one thread that share domain and path.
struct NvtxRangeGroup {
  std::string domain;        // "" = the default domain
  std::string name;          // the range's own name: the last part of `path`
  std::string path;          // names of the push/pop ranges around it, then its own, joined by '/'
  bool all_threads = false;  // merged over threads (and traces); then the thread is unknown
  uint64_t thread_id = 0;    // ThreadInfo.id of the thread that opened the instances
  uint32_t os_tid = 0;       // 0 = unknown
  std::string thread_name;

  std::vector<uint64_t> cpu_durations_ns;  // one per instance: host time, start to end
  uint64_t gpu_time_ns = 0;                // sum of the durations of the work launched inside
  uint64_t gpu_span_ns = 0;     // per instance, first start to last end of its work; summed
  uint64_t kernels = 0;         // kernel records launched inside
  uint64_t copies = 0;          // memcpy and memset records launched inside
  uint64_t graph_launches = 0;  // launches of CUDA graphs among the calls inside
  // Instances not wholly inside one capture window: work launched outside a window was not
  // recorded, so their GPU figures are lower bounds. 0 for traces without windows.
  uint64_t cut_instances = 0;
  // GPU time by kernel name or memory operation; filled only when asked for.
  std::map<std::string, GpuWorkTotals> work_by_name;

  // Adds another group's instances and work (the combined view over traces).
  void Merge(const NvtxRangeGroup& other);
};

struct NvtxProjection {
  std::vector<NvtxRangeGroup> groups;  // ordered by (domain, path, thread id)
  uint64_t api_calls = 0;              // runtime/driver API records in the trace
  uint64_t gpu_records = 0;            // kernels, memcpys, memsets (and graph-only launches)
  // GPU records whose correlation id matches no API record: no range can claim them.
  uint64_t gpu_records_without_api_call = 0;
};

struct NvtxProjectionOptions {
  bool work_by_name = false;  // fill NvtxRangeGroup::work_by_name
  bool literal_ranges = false;  // group by the names as written, not by RangeFamily
};

// Projects the NVTX ranges of a model (its nvtx_ranges table, threads and capture windows)
// onto the GPU work and API calls handed to it one at a time, in any order. Each API call
// and GPU record waits, by correlation id, for its other half; once joined, the record's
// work is added to the ranges open at the call on its thread, and (when bounded) the pair is
// let go, but for graph launches (one call, many records), which wait to the end.
// `max_in_flight` bounds what waits: past it by an eighth, the lowest correlation ids (the
// oldest) are settled as they stand, down to the bound (their records count as without an API
// call). Handing events in file order, a record meets its call within a few CUPTI buffers, and
// memory stays at the ranges plus 1.125 max_in_flight (about 64 bytes each), whatever the
// trace's length. 0: no bound (exact
// in any order; the order of tables).
class NvtxProjector {
 public:
  static constexpr size_t kFileOrderInFlight = size_t{1} << 16;
  NvtxProjector(const TraceModel& model, const NvtxProjectionOptions& options,
                size_t max_in_flight = 0);
  ~NvtxProjector();
  NvtxProjector(const NvtxProjector&) = delete;
  NvtxProjector& operator=(const NvtxProjector&) = delete;

  void Add(const ApiCallEvent& call);
  void Add(const KernelEvent& kernel);
  void Add(const MemcpyEvent& copy);
  void Add(const MemsetEvent& memset);
  void Add(const GraphLaunchEvent& launch);
  // Settles what still waits and gives the groups; call once.
  NvtxProjection Finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Projects every NVTX range of `model` onto the GPU through its own tables (NvtxProjector
// with no bound).
NvtxProjection ProjectNvtxRanges(const TraceModel& model,
                                 const NvtxProjectionOptions& options = {});

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_NVTX_PROJECTION_H_
