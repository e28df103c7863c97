// The `warpscope_native` extension's frames: a trace read by the C++ reader (TraceModel) and
// handed to Python as columns, one numpy array per column, which python/warpscope/native.py
// turns into the same DataFrames as the pure-Python reader (docs/python.md).
//
// Numbers are int64 (the schema's uint64 read as two's complement, as the Python reader
// does), float64 or bool arrays that own their memory through a capsule, so pandas takes
// them without a copy. Strings are categorical: int32 codes plus the sorted distinct values;
// enums are their int32 values, named in Python with the schema's labels.
#include "python/src/native_frames.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analyzers/model/import_counters.h"
#include "python/src/frame_builder.h"

namespace warpscope::native {
namespace {

namespace nb = nanobind;

nb::dict Kernels(const TraceModel& m) {
  FrameBuilder<KernelEvent> f(m.kernels);
  f.Times();
  f.String("name", [](const KernelEvent& k) { return k.name; });
  f.String("mangled_name", [](const KernelEvent& k) { return k.mangled_name; });
  f.Int("device_id", [](const KernelEvent& k) { return k.device_id; });
  f.Int("context_id", [](const KernelEvent& k) { return k.context_id; });
  f.Int("stream_id", [](const KernelEvent& k) { return k.stream_id; });
  f.Int("correlation_id", [](const KernelEvent& k) { return k.correlation_id; });
  f.Int("graph_id", [](const KernelEvent& k) { return k.graph_id; });
  f.Int("graph_node_id", [](const KernelEvent& k) { return k.graph_node_id; });
  f.Int("grid_id", [](const KernelEvent& k) { return k.grid_id; });
  f.Int("launch_config_id", [](const KernelEvent& k) { return k.launch_config_id; });
  static const LaunchConfig kNone;
#define WARPSCOPE_LAUNCH_COLUMN(field) \
  f.Int(#field, [](const KernelEvent& k) { return (k.launch ? *k.launch : kNone).field; })
  WARPSCOPE_LAUNCH_COLUMN(grid_x);
  WARPSCOPE_LAUNCH_COLUMN(grid_y);
  WARPSCOPE_LAUNCH_COLUMN(grid_z);
  WARPSCOPE_LAUNCH_COLUMN(block_x);
  WARPSCOPE_LAUNCH_COLUMN(block_y);
  WARPSCOPE_LAUNCH_COLUMN(block_z);
  WARPSCOPE_LAUNCH_COLUMN(cluster_x);
  WARPSCOPE_LAUNCH_COLUMN(cluster_y);
  WARPSCOPE_LAUNCH_COLUMN(cluster_z);
  WARPSCOPE_LAUNCH_COLUMN(registers_per_thread);
  WARPSCOPE_LAUNCH_COLUMN(static_shared_memory);
  WARPSCOPE_LAUNCH_COLUMN(dynamic_shared_memory);
  WARPSCOPE_LAUNCH_COLUMN(local_memory_per_thread);
  WARPSCOPE_LAUNCH_COLUMN(shared_memory_executed);
  WARPSCOPE_LAUNCH_COLUMN(shared_memory_config);
  WARPSCOPE_LAUNCH_COLUMN(shared_memory_carveout_requested);
  WARPSCOPE_LAUNCH_COLUMN(shmem_limit_config);
#undef WARPSCOPE_LAUNCH_COLUMN
  return f.Finish();
}

nb::dict ApiCalls(const TraceModel& m) {
  FrameBuilder<ApiCallEvent> f(m.api_calls);
  f.Times();
  f.String("name", [](const ApiCallEvent& a) { return a.name; });
  f.Enum("domain", "ApiDomain", [](const ApiCallEvent& a) { return a.domain; });
  f.Thread(m, &TraceModel::ThreadEventCounts::api_calls, "thread_id", "os_tid", "thread_name",
           [](const ApiCallEvent& a) { return a.thread_id; });
  f.Int("correlation_id", [](const ApiCallEvent& a) { return a.correlation_id; });
  f.Int("result", [](const ApiCallEvent& a) { return a.result; });
  f.Int("callback_id", [](const ApiCallEvent& a) { return a.callback_id; });
  return f.Finish();
}

nb::dict NvtxRanges(const TraceModel& m) {
  FrameBuilder<NvtxRange> f(m.nvtx_ranges);
  f.Times();
  f.String("name", [](const NvtxRange& r) { return r.name; });
  f.String("domain", [](const NvtxRange& r) { return r.domain; });
  f.Int("category", [](const NvtxRange& r) { return r.category; });
  f.Int("color", [](const NvtxRange& r) { return r.color; });
  f.Int("depth", [](const NvtxRange& r) { return r.depth; });
  f.Bool("is_push_pop", [](const NvtxRange& r) { return r.is_push_pop; });
  f.Thread(m, &TraceModel::ThreadEventCounts::nvtx_ranges, "thread_id", "os_tid",
           "thread_name", [](const NvtxRange& r) { return r.thread_id; });
  f.Thread(m, &TraceModel::ThreadEventCounts::nvtx_ranges, "end_thread_id", "end_os_tid",
           "end_thread_name", [](const NvtxRange& r) { return r.end_thread_id; });
  return f.Finish();
}

nb::dict NvtxMarks(const TraceModel& m) {
  FrameBuilder<NvtxMark> f(m.nvtx_marks);
  f.Int("timestamp_ns", [](const NvtxMark& k) { return k.timestamp_ns; });
  f.String("name", [](const NvtxMark& k) { return k.name; });
  f.String("domain", [](const NvtxMark& k) { return k.domain; });
  f.Int("category", [](const NvtxMark& k) { return k.category; });
  f.Int("color", [](const NvtxMark& k) { return k.color; });
  f.Thread(m, &TraceModel::ThreadEventCounts::nvtx_marks, "thread_id", "os_tid",
           "thread_name", [](const NvtxMark& k) { return k.thread_id; });
  return f.Finish();
}

nb::dict NcclCalls(const TraceModel& m) {
  FrameBuilder<NcclCall> f(m.nccl_calls);
  f.Times();
  f.String("name", [](const NcclCall& c) { return c.name; });
  f.Thread(m, &TraceModel::ThreadEventCounts::nccl_calls, "thread_id", "os_tid", "thread_name",
           [](const NcclCall& c) { return c.thread_id; });
  f.Int("comm_hash", [](const NcclCall& c) { return c.comm_hash; });
  f.Int("bytes", [](const NcclCall& c) { return c.bytes; });
  f.Int("reduction_op", [](const NcclCall& c) { return c.reduction_op; });
  f.Int("root", [](const NcclCall& c) { return c.root; });
  f.Int("peer", [](const NcclCall& c) { return c.peer; });
  f.Int("comm_size", [](const NcclCall& c) { return c.comm_size; });
  f.Int("comm_rank", [](const NcclCall& c) { return c.comm_rank; });
  f.Int("launch_correlation_id", [](const NcclCall& c) { return c.launch_correlation_id; });
  f.Int("launches", [](const NcclCall& c) { return c.launches; });
  f.Bool("payload_unreadable", [](const NcclCall& c) { return c.payload_unreadable; });
  return f.Finish();
}

nb::dict ApiStacks(const TraceModel& m) {
  FrameBuilder<ApiStack> f(m.api_stacks);
  f.Int("timestamp_ns", [](const ApiStack& a) { return a.timestamp_ns; });
  f.Int("correlation_id", [](const ApiStack& a) { return a.correlation_id; });
  f.Int("stack_id", [](const ApiStack& a) { return a.stack_id; });
  f.String("name", [](const ApiStack& a) { return a.name; });
  f.Enum("domain", "ApiDomain", [](const ApiStack& a) { return a.domain; });
  f.Int("callback_id", [](const ApiStack& a) { return a.callback_id; });
  return f.Finish();
}

nb::dict Memcpys(const TraceModel& m) {
  FrameBuilder<MemcpyEvent> f(m.memcpys);
  f.Times();
  f.Enum("copy_kind", "CopyKind", [](const MemcpyEvent& c) { return c.copy_kind; });
  f.Enum("src_kind", "MemoryKind", [](const MemcpyEvent& c) { return c.src_kind; });
  f.Enum("dst_kind", "MemoryKind", [](const MemcpyEvent& c) { return c.dst_kind; });
  f.Int("bytes", [](const MemcpyEvent& c) { return c.bytes; });
  f.Int("device_id", [](const MemcpyEvent& c) { return c.device_id; });
  f.Int("context_id", [](const MemcpyEvent& c) { return c.context_id; });
  f.Int("stream_id", [](const MemcpyEvent& c) { return c.stream_id; });
  f.Int("correlation_id", [](const MemcpyEvent& c) { return c.correlation_id; });
  f.Bool("is_async", [](const MemcpyEvent& c) { return c.is_async; });
  f.Int("src_device_id", [](const MemcpyEvent& c) { return c.src_device_id; });
  f.Int("dst_device_id", [](const MemcpyEvent& c) { return c.dst_device_id; });
  f.Int("graph_node_id", [](const MemcpyEvent& c) { return c.graph_node_id; });
  return f.Finish();
}

nb::dict Memsets(const TraceModel& m) {
  FrameBuilder<MemsetEvent> f(m.memsets);
  f.Times();
  f.Int("value", [](const MemsetEvent& s) { return s.value; });
  f.Int("bytes", [](const MemsetEvent& s) { return s.bytes; });
  f.Enum("memory_kind", "MemoryKind", [](const MemsetEvent& s) { return s.memory_kind; });
  f.Int("device_id", [](const MemsetEvent& s) { return s.device_id; });
  f.Int("context_id", [](const MemsetEvent& s) { return s.context_id; });
  f.Int("stream_id", [](const MemsetEvent& s) { return s.stream_id; });
  f.Int("correlation_id", [](const MemsetEvent& s) { return s.correlation_id; });
  f.Bool("is_async", [](const MemsetEvent& s) { return s.is_async; });
  return f.Finish();
}

nb::dict Syncs(const TraceModel& m) {
  FrameBuilder<SyncEvent> f(m.syncs);
  f.Times();
  f.Enum("kind", "SyncKind", [](const SyncEvent& s) { return s.kind; });
  f.Int("context_id", [](const SyncEvent& s) { return s.context_id; });
  f.Int("stream_id", [](const SyncEvent& s) { return s.stream_id; });
  f.Int("cuda_event_id", [](const SyncEvent& s) { return s.cuda_event_id; });
  f.Int("correlation_id", [](const SyncEvent& s) { return s.correlation_id; });
  f.Thread(m, &TraceModel::ThreadEventCounts::syncs, "thread_id", "os_tid", "thread_name",
           [](const SyncEvent& s) { return s.thread_id; });
  return f.Finish();
}

nb::dict GraphLaunches(const TraceModel& m) {
  FrameBuilder<GraphLaunchEvent> f(m.graph_launches);
  f.Times();
  f.Int("graph_id", [](const GraphLaunchEvent& g) { return g.graph_id; });
  f.Int("device_id", [](const GraphLaunchEvent& g) { return g.device_id; });
  f.Int("context_id", [](const GraphLaunchEvent& g) { return g.context_id; });
  f.Int("stream_id", [](const GraphLaunchEvent& g) { return g.stream_id; });
  f.Int("correlation_id", [](const GraphLaunchEvent& g) { return g.correlation_id; });
  return f.Finish();
}

nb::dict Overheads(const TraceModel& m) {
  FrameBuilder<OverheadEvent> f(m.overheads);
  f.Times();
  f.String("kind", [](const OverheadEvent& o) { return o.kind; });
  f.Thread(m, &TraceModel::ThreadEventCounts::overheads, "thread_id", "os_tid",
           "thread_name", [](const OverheadEvent& o) { return o.thread_id; });
  return f.Finish();
}

// Capture window edges (the file's CaptureWindowEdge packets) from the model's windows:
// each begin edge, then its end edge when the window was closed, in time order.
template <typename Tables>
nb::dict CaptureWindows(const Tables& m) {
  struct Edge {
    uint64_t timestamp_ns;
    uint32_t window_id;
    bool begin;
    v1::CaptureTrigger trigger;
  };
  std::vector<Edge> edges;
  for (const CaptureWindowRange& w : m.capture_windows) {
    edges.push_back({w.begin_ns, w.id, true, w.begin_trigger});
    if (w.end_ns) edges.push_back({*w.end_ns, w.id, false, w.end_trigger});
  }
  std::stable_sort(edges.begin(), edges.end(),
                   [](const Edge& a, const Edge& b) { return a.timestamp_ns < b.timestamp_ns; });
  FrameBuilder<Edge> f(edges);
  f.Int("timestamp_ns", [](const Edge& e) { return e.timestamp_ns; });
  f.Int("window_id", [](const Edge& e) { return e.window_id; });
  f.Bool("begin", [](const Edge& e) { return e.begin; });
  f.Enum("trigger", "CaptureTrigger", [](const Edge& e) { return e.trigger; });
  return f.Finish();
}

template <typename Tables>
nb::dict PcSampleBatches(const Tables& m) {
  FrameBuilder<PcSampleBatch> f(m.pc_sample_batches);
  f.Int("timestamp_ns", [](const PcSampleBatch& b) { return b.timestamp_ns; });
  f.Int("device_id", [](const PcSampleBatch& b) { return b.device_id; });
  f.Int("context_id", [](const PcSampleBatch& b) { return b.context_id; });
  f.Int("total_samples", [](const PcSampleBatch& b) { return b.total_samples; });
  f.Int("dropped_samples", [](const PcSampleBatch& b) { return b.dropped_samples; });
  f.Int("non_user_kernel_samples",
        [](const PcSampleBatch& b) { return b.non_user_kernel_samples; });
  f.Bool("hardware_buffer_full", [](const PcSampleBatch& b) { return b.hardware_buffer_full; });
  return f.Finish();
}

// One row per (batch, PC record, stall reason), the reason named for the batch's device.
template <typename Tables>
nb::dict PcSamples(const Tables& m, uint64_t* unknown_reasons) {
  struct Row {
    const PcSampleBatch* batch;
    const PcRecord* record;
    uint32_t reason_index;
    uint64_t samples;
    std::string_view reason;
  };
  std::vector<Row> rows;
  std::deque<std::string> unknown;
  for (const PcSampleBatch& b : m.pc_sample_batches) {
    const PcStallReasons* reasons = nullptr;  // the last entry of the device
    for (const PcStallReasons& r : m.pc_stall_reasons) {
      if (r.device_id == b.device_id) reasons = &r;
    }
    for (const PcRecord& r : b.records) {
      for (const auto& [index, samples] : r.stall_samples) {
        std::string_view name;
        auto it = reasons ? reasons->name_by_index.find(index)
                          : std::map<uint32_t, std::string>::const_iterator();
        if (reasons != nullptr && it != reasons->name_by_index.end()) {
          name = it->second;
        } else {
          ++*unknown_reasons;
          name = unknown.emplace_back(absl::StrCat("<unknown:", index, ">"));
        }
        rows.push_back({&b, &r, index, samples, name});
      }
    }
  }
  FrameBuilder<Row> f(rows);
  f.Int("timestamp_ns", [](const Row& r) { return r.batch->timestamp_ns; });
  f.Int("device_id", [](const Row& r) { return r.batch->device_id; });
  f.Int("context_id", [](const Row& r) { return r.batch->context_id; });
  f.String("function_name", [](const Row& r) { return r.record->function_name; });
  f.Int("pc_offset", [](const Row& r) { return r.record->pc_offset; });
  {
    std::vector<uint64_t> crc(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) crc[i] = rows[i].record->cubin_crc;
    nb::dict columns = f.Finish();
    columns["cubin_crc"] = Array(std::move(crc));
    FrameBuilder<Row> rest(rows);
    rest.String("stall_reason", [](const Row& r) { return r.reason; });
    rest.Int("stall_reason_index", [](const Row& r) { return r.reason_index; });
    rest.Int("samples", [](const Row& r) { return r.samples; });
    rest.Int("correlation_id", [](const Row& r) { return r.record->correlation_id; });
    nb::dict tail = rest.Finish();
    for (auto [k, v] : tail) columns[k] = v;
    return columns;
  }
}

// Fixed columns, then one float64 column per metric name of any metric set (sets ordered by
// id, names in first appearance); a sample fills the columns of its set, NaN elsewhere.
template <typename Tables>
nb::dict PmSamples(const Tables& m, nb::list* metric_names_out) {
  std::vector<const PmMetricSet*> sets;
  for (const PmMetricSet& s : m.pm_metric_sets) sets.push_back(&s);
  std::stable_sort(sets.begin(), sets.end(),
                   [](const PmMetricSet* a, const PmMetricSet* b) { return a->id < b->id; });
  std::vector<std::string_view> names;
  absl::flat_hash_map<std::string_view, size_t> column_of;
  for (const PmMetricSet* s : sets) {
    for (const std::string& n : s->metric_names) {
      if (column_of.try_emplace(n, names.size()).second) names.push_back(n);
    }
  }
  for (std::string_view n : names) metric_names_out->append(Utf8(n));
  // A sample read before any definition of its metric set is left out (counted by the model).
  std::vector<const PmSample*> rows;
  rows.reserve(m.pm_samples.size());
  for (const PmSample& s : m.pm_samples) {
    if (s.metric_set_index >= 0) rows.push_back(&s);
  }
  using Row = const PmSample*;
  FrameBuilder<Row> f(rows);
  f.Int("start_ns", [](Row s) { return s->start_ns; });
  f.Int("end_ns", [](Row s) { return s->start_ns + s->duration_ns; });
  f.Int("duration_ns", [](Row s) { return s->duration_ns; });
  f.Int("metric_set_id", [](Row s) { return s->metric_set_id; });
  f.Int("device_id", [&](Row s) { return m.pm_metric_sets[s->metric_set_index].device_id; });
  nb::dict columns = f.Finish();
  const size_t width = names.size();
  auto* values =
      new std::vector<double>(rows.size() * width, std::numeric_limits<double>::quiet_NaN());
  std::unordered_map<int64_t, std::vector<size_t>> positions;  // by metric set entry
  for (size_t row = 0; row < rows.size(); ++row) {
    const PmSample& s = *rows[row];
    auto [it, inserted] = positions.try_emplace(s.metric_set_index);
    if (inserted) {
      for (const std::string& n : m.pm_metric_sets[s.metric_set_index].metric_names) {
        it->second.push_back(column_of[n]);
      }
    }
    const size_t count = std::min(s.values.size(), it->second.size());
    for (size_t i = 0; i < count; ++i) (*values)[row * width + it->second[i]] = s.values[i];
  }
  nb::capsule owner(values,
                    [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  const size_t shape[2] = {rows.size(), width};
  columns["__metrics__"] =
      nb::cast(nb::ndarray<nb::numpy, double, nb::ndim<2>>(values->data(), 2, shape, owner));
  return columns;
}

// One row per (call stack, frame): stacks by id, each one's frames innermost first.
template <typename Tables>
nb::dict Stacks(const Tables& m) {
  struct Row {
    const CallStackInfo* stack;
    uint32_t depth;
    const StackFrameInfo* frame;
  };
  std::vector<Row> rows;
  for (const CallStackInfo& s : m.call_stacks) {
    for (uint32_t depth = 0; depth < s.frames.size(); ++depth) {
      rows.push_back({&s, depth, &m.stack_frames[s.frames[depth]]});
    }
  }
  FrameBuilder<Row> f(rows);
  f.Int("stack_id", [](const Row& r) { return r.stack->id; });
  f.Int("depth", [](const Row& r) { return r.depth; });
  f.Enum("kind", "FrameKind", [](const Row& r) { return r.frame->kind; });
  f.String("filename", [](const Row& r) { return r.frame->file; });
  f.Int("line", [](const Row& r) { return r.frame->line; });
  f.String("function", [](const Row& r) { return r.frame->function; });
  f.Int("first_line", [](const Row& r) { return r.frame->first_line; });
  f.Int("module_offset", [](const Row& r) { return r.frame->module_offset; });
  f.Bool("truncated", [](const Row& r) { return r.stack->truncated; });
  return f.Finish();
}

template <typename Tables>
nb::dict Devices(const Tables& m) {
  std::map<uint32_t, const DeviceInfo*> by_id;  // the first definition of each id
  for (const DeviceInfo& d : m.devices) by_id.try_emplace(d.id, &d);
  std::vector<DeviceInfo> rows;
  for (const auto& [id, d] : by_id) rows.push_back(*d);
  FrameBuilder<DeviceInfo> f(rows);
  f.Int("id", [](const DeviceInfo& d) { return d.id; });
  f.String("name", [](const DeviceInfo& d) { return std::string_view(d.name); });
#define WARPSCOPE_DEVICE_COLUMN(field) f.Int(#field, [](const DeviceInfo& d) { return d.field; })
  WARPSCOPE_DEVICE_COLUMN(compute_capability_major);
  WARPSCOPE_DEVICE_COLUMN(compute_capability_minor);
  WARPSCOPE_DEVICE_COLUMN(sm_count);
  WARPSCOPE_DEVICE_COLUMN(max_warps_per_sm);
  WARPSCOPE_DEVICE_COLUMN(max_blocks_per_sm);
  WARPSCOPE_DEVICE_COLUMN(max_threads_per_block);
  WARPSCOPE_DEVICE_COLUMN(max_registers_per_sm);
  WARPSCOPE_DEVICE_COLUMN(max_registers_per_block);
  WARPSCOPE_DEVICE_COLUMN(max_shared_memory_per_sm);
  WARPSCOPE_DEVICE_COLUMN(max_shared_memory_per_block);
  WARPSCOPE_DEVICE_COLUMN(max_shared_memory_per_block_optin);
  WARPSCOPE_DEVICE_COLUMN(reserved_shared_memory_per_block);
  WARPSCOPE_DEVICE_COLUMN(threads_per_warp);
  WARPSCOPE_DEVICE_COLUMN(core_clock_khz);
  WARPSCOPE_DEVICE_COLUMN(global_memory_bytes);
  WARPSCOPE_DEVICE_COLUMN(global_memory_bandwidth_kbps);
  WARPSCOPE_DEVICE_COLUMN(l2_cache_bytes);
#undef WARPSCOPE_DEVICE_COLUMN
  f.String("uuid", [](const DeviceInfo& d) { return std::string_view(d.uuid); });
  f.Int("pci_bus_id", [](const DeviceInfo& d) { return d.pci_bus_id; });
  f.Int("register_allocation_unit", [](const DeviceInfo& d) { return d.register_allocation_unit; });
  f.Int("shared_memory_allocation_unit",
        [](const DeviceInfo& d) { return d.shared_memory_allocation_unit; });
  return f.Finish();
}

template <typename Tables>
nb::dict Contexts(const Tables& m) {
  std::map<uint32_t, ContextInfo> by_id;
  for (const ContextInfo& c : m.contexts) by_id.try_emplace(c.id, c);
  std::vector<ContextInfo> rows;
  for (const auto& [id, c] : by_id) rows.push_back(c);
  FrameBuilder<ContextInfo> f(rows);
  f.Int("id", [](const ContextInfo& c) { return c.id; });
  f.Int("device_id", [](const ContextInfo& c) { return c.device_id; });
  f.Bool("is_green", [](const ContextInfo& c) { return c.is_green; });
  f.Int("sm_count", [](const ContextInfo& c) { return c.sm_count; });
  return f.Finish();
}

}  // namespace

template <typename Tables>
void AddSampleFrames(const Tables& tables, nb::dict& frames, nb::list* metric_names,
                     uint64_t* unknown_reasons) {
  frames["capture_windows"] = CaptureWindows(tables);
  frames["pc_sample_batches"] = PcSampleBatches(tables);
  frames["pc_samples"] = PcSamples(tables, unknown_reasons);
  frames["pm_samples"] = PmSamples(tables, metric_names);
  frames["devices"] = Devices(tables);
  frames["contexts"] = Contexts(tables);
  frames["stacks"] = Stacks(tables);
}
template void AddSampleFrames(const TraceModel&, nb::dict&, nb::list*, uint64_t*);
template void AddSampleFrames(const SampleTables&, nb::dict&, nb::list*, uint64_t*);

nb::dict FramesResult(nb::dict frames, nb::list metric_names,
                      const std::vector<StatCounter>& import_counters, uint64_t unknown_reasons,
                      const std::vector<StatCounter>& stats, bool stats_final,
                      const TruncationInfo& truncation, bool complete) {
  nb::dict result;
  result["frames"] = frames;
  result["pm_metric_names"] = metric_names;
  nb::dict counters;
  for (const StatCounter& c : import_counters) counters[Utf8(c.name)] = c.value;
  if (unknown_reasons) {
    counters[Utf8(import_counters::kModelUndefinedPcStallReasonRefs.name)] =
        unknown_reasons;
  }
  result["import_counters"] = counters;
  nb::dict stats_values, severity;
  for (const StatCounter& c : stats) {
    stats_values[Utf8(c.name)] = c.value;
    severity[Utf8(c.name)] = static_cast<int>(c.severity);
  }
  result["stats"] = stats_values;
  result["stats_severity"] = severity;
  result["stats_final"] = stats_final;
  result["truncated"] = truncation.partial_packet;
  result["truncation_offset"] = truncation.partial_offset;
  result["complete"] = complete;
  return result;
}

nb::dict Frames(const TraceModel& m) {
  nb::dict frames;
  frames["kernels"] = Kernels(m);
  frames["api"] = ApiCalls(m);
  frames["nvtx_ranges"] = NvtxRanges(m);
  frames["nvtx_marks"] = NvtxMarks(m);
  frames["nccl_calls"] = NcclCalls(m);
  frames["api_stacks"] = ApiStacks(m);
  frames["memcpy"] = Memcpys(m);
  frames["memset"] = Memsets(m);
  frames["sync"] = Syncs(m);
  frames["graph_launches"] = GraphLaunches(m);
  frames["overhead"] = Overheads(m);
  uint64_t unknown_reasons = 0;
  nb::list metric_names;
  AddSampleFrames(m, frames, &metric_names, &unknown_reasons);
  return FramesResult(frames, metric_names, m.import_counters, unknown_reasons, m.stats,
                      m.stats_final, m.truncation, m.end_of_trace.has_value());
}

}  // namespace warpscope::native
