// Loads a trace into TraceModel tables (see trace_model.h): one pass over TraceReader,
// converting packets to plain structs (the problems it counts: trace_model_problems.cc).
#include "analyzers/model/trace_model.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "analyzers/model/trace_model_builder.h"

namespace warpscope {

void TraceModelBuilder::AddCubinPart(const v1::CubinImage& c) {
  const uint64_t total = c.total_bytes() != 0 ? c.total_bytes() : c.image().size();
  if (model_.cubins.count(c.crc()) != 0) return;  // stored once; a repeat adds nothing
  if (c.offset() == 0 && c.image().size() == total) {
    model_.cubins[c.crc()] = c.image();
    partial_cubins_.erase(c.crc());
    return;
  }
  PartialCubin& part = partial_cubins_[c.crc()];
  if (c.offset() == 0) part = {std::string(), total};
  // Parts come in order; one that does not continue the bytes so far means a part was lost.
  if (part.total != total || c.offset() != part.bytes.size()) {
    part.total = 0;  // poisoned until a new offset-0 part starts it again
    return;
  }
  part.bytes += c.image();
  if (part.bytes.size() == part.total) {
    model_.cubins[c.crc()] = std::move(part.bytes);
    partial_cubins_.erase(c.crc());
  }
}

void TraceModelBuilder::AddPcRecords(const v1::PcSampleBatch& b, PcSampleBatch& o) {
  if (!options_.keep_pc_sample_records) return;
  o.records.reserve(o.records.size() + b.records_size());
  for (const v1::PcSampleRecord& r : b.records()) {
    PcRecord& rec = o.records.emplace_back();
    rec.cubin_crc = r.cubin_crc();
    rec.function_name = Str(r.function_name_id());
    rec.pc_offset = r.pc_offset();
    rec.correlation_id = r.correlation_id();
    for (int i = 0; i < r.stall_reason_index_size() && i < r.samples_size(); ++i) {
      rec.stall_samples.emplace_back(r.stall_reason_index(i), r.samples(i));
    }
  }
}

const LaunchConfig* TraceModelBuilder::Launch(uint64_t id) {
  if (id == 0) return nullptr;
  auto it = launch_by_id_.find(id);
  if (it != launch_by_id_.end()) return it->second;
  const v1::LaunchConfig* src = reader_.FindLaunchConfig(id);
  if (src == nullptr) return nullptr;  // counted by the reader
  LaunchConfig& c = model_.launch_configs_->emplace_back();
  c.id = src->id();
  c.grid_x = src->grid_x();
  c.grid_y = src->grid_y();
  c.grid_z = src->grid_z();
  c.block_x = src->block_x();
  c.block_y = src->block_y();
  c.block_z = src->block_z();
  c.cluster_x = src->cluster_x();
  c.cluster_y = src->cluster_y();
  c.cluster_z = src->cluster_z();
  c.registers_per_thread = src->registers_per_thread();
  c.static_shared_memory = src->static_shared_memory();
  c.dynamic_shared_memory = src->dynamic_shared_memory();
  c.local_memory_per_thread = src->local_memory_per_thread();
  c.shared_memory_executed = src->shared_memory_executed();
  c.shared_memory_config = src->shared_memory_config();
  c.shared_memory_carveout_requested = src->shared_memory_carveout_requested();
  c.shmem_limit_config = src->shmem_limit_config();
  launch_by_id_[id] = &c;
  return &c;
}

// Definitions, samples and the trace's own state; timed events go on to AddEvent.
void TraceModelBuilder::Add(const v1::TracePacket& p) {
  TraceModel& m = model_;
  switch (p.data_case()) {
    case v1::TracePacket::kDevice:
      if (Redefines(device_bytes_, p.device().id(), p.device())) ++redefined_devices_;
      AddDevice(p.device());
      break;
    case v1::TracePacket::kContext: {
      const v1::ContextInfo& c = p.context();
      if (Redefines(context_bytes_, c.id(), c)) ++redefined_contexts_;
      m.contexts.push_back({c.id(), c.device_id(), c.is_green(), c.sm_count()});
      break;
    }
    case v1::TracePacket::kThread: {
      const v1::ThreadInfo& t = p.thread();
      m.threads.push_back({t.id(), t.cupti_thread_id(), t.os_tid(), t.name()});
      m.thread_defined_after.push_back({m.syncs.size(), m.api_calls.size(), m.overheads.size(),
                                        m.nvtx_ranges.size(), m.nvtx_marks.size()});
      break;
    }
    case v1::TracePacket::kPmMetricSet: {
      const v1::PmMetricSet& s = p.pm_metric_set();
      if (Redefines(metric_set_bytes_, s.id(), s)) ++redefined_metric_sets_;
      m.pm_metric_sets.push_back({s.id(),
                                  s.device_id(),
                                  {s.metric_names().begin(), s.metric_names().end()},
                                  s.interval_ns(),
                                  s.chip_name(),
                                  s.counter_availability()});
      break;
    }
    case v1::TracePacket::kPmCounterData: {
      const v1::PmCounterData& d = p.pm_counter_data();
      pm_counter_data_.Add(m.FindPmMetricSet(d.metric_set_id()), d);
      for (int i = 0; i < d.start_ns_size() && i < d.duration_ns_size(); ++i) {
        Extend(d.start_ns(i), d.start_ns(i) + d.duration_ns(i));
      }
      break;
    }
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
    case v1::TracePacket::kLaunchConfig:
      // Kernels after a redefinition use the new value, as strings do (docs/format.md).
      launch_by_id_.erase(p.launch_config().id());
      break;
    case v1::TracePacket::kStats:
      AddStats(p.stats());
      break;
    case v1::TracePacket::kNotice: {
      const v1::Notice& n = p.notice();
      m.notices.push_back({n.timestamp_ns(), n.severity(), n.source(), n.message()});
      break;
    }
    case v1::TracePacket::kEndOfTrace:
      m.end_of_trace = EndOfTraceInfo{p.end_of_trace().timestamp_ns(), p.end_of_trace().reason()};
      break;
    default:
      AddEvent(p);
      break;
  }
}

namespace {

// When and where a kernel, copy, memset or graph launch ran (StreamWork).
template <typename V1Event>
void SetStreamWork(const V1Event& e, StreamWork& o) {
  o.start_ns = e.start_ns();
  o.duration_ns = e.duration_ns();
  o.device_id = e.device_id();
  o.context_id = e.context_id();
  o.stream_id = e.stream_id();
  o.correlation_id = e.correlation_id();
}

}  // namespace

// GPU activity, API calls and NVTX: each also widens the trace's time span.
void TraceModelBuilder::AddEvent(const v1::TracePacket& p) {
  TraceModel& m = model_;
  switch (p.data_case()) {
    case v1::TracePacket::kKernel:
      AddKernel(p.kernel());
      break;
    case v1::TracePacket::kMemcpy:
      AddMemcpy(p.memcpy());
      break;
    case v1::TracePacket::kMemset:
      AddMemset(p.memset());
      break;
    case v1::TracePacket::kSynchronization: {
      const v1::SyncEvent& s = p.synchronization();
      m.syncs.push_back({s.kind(), s.start_ns(), s.duration_ns(), s.context_id(), s.stream_id(),
                         s.cuda_event_id(), s.correlation_id(), s.thread_id()});
      Extend(s.start_ns(), s.start_ns() + s.duration_ns());
      break;
    }
    case v1::TracePacket::kApiCall: {
      const v1::ApiCallEvent& a = p.api_call();
      m.api_calls.push_back({a.domain(), Str(a.name_id()), a.start_ns(), a.duration_ns(),
                             a.thread_id(), a.correlation_id(), a.result(), a.callback_id()});
      Extend(a.start_ns(), a.start_ns() + a.duration_ns());
      break;
    }
    case v1::TracePacket::kGraphLaunch: {
      const v1::GraphLaunchEvent& g = p.graph_launch();
      GraphLaunchEvent& o = m.graph_launches.emplace_back();
      o.graph_id = g.graph_id();
      SetStreamWork(g, o);
      Extend(g.start_ns(), g.start_ns() + g.duration_ns());
      break;
    }
    case v1::TracePacket::kOverhead: {
      const v1::OverheadEvent& o = p.overhead();
      m.overheads.push_back({Str(o.kind_id()), o.start_ns(), o.duration_ns(), o.thread_id()});
      Extend(o.start_ns(), o.start_ns() + o.duration_ns());
      break;
    }
    case v1::TracePacket::kNvtxRange: {
      const v1::NvtxRangeEvent& r = p.nvtx_range();
      m.nvtx_ranges.push_back({Str(r.name_id()), Str(r.domain_id()), r.category(), r.color(),
                               r.start_ns(), r.duration_ns(), r.thread_id(), r.end_thread_id(),
                               r.is_push_pop(), r.depth()});
      Extend(r.start_ns(), r.start_ns() + r.duration_ns());
      break;
    }
    case v1::TracePacket::kNvtxMark: {
      const v1::NvtxMarkEvent& k = p.nvtx_mark();
      m.nvtx_marks.push_back({Str(k.name_id()), Str(k.domain_id()), k.category(), k.color(),
                              k.timestamp_ns(), k.thread_id()});
      Extend(k.timestamp_ns(), k.timestamp_ns());
      break;
    }
    default:
      // Header (handled from reader.header()), interned definitions (the reader keeps
      // them) and packets this reader does not know (the reader counts them).
      break;
  }
}

void TraceModelBuilder::AddDevice(const v1::Device& d) {
  TraceModel& m = model_;
  DeviceInfo& o = m.devices.emplace_back();
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

void TraceModelBuilder::AddKernel(const v1::KernelEvent& k) {
  TraceModel& m = model_;
  KernelEvent& o = m.kernels.emplace_back();
  o.name = Str(k.name_id());
  o.mangled_name = Str(k.mangled_name_id());
  o.launch = Launch(k.launch_config_id());
  o.launch_config_id = k.launch_config_id();
  SetStreamWork(k, o);
  o.graph_id = k.graph_id();
  o.graph_node_id = k.graph_node_id();
  o.grid_id = k.grid_id();
  Extend(o.start_ns, o.end_ns());
}

void TraceModelBuilder::AddMemcpy(const v1::MemcpyEvent& c) {
  TraceModel& m = model_;
  MemcpyEvent& o = m.memcpys.emplace_back();
  o.copy_kind = c.copy_kind();
  o.src_kind = c.src_kind();
  o.dst_kind = c.dst_kind();
  o.bytes = c.bytes();
  SetStreamWork(c, o);
  o.is_async = c.is_async();
  o.src_device_id = c.src_device_id();
  o.dst_device_id = c.dst_device_id();
  o.graph_node_id = c.graph_node_id();
  Extend(o.start_ns, o.end_ns());
}

void TraceModelBuilder::AddMemset(const v1::MemsetEvent& s) {
  TraceModel& m = model_;
  MemsetEvent& o = m.memsets.emplace_back();
  o.value = s.value();
  o.bytes = s.bytes();
  o.memory_kind = s.memory_kind();
  SetStreamWork(s, o);
  o.is_async = s.is_async();
  Extend(o.start_ns, o.end_ns());
}

void TraceModelBuilder::AddPmSample(const v1::PmSample& s) {
  TraceModel& m = model_;
  const PmMetricSet* set = m.FindPmMetricSet(s.metric_set_id());
  m.pm_samples.push_back({s.metric_set_id(), s.start_ns(), s.duration_ns(),
                          {s.values().begin(), s.values().end()},
                          set == nullptr ? -1 : set - m.pm_metric_sets.data()});
  if (set == nullptr) {
    ++samples_without_set_;
  } else if (set->metric_names.size() != static_cast<size_t>(s.values_size())) {
    ++sample_value_mismatches_;
  }
  Extend(s.start_ns(), s.start_ns() + s.duration_ns());
}

void TraceModelBuilder::AddPcStallReasons(const v1::PcStallReasons& r) {
  TraceModel& m = model_;
  // A device's reasons written again (a new context, a later writer) add to the ones
  // already read: a later name for the same index wins, as in the Python reader.
  PcStallReasons* existing = nullptr;
  for (PcStallReasons& e : m.pc_stall_reasons) {
    if (e.device_id == r.device_id()) existing = &e;
  }
  PcStallReasons& o = existing != nullptr ? *existing : m.pc_stall_reasons.emplace_back();
  o.device_id = r.device_id();
  if (r.index_size() != r.name_size()) ++pc_stall_reason_length_mismatches_;
  for (int i = 0; i < r.index_size() && i < r.name_size(); ++i) {
    o.name_by_index[r.index(i)] = r.name(i);
  }
}

void TraceModelBuilder::AddPcSamples(const v1::PcSampleBatch& b) {
  TraceModel& m = model_;
  // A batch the writer split to fit its chunks continues in packets that only add
  // records: append them to the batch they belong to.
  const bool continues = b.continuation() && !m.pc_sample_batches.empty() &&
                         m.pc_sample_batches.back().device_id == b.device_id() &&
                         m.pc_sample_batches.back().context_id == b.context_id();
  if (b.continuation() && !continues) ++orphan_pc_continuations_;
  PcSampleBatch& o = continues ? m.pc_sample_batches.back() : m.pc_sample_batches.emplace_back();
  if (continues) {
    AddPcRecords(b, o);
    return;
  }
  o.device_id = b.device_id();
  o.context_id = b.context_id();
  o.timestamp_ns = b.timestamp_ns();
  o.total_samples = b.total_samples();
  o.dropped_samples = b.dropped_samples();
  o.non_user_kernel_samples = b.non_user_kernel_samples();
  o.hardware_buffer_full = b.hardware_buffer_full();
  AddPcRecords(b, o);
  Extend(b.timestamp_ns(), b.timestamp_ns());
}

void TraceModelBuilder::AddCaptureWindowEdge(const v1::CaptureWindowEdge& e) {
  TraceModel& m = model_;
  auto it = window_by_id_.find(e.window_id());
  if (e.begin()) {
    window_by_id_[e.window_id()] = m.capture_windows.size();
    m.capture_windows.push_back(
        {e.window_id(), e.timestamp_ns(), e.trigger(), std::nullopt, v1::CAPTURE_TRIGGER_UNKNOWN});
  } else if (it == window_by_id_.end() || m.capture_windows[it->second].end_ns.has_value()) {
    ++unmatched_window_ends_;
  } else {
    m.capture_windows[it->second].end_ns = e.timestamp_ns();
    m.capture_windows[it->second].end_trigger = e.trigger();
  }
}

void TraceModelBuilder::AddStats(const v1::Stats& s) {
  TraceModel& m = model_;
  ++m.stats_packets;
  m.stats.clear();
  for (const v1::StatCounter& c : s.counters()) {
    m.stats.push_back({c.name(), c.value(), c.severity(), {}});
  }
  m.stats_final = s.final();
}

absl::StatusOr<TraceModel> TraceModelBuilder::Build() {
  TraceModel& m = model_;
  m.source_name = reader_.name();
  m.file_size = reader_.file_size();
  CopyHeader(reader_.header());
  while (true) {
    absl::StatusOr<const v1::TracePacket*> packet = reader_.Next();
    if (!packet.ok()) return packet.status();
    if (*packet == nullptr) break;
    Add(**packet);
  }

  pm_counter_data_.Finish(&m);
  m.packet_count = reader_.counters().packets;
  m.truncation = reader_.truncation();
  CountReaderProblems();
  CountModelProblems();
  CountValuesOutOfRange();
  return std::move(model_);
}

void TraceModelBuilder::CopyHeader(const v1::Header& h) {
  TraceModel& m = model_;
  m.header.format_major = h.format_major();
  m.header.format_minor = h.format_minor();
  m.header.tool_version = h.tool_version();
  m.header.pid = h.pid();
  m.header.ppid = h.ppid();
  m.header.hostname = h.hostname();
  m.header.command_line.assign(h.command_line().begin(), h.command_line().end());
  for (const v1::KeyValue& kv : h.rank_env()) m.header.rank_env.emplace_back(kv.key(), kv.value());
  m.header.clock_domain = h.clock_domain();
  m.header.time_base_ns = h.time_base_ns();
  m.header.unix_time_base_ns = h.unix_time_base_ns();
  for (const v1::KeyValue& kv : h.config()) m.header.config.emplace_back(kv.key(), kv.value());
  m.header.producer = h.producer();
  m.header.cupti_version = h.cupti_version();
  m.header.cuda_driver_version = h.cuda_driver_version();
  m.header.display_driver_version = h.display_driver_version();
}

absl::StatusOr<TraceModel> TraceModel::Load(TraceReader& reader, const TraceModelOptions& options) {
  TraceModelBuilder builder(reader, options);
  return builder.Build();
}

absl::StatusOr<TraceModel> TraceModel::Load(const std::string& path,
                                            const TraceModelOptions& options) {
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(path);
  if (!reader.ok()) return reader.status();
  return Load(**reader, options);
}

}  // namespace warpscope
