// SampleTableBuilder (trace_model_samples.h): descriptions and samples into the small tables;
// CallStackTables: the call stacks the reader kept.
#include "analyzers/model/trace_model_samples.h"

#include <algorithm>

namespace warpscope {
namespace {

template <typename Message>
bool Redefines(std::unordered_map<uint64_t, std::string>& seen, uint64_t id, const Message& m) {
  auto [it, inserted] = seen.try_emplace(id, m.SerializeAsString());
  return !inserted && it->second != m.SerializeAsString();
}

// The records of one PcSampleBatch packet, their functions named through `strings`.
void AppendPcRecords(const v1::PcSampleBatch& b, const InternedStrings& strings,
                     std::vector<PcRecord>& records) {
  records.reserve(records.size() + b.records_size());
  for (const v1::PcSampleRecord& r : b.records()) {
    PcRecord& rec = records.emplace_back();
    rec.cubin_crc = r.cubin_crc();
    rec.function_name = strings.Get(r.function_name_id());
    rec.pc_offset = r.pc_offset();
    rec.correlation_id = r.correlation_id();
    for (int i = 0; i < r.stall_reason_index_size() && i < r.samples_size(); ++i) {
      rec.stall_samples.emplace_back(r.stall_reason_index(i), r.samples(i));
    }
  }
}

}  // namespace

bool SampleTableBuilder::Add(const v1::TracePacket& p, const InternedStrings& strings) {
  switch (p.data_case()) {
    case v1::TracePacket::kDevice:
      if (Redefines(device_bytes_, p.device().id(), p.device())) ++problems_.redefined_devices;
      AddDevice(p.device());
      return true;
    case v1::TracePacket::kContext: {
      const v1::ContextInfo& c = p.context();
      if (Redefines(context_bytes_, c.id(), c)) ++problems_.redefined_contexts;
      t_.contexts.push_back({c.id(), c.device_id(), c.is_green(), c.sm_count()});
      return true;
    }
    case v1::TracePacket::kPmMetricSet: {
      const v1::PmMetricSet& s = p.pm_metric_set();
      if (Redefines(metric_set_bytes_, s.id(), s)) ++problems_.redefined_metric_sets;
      t_.pm_metric_sets.push_back({s.id(),
                                   s.device_id(),
                                   {s.metric_names().begin(), s.metric_names().end()},
                                   s.interval_ns(),
                                   s.chip_name(),
                                   s.counter_availability()});
      return true;
    }
    case v1::TracePacket::kPmSample:
      AddPmSample(p.pm_sample());
      return true;
    case v1::TracePacket::kPcStallReasons:
      AddPcStallReasons(p.pc_stall_reasons());
      return true;
    case v1::TracePacket::kPcSamples:
      AddPcSamples(p.pc_samples(), strings);
      return true;
    case v1::TracePacket::kCubin:
      AddCubinPart(p.cubin());
      return true;
    case v1::TracePacket::kCaptureWindow:
      AddCaptureWindowEdge(p.capture_window());
      return true;
    default:
      return false;
  }
}

void SampleTableBuilder::AddDevice(const v1::Device& d) {
  DeviceInfo& o = t_.devices.emplace_back();
  o.id = d.id();
  o.name = d.name();
  o.compute_capability_major = d.compute_capability_major();
  o.compute_capability_minor = d.compute_capability_minor();
  o.sm_count = d.sm_count();
  o.max_warps_per_sm = d.max_warps_per_sm();
  o.max_blocks_per_sm = d.max_blocks_per_sm();
  o.max_threads_per_block = d.max_threads_per_block();
  o.max_registers_per_sm = d.max_registers_per_sm();
  o.max_registers_per_block = d.max_registers_per_block();
  o.max_shared_memory_per_sm = d.max_shared_memory_per_sm();
  o.max_shared_memory_per_block = d.max_shared_memory_per_block();
  o.max_shared_memory_per_block_optin = d.max_shared_memory_per_block_optin();
  o.reserved_shared_memory_per_block = d.reserved_shared_memory_per_block();
  o.threads_per_warp = d.threads_per_warp();
  o.core_clock_khz = d.core_clock_khz();
  o.global_memory_bytes = d.global_memory_bytes();
  o.global_memory_bandwidth_kbps = d.global_memory_bandwidth_kbps();
  o.l2_cache_bytes = d.l2_cache_bytes();
  o.uuid = d.uuid();
  o.pci_bus_id = d.pci_bus_id();
  o.register_allocation_unit = d.register_allocation_unit();
  o.shared_memory_allocation_unit = d.shared_memory_allocation_unit();
}

void SampleTableBuilder::AddPmSample(const v1::PmSample& s) {
  const std::vector<PmMetricSet>& sets = t_.pm_metric_sets;
  // The set in force: the last definition of its id before the sample.
  auto set = std::find_if(sets.rbegin(), sets.rend(),
                          [&](const PmMetricSet& m) { return m.id == s.metric_set_id(); });
  const int64_t index = set == sets.rend() ? -1 : static_cast<int64_t>(sets.rend() - set) - 1;
  pm_sets_with_values_.insert(s.metric_set_id());
  if (keeping_.pm_samples || keeping_.pm_samples_sink) {
    PmSample sample{s.metric_set_id(),
                    s.start_ns(),
                    s.duration_ns(),
                    {s.values().begin(), s.values().end()},
                    index};
    if (keeping_.pm_samples_sink) keeping_.pm_samples_sink(sample);
    if (keeping_.pm_samples) t_.pm_samples.push_back(std::move(sample));
  }
  if (index < 0) {
    ++problems_.pm_samples_without_set;
  } else if (set->metric_names.size() != static_cast<size_t>(s.values_size())) {
    ++problems_.pm_sample_value_mismatches;
  }
}

void SampleTableBuilder::AddPcStallReasons(const v1::PcStallReasons& r) {
  std::vector<PcStallReasons>& all = t_.pc_stall_reasons;
  // A device's reasons written again (a new context, a later writer) add to the ones
  // already read: a later name for the same index wins, as in the Python reader.
  auto existing = std::find_if(all.rbegin(), all.rend(), [&](const PcStallReasons& e) {
    return e.device_id == r.device_id();
  });
  PcStallReasons& o = existing != all.rend() ? *existing : all.emplace_back();
  o.device_id = r.device_id();
  if (r.index_size() != r.name_size()) ++problems_.pc_stall_reason_length_mismatches;
  for (int i = 0; i < r.index_size() && i < r.name_size(); ++i) {
    o.name_by_index[r.index(i)] = r.name(i);
  }
}

void SampleTableBuilder::AddPcSamples(const v1::PcSampleBatch& b, const InternedStrings& strings) {
  std::vector<PcSampleBatch>& batches = t_.pc_sample_batches;
  // A batch the writer split to fit its chunks continues in packets that only add records:
  // append them to the batch they belong to.
  const bool continues = b.continuation() && !batches.empty() &&
                         batches.back().device_id == b.device_id() &&
                         batches.back().context_id == b.context_id();
  if (b.continuation() && !continues) ++problems_.orphan_pc_continuations;
  PcSampleBatch& o = continues ? batches.back() : batches.emplace_back();
  if (!continues) {
    o.device_id = b.device_id();
    o.context_id = b.context_id();
    o.timestamp_ns = b.timestamp_ns();
    o.total_samples = b.total_samples();
    o.dropped_samples = b.dropped_samples();
    o.non_user_kernel_samples = b.non_user_kernel_samples();
    o.hardware_buffer_full = b.hardware_buffer_full();
  }
  if (keeping_.pc_records_sink) {
    PcSampleBatch part{o.device_id, o.context_id, o.timestamp_ns, o.total_samples,
                       o.dropped_samples, o.non_user_kernel_samples, o.hardware_buffer_full, {}};
    AppendPcRecords(b, strings, part.records);
    keeping_.pc_records_sink(part);
  }
  if (keeping_.pc_records) AppendPcRecords(b, strings, o.records);
}

void SampleTableBuilder::AddCaptureWindowEdge(const v1::CaptureWindowEdge& e) {
  std::vector<CaptureWindowRange>& windows = t_.capture_windows;
  auto it = window_by_id_.find(e.window_id());
  if (e.begin()) {
    window_by_id_[e.window_id()] = windows.size();
    windows.push_back(
        {e.window_id(), e.timestamp_ns(), e.trigger(), std::nullopt, v1::CAPTURE_TRIGGER_UNKNOWN});
  } else if (it == window_by_id_.end() || windows[it->second].end_ns.has_value()) {
    ++problems_.unmatched_capture_window_ends;
  } else {
    windows[it->second].end_ns = e.timestamp_ns();
    windows[it->second].end_trigger = e.trigger();
  }
}

// Parts come in order; one that does not continue the bytes so far means a part was lost,
// and poisons the cubin until a new offset-0 part starts it again. A whole cubin is stored
// once; a repeat adds nothing.
void SampleTableBuilder::AddCubinPart(const v1::CubinImage& c) {
  const uint64_t size = c.image().size();
  const uint64_t total = c.total_bytes() != 0 ? c.total_bytes() : size;
  if (whole_cubins_.count(c.crc()) != 0) return;
  auto done = [&](std::string bytes) {
    whole_cubins_.insert(c.crc());
    if (t_.cubins != nullptr) (*t_.cubins)[c.crc()] = std::move(bytes);
    partial_cubins_.erase(c.crc());
  };
  if (c.offset() == 0 && size == total) {
    done(t_.cubins != nullptr ? c.image() : std::string());
    return;
  }
  PartialCubin& part = partial_cubins_[c.crc()];
  if (c.offset() == 0) part = {std::string(), 0, total};
  if (part.total != total || c.offset() != part.size) {
    part.total = 0;
    return;
  }
  if (t_.cubins != nullptr) part.bytes += c.image();
  part.size += size;
  if (part.size == part.total) done(std::move(part.bytes));
}

SampleTableProblems SampleTableBuilder::Problems() const {
  SampleTableProblems p = problems_;
  for (const auto& [crc, part] : partial_cubins_) p.incomplete_cubins += !whole_cubins_.count(crc);
  return p;
}

void CallStackTables(const TraceReader& reader, std::vector<StackFrameInfo>& frames,
                     std::vector<CallStackInfo>& stacks) {
  const InternedStrings& strings = reader.strings();
  std::unordered_map<uint64_t, uint32_t> frame_index;
  for (const auto& [id, f] : reader.stack_frames()) {
    frame_index[id] = static_cast<uint32_t>(frames.size());
    frames.push_back({id, f.kind(), strings.Get(f.file_id()), strings.Get(f.function_id()),
                      f.line(), f.first_line(), f.module_offset()});
  }
  for (const auto& [id, s] : reader.call_stacks()) {
    CallStackInfo& stack = stacks.emplace_back();
    stack.id = id;
    stack.truncated = s.truncated();
    // The outermost frames start at this index of frame_ids (a malformed count: none).
    const int outer_from = s.truncated() && s.outermost() > 0 &&
                                   s.outermost() <= static_cast<uint32_t>(s.frame_ids_size())
                               ? s.frame_ids_size() - static_cast<int>(s.outermost())
                               : s.frame_ids_size();
    for (int i = 0; i < s.frame_ids_size(); ++i) {
      if (auto it = frame_index.find(s.frame_ids(i)); it != frame_index.end()) {
        stack.frames.push_back(it->second);
        stack.outermost += i >= outer_from ? 1 : 0;
      }
    }
    if (stack.outermost > 0) stack.left_out = s.left_out();
  }
}

}  // namespace warpscope
