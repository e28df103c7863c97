// The `warpscope_native` extension's frames of the small tables (capture windows, PC and PM
// samples, devices, contexts, call stacks), built from the columnar decoder's SampleTables or,
// for a trace with raw PM samples, from TraceModel's; the event frames are the decoder's own
// columns (native_columns.cc, from the column tables of analyzers/model/trace_columns_tables.cc).
// python/warpscope/native.py turns them into the same DataFrames as the pure-Python reader.
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
  // The outermost frames of a stack cut in the middle, whose depth counts the frames left out.
  auto outer = [](const Row& r) {
    return r.depth + r.stack->outermost >= r.stack->frames.size();
  };
  FrameBuilder<Row> f(rows);
  f.Int("stack_id", [](const Row& r) { return r.stack->id; });
  f.Int("depth", [&](const Row& r) { return r.depth + (outer(r) ? r.stack->left_out : 0); });
  f.Enum("kind", "FrameKind", [](const Row& r) { return r.frame->kind; });
  f.String("filename", [](const Row& r) { return r.frame->file; });
  f.Int("line", [](const Row& r) { return r.frame->line; });
  f.String("function", [](const Row& r) { return r.frame->function; });
  f.Int("first_line", [](const Row& r) { return r.frame->first_line; });
  f.Int("module_offset", [](const Row& r) { return r.frame->module_offset; });
  f.Bool("truncated", [](const Row& r) { return r.stack->truncated; });
  f.Bool("outermost", outer);
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

void SampleFramesOfChunk(const SampleTables& tables, nb::dict& frames, nb::list* metric_names,
                         uint64_t* unknown_reasons) {
  frames["pc_sample_batches"] = PcSampleBatches(tables);
  frames["pc_samples"] = PcSamples(tables, unknown_reasons);
  frames["pm_samples"] = PmSamples(tables, metric_names);
}

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

}  // namespace warpscope::native
