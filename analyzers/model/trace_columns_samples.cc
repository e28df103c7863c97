// TraceColumns' small tables (trace_columns_internal.h): devices, contexts, PM and PC samples,
// capture windows, stats and the import counters, by TraceModel's rules (trace_model.cc).
#include <algorithm>

#include "analyzers/model/trace_columns_internal.h"

namespace warpscope::columns_internal {
namespace {

template <typename Message>
bool Redefines(std::unordered_map<uint64_t, std::string>& seen, uint64_t id, const Message& m) {
  auto [it, inserted] = seen.try_emplace(id, m.SerializeAsString());
  return !inserted && it->second != m.SerializeAsString();
}

}  // namespace

void SampleDecoder::Add(const v1::TracePacket& p) {
  SampleTables& t = out_.samples;
  switch (p.data_case()) {
    case v1::TracePacket::kDevice:
      if (Redefines(device_bytes_, p.device().id(), p.device())) ++redefined_devices_;
      AddDevice(p.device());
      break;
    case v1::TracePacket::kContext: {
      const v1::ContextInfo& c = p.context();
      if (Redefines(context_bytes_, c.id(), c)) ++redefined_contexts_;
      t.contexts.push_back({c.id(), c.device_id(), c.is_green(), c.sm_count()});
      break;
    }
    case v1::TracePacket::kPmMetricSet: {
      const v1::PmMetricSet& s = p.pm_metric_set();
      if (Redefines(metric_set_bytes_, s.id(), s)) ++redefined_metric_sets_;
      t.pm_metric_sets.push_back({s.id(),
                                  s.device_id(),
                                  {s.metric_names().begin(), s.metric_names().end()},
                                  s.interval_ns(),
                                  s.chip_name(),
                                  s.counter_availability()});
      break;
    }
    case v1::TracePacket::kPmCounterData:
      out_.needs_model = true;  // raw samples: evaluated by TraceModel
      break;
    case v1::TracePacket::kPmSample:
      AddPmSample(p.pm_sample());
      break;
    case v1::TracePacket::kPcStallReasons:
      AddPcStallReasons(p.pc_stall_reasons());
      break;
    case v1::TracePacket::kPcSamples:
      AddPcSamples(p.pc_samples());
      break;
    case v1::TracePacket::kCubin:
      AddCubinPart(p.cubin());
      break;
    case v1::TracePacket::kCaptureWindow:
      AddCaptureWindowEdge(p.capture_window());
      break;
    case v1::TracePacket::kStats:
      out_.stats.clear();
      for (const v1::StatCounter& c : p.stats().counters()) {
        out_.stats.push_back({c.name(), c.value(), c.severity(), {}});
      }
      out_.stats_final = p.stats().final();
      break;
    case v1::TracePacket::kEndOfTrace:
      out_.complete = true;
      break;
    default:
      break;  // definitions the reader keeps, notices, what this reader does not know
  }
}

void SampleDecoder::AddDevice(const v1::Device& d) {
  DeviceInfo& o = out_.samples.devices.emplace_back();
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

void SampleDecoder::AddPmSample(const v1::PmSample& s) {
  const std::vector<PmMetricSet>& sets = out_.samples.pm_metric_sets;
  // The set in force: the last definition of its id before the sample.
  auto set = std::find_if(sets.rbegin(), sets.rend(),
                          [&](const PmMetricSet& m) { return m.id == s.metric_set_id(); });
  const int64_t index = set == sets.rend() ? -1 : static_cast<int64_t>(sets.rend() - set) - 1;
  out_.samples.pm_samples.push_back({s.metric_set_id(),
                                     s.start_ns(),
                                     s.duration_ns(),
                                     {s.values().begin(), s.values().end()},
                                     index});
  if (index < 0) {
    ++samples_without_set_;
  } else if (set->metric_names.size() != static_cast<size_t>(s.values_size())) {
    ++sample_value_mismatches_;
  }
}

void SampleDecoder::AddPcStallReasons(const v1::PcStallReasons& r) {
  std::vector<PcStallReasons>& all = out_.samples.pc_stall_reasons;
  // A device's reasons written again add to the ones already read; a later name wins.
  auto existing = std::find_if(all.rbegin(), all.rend(), [&](const PcStallReasons& e) {
    return e.device_id == r.device_id();
  });
  PcStallReasons& o = existing != all.rend() ? *existing : all.emplace_back();
  o.device_id = r.device_id();
  if (r.index_size() != r.name_size()) ++pc_stall_reason_length_mismatches_;
  for (int i = 0; i < r.index_size() && i < r.name_size(); ++i) {
    o.name_by_index[r.index(i)] = r.name(i);
  }
}

void SampleDecoder::AddPcSamples(const v1::PcSampleBatch& b) {
  std::vector<PcSampleBatch>& batches = out_.samples.pc_sample_batches;
  // A batch split to fit the writer's chunks continues in packets that only add records.
  const bool continues = b.continuation() && !batches.empty() &&
                         batches.back().device_id == b.device_id() &&
                         batches.back().context_id == b.context_id();
  if (b.continuation() && !continues) ++orphan_pc_continuations_;
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
  o.records.reserve(o.records.size() + b.records_size());
  for (const v1::PcSampleRecord& r : b.records()) {
    PcRecord& rec = o.records.emplace_back();
    rec.cubin_crc = r.cubin_crc();
    rec.function_name = reader_.strings().Get(r.function_name_id());
    rec.pc_offset = r.pc_offset();
    rec.correlation_id = r.correlation_id();
    for (int i = 0; i < r.stall_reason_index_size() && i < r.samples_size(); ++i) {
      rec.stall_samples.emplace_back(r.stall_reason_index(i), r.samples(i));
    }
  }
}

void SampleDecoder::AddCaptureWindowEdge(const v1::CaptureWindowEdge& e) {
  std::vector<CaptureWindowRange>& windows = out_.samples.capture_windows;
  auto it = window_by_id_.find(e.window_id());
  if (e.begin()) {
    window_by_id_[e.window_id()] = windows.size();
    windows.push_back(
        {e.window_id(), e.timestamp_ns(), e.trigger(), std::nullopt, v1::CAPTURE_TRIGGER_UNKNOWN});
  } else if (it == window_by_id_.end() || windows[it->second].end_ns.has_value()) {
    ++unmatched_window_ends_;
  } else {
    windows[it->second].end_ns = e.timestamp_ns();
    windows[it->second].end_trigger = e.trigger();
  }
}

// As TraceModel keeps cubins, without the bytes: parts come in order, one that does not
// continue the bytes so far poisons the cubin until a new offset-0 part starts it again.
void SampleDecoder::AddCubinPart(const v1::CubinImage& c) {
  const uint64_t size = c.image().size();
  const uint64_t total = c.total_bytes() != 0 ? c.total_bytes() : size;
  if (whole_cubins_.count(c.crc()) != 0) return;
  if (c.offset() == 0 && size == total) {
    whole_cubins_.insert(c.crc());
    partial_cubins_.erase(c.crc());
    return;
  }
  auto& [so_far, expected] = partial_cubins_[c.crc()];
  if (c.offset() == 0) so_far = 0, expected = total;
  if (expected != total || c.offset() != so_far) {
    expected = 0;
    return;
  }
  so_far += size;
  if (so_far == expected) {
    whole_cubins_.insert(c.crc());
    partial_cubins_.erase(c.crc());
  }
}

void SampleDecoder::Finish() {
  const ReaderCounters& rc = reader_.counters();
  const TruncationInfo& t = reader_.truncation();
  const v1::Header& h = reader_.header();
  out_.truncation = t;
  Count("reader.truncated_bytes", t.partial_packet ? t.bytes_lost : 0);
  Count("reader.missing_end_of_trace", t.saw_end_of_trace ? 0 : 1);
  Count("reader.packets_after_end_of_trace", t.packets_after_end);
  Count("reader.undefined_string_refs", rc.undefined_string_refs);
  Count("reader.undefined_launch_config_refs", rc.undefined_launch_config_refs);
  Count("reader.undefined_thread_refs", rc.undefined_thread_refs);
  Count("reader.redefined_ids", rc.redefined_ids);
  Count("reader.unknown_packets", rc.unknown_packets);
  Count("reader.packets_with_unknown_fields", rc.packets_with_unknown_fields);
  Count("reader.extra_headers", rc.extra_headers);
  Count("reader.invalid_utf8_strings", rc.invalid_utf8_strings);
  Count("reader.newer_format_minor",
        h.format_major() == kReaderFormatMajor && h.format_minor() > kReaderFormatMinor ? 1 : 0);
  Count("model.redefined_pm_metric_sets", redefined_metric_sets_);
  Count("model.redefined_devices", redefined_devices_);
  Count("model.redefined_contexts", redefined_contexts_);
  Count("model.pm_samples_without_metric_set", samples_without_set_);
  Count("model.pm_sample_value_count_mismatch", sample_value_mismatches_);
  Count("model.pc_stall_reasons_length_mismatch", pc_stall_reason_length_mismatches_);
  Count("model.orphan_pc_sample_continuations", orphan_pc_continuations_);
  uint64_t incomplete_cubins = 0;
  for (const auto& [crc, part] : partial_cubins_) incomplete_cubins += !whole_cubins_.count(crc);
  Count("model.incomplete_cubins", incomplete_cubins);
  Count("model.unmatched_capture_window_ends", unmatched_window_ends_);
}

}  // namespace warpscope::columns_internal
