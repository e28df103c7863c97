// Loads a trace into TraceModel tables (see trace_model.h): one pass over TraceReader,
// converting packets to plain structs (the problems it counts: trace_model_problems.cc).
#include "analyzers/model/trace_model.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "analyzers/model/event_fields.h"
#include "analyzers/model/import_problems.h"
#include "analyzers/model/trace_model_builder.h"
#include "analyzers/model/wire_fields.h"

namespace warpscope {

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
  // The trace's span covers PM samples and the time of each PC sample batch; outside the
  // slice they are left out.
  if (p.has_pm_sample() &&
      !Extend(p.pm_sample().start_ns(), p.pm_sample().start_ns() + p.pm_sample().duration_ns())) {
    return;
  }
  if (p.has_pc_samples() &&
      !Extend(p.pc_samples().timestamp_ns(), p.pc_samples().timestamp_ns())) {
    return;
  }
  if (samples_.Add(p, *m.strings_)) return;
  switch (p.data_case()) {
    case v1::TracePacket::kThread: {
      const v1::ThreadInfo& t = p.thread();
      m.threads.push_back({t.id(), t.cupti_thread_id(), t.os_tid(), t.name()});
      m.thread_defined_after.push_back(
          {m.EventCount(EventKind::kSync), m.EventCount(EventKind::kApiCall),
           m.EventCount(EventKind::kOverhead), m.EventCount(EventKind::kNvtxRange),
           m.EventCount(EventKind::kNvtxMark), m.EventCount(EventKind::kNcclCall)});
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
      m.end_of_trace = EndOfTraceInfo{p.end_of_trace().timestamp_ns(), p.end_of_trace().reason(),
                                      p.end_of_trace().signal()};
      break;
    default:
      AddEvent(p);
      break;
  }
}

namespace {

// Reads a varint at `*pos` of `bytes`; false when it runs past the end or past 10 bytes.
bool ReadVarint(std::string_view bytes, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && *pos < bytes.size(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(bytes[(*pos)++]);
    *value |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

// The kind of event a packet holds when it holds exactly one length-delimited member that is
// a timed event (what the writer writes); nullopt for anything else, which is then parsed.
std::optional<EventKind> SoleEventKind(std::string_view payload) {
  size_t pos = 0;
  uint64_t tag = 0, length = 0;
  if (!ReadVarint(payload, &pos, &tag) || (tag & 7) != 2) return std::nullopt;
  if (!ReadVarint(payload, &pos, &length) || length != payload.size() - pos) return std::nullopt;
  switch (tag >> 3) {
    case v1::TracePacket::kKernelFieldNumber:
      return EventKind::kKernel;
    case v1::TracePacket::kMemcpyFieldNumber:
      return EventKind::kMemcpy;
    case v1::TracePacket::kMemsetFieldNumber:
      return EventKind::kMemset;
    case v1::TracePacket::kSynchronizationFieldNumber:
      return EventKind::kSync;
    case v1::TracePacket::kApiCallFieldNumber:
      return EventKind::kApiCall;
    case v1::TracePacket::kGraphLaunchFieldNumber:
      return EventKind::kGraphLaunch;
    case v1::TracePacket::kOverheadFieldNumber:
      return EventKind::kOverhead;
    case v1::TracePacket::kNvtxRangeFieldNumber:
      return EventKind::kNvtxRange;
    case v1::TracePacket::kNvtxMarkFieldNumber:
      return EventKind::kNvtxMark;
    case v1::TracePacket::kNcclCallFieldNumber:
      return EventKind::kNcclCall;
    case v1::TracePacket::kApiStackFieldNumber:
      return EventKind::kApiStack;
    case v1::TracePacket::kMemoryFieldNumber:
      return EventKind::kMemory;
    default:
      return std::nullopt;
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
    case v1::TracePacket::kSynchronization:
      AddSync(p.synchronization());
      break;
    case v1::TracePacket::kApiCall:
      AddApiCall(p.api_call());
      break;
    case v1::TracePacket::kGraphLaunch:
      AddGraphLaunch(p.graph_launch());
      break;
    case v1::TracePacket::kOverhead:
      AddOverhead(p.overhead());
      break;
    case v1::TracePacket::kNvtxRange:
      AddNvtxRange(p.nvtx_range());
      break;
    case v1::TracePacket::kNvtxMark:
      AddNvtxMark(p.nvtx_mark());
      break;
    case v1::TracePacket::kNcclCall:
      AddNcclCall(p.nccl_call());
      break;
    case v1::TracePacket::kApiStack:
      AddApiStack(p.api_stack());
      break;
    case v1::TracePacket::kMemory:
      AddMemory(p.memory());
      break;
    default:
      // Header (handled from reader.header()), interned definitions (the reader keeps
      // them) and packets this reader does not know (the reader counts them).
      break;
  }
}

template <typename S>
void TraceModelBuilder::AddSync(const S& s) {
  if (!Extend(s.start_ns(), s.start_ns() + s.duration_ns())) return;
  Deliver(EventKind::kSync, model_.syncs,
          SyncEvent{s.kind(), s.start_ns(), s.duration_ns(), s.context_id(), s.stream_id(),
                    s.cuda_event_id(), s.correlation_id(), s.thread_id()});
}

template <typename A>
void TraceModelBuilder::AddApiCall(const A& a) {
  if (!Extend(a.start_ns(), a.start_ns() + a.duration_ns())) return;
  Deliver(EventKind::kApiCall, model_.api_calls,
          ApiCallEvent{a.domain(), Str(a.name_id()), a.start_ns(), a.duration_ns(), a.thread_id(),
                       a.correlation_id(), a.result(), a.callback_id()});
}

void TraceModelBuilder::AddGraphLaunch(const v1::GraphLaunchEvent& g) {
  GraphLaunchEvent o;
  o.graph_id = g.graph_id();
  SetStreamWork(g, o);
  if (!Extend(g.start_ns(), g.start_ns() + g.duration_ns())) return;
  Deliver(EventKind::kGraphLaunch, model_.graph_launches, std::move(o));
}

void TraceModelBuilder::AddOverhead(const v1::OverheadEvent& o) {
  if (!Extend(o.start_ns(), o.start_ns() + o.duration_ns())) return;
  Deliver(EventKind::kOverhead, model_.overheads,
          OverheadEvent{Str(o.kind_id()), o.start_ns(), o.duration_ns(), o.thread_id()});
}

template <typename R>
void TraceModelBuilder::AddNvtxRange(const R& r) {
  if (!Extend(r.start_ns(), r.start_ns() + r.duration_ns())) return;
  Deliver(EventKind::kNvtxRange, model_.nvtx_ranges,
          NvtxRange{Str(r.name_id()), Str(r.domain_id()), r.category(), r.color(), r.start_ns(),
                    r.duration_ns(), r.thread_id(), r.end_thread_id(), r.is_push_pop(), r.depth()});
}

void TraceModelBuilder::AddNvtxMark(const v1::NvtxMarkEvent& k) {
  if (!Extend(k.timestamp_ns(), k.timestamp_ns())) return;
  Deliver(EventKind::kNvtxMark, model_.nvtx_marks,
          NvtxMark{Str(k.name_id()), Str(k.domain_id()), k.category(), k.color(), k.timestamp_ns(),
                   k.thread_id()});
}

void TraceModelBuilder::AddNcclCall(const v1::NcclCallEvent& n) {
  if (!Extend(n.start_ns(), n.start_ns() + n.duration_ns())) return;
  Deliver(EventKind::kNcclCall, model_.nccl_calls,
          NcclCall{Str(n.name_id()), n.start_ns(), n.duration_ns(), n.thread_id(), n.comm_hash(),
                   n.bytes(), n.reduction_op(), n.root(), n.peer(), n.comm_size(), n.comm_rank(),
                   n.launch_correlation_id(), n.launches(), n.payload_unreadable()});
}

void TraceModelBuilder::AddApiStack(const v1::ApiStackEvent& a) {
  if (options_.index_call_stacks) {
    model_.api_stack_by_correlation_.emplace_back(a.correlation_id(), a.stack_id());
  }
  if (!Extend(a.timestamp_ns(), a.timestamp_ns())) return;
  Deliver(EventKind::kApiStack, model_.api_stacks,
          ApiStack{a.correlation_id(), a.stack_id(), a.timestamp_ns(), a.domain(), a.callback_id(),
                   Str(a.name_id())});
}

void TraceModelBuilder::AddMemory(const v1::MemoryEvent& e) {
  MemoryEvent o;
  o.operation = e.operation();
  o.memory_kind = e.memory_kind();
  o.address = e.address();
  o.bytes = e.bytes();
  o.timestamp_ns = e.timestamp_ns();
  o.device_id = e.device_id();
  o.context_id = e.context_id();
  o.stream_id = e.stream_id();
  o.correlation_id = e.correlation_id();
  o.thread_id = e.thread_id();
  o.pool_address = e.pool_address();
  o.pool_reserved_bytes = e.pool_reserved_bytes();
  o.pool_used_bytes = e.pool_used_bytes();
  o.source = Str(e.source_id());
  o.result = e.result();
  Extend(o.timestamp_ns, o.timestamp_ns);
  Deliver(EventKind::kMemory, model_.memory_events, std::move(o));
}

template <typename K>
void TraceModelBuilder::AddKernel(const K& k) {
  TraceModel& m = model_;
  KernelEvent o;
  o.name = Str(k.name_id());
  o.mangled_name = Str(k.mangled_name_id());
  o.launch = Launch(k.launch_config_id());
  o.launch_config_id = k.launch_config_id();
  SetStreamWork(k, o);
  o.graph_id = k.graph_id();
  o.graph_node_id = k.graph_node_id();
  o.grid_id = k.grid_id();
  if (!Extend(o.start_ns, o.end_ns())) return;
  Deliver(EventKind::kKernel, m.kernels, std::move(o));
}

template <typename C>
void TraceModelBuilder::AddMemcpy(const C& c) {
  TraceModel& m = model_;
  MemcpyEvent o;
  o.copy_kind = c.copy_kind();
  o.src_kind = c.src_kind();
  o.dst_kind = c.dst_kind();
  o.bytes = c.bytes();
  SetStreamWork(c, o);
  o.is_async = c.is_async();
  o.src_device_id = c.src_device_id();
  o.dst_device_id = c.dst_device_id();
  o.graph_node_id = c.graph_node_id();
  if (!Extend(o.start_ns, o.end_ns())) return;
  Deliver(EventKind::kMemcpy, m.memcpys, std::move(o));
}

template <typename S>
void TraceModelBuilder::AddMemset(const S& s) {
  TraceModel& m = model_;
  MemsetEvent o;
  o.value = s.value();
  o.bytes = s.bytes();
  o.memory_kind = s.memory_kind();
  SetStreamWork(s, o);
  o.is_async = s.is_async();
  if (!Extend(o.start_ns, o.end_ns())) return;
  Deliver(EventKind::kMemset, m.memsets, std::move(o));
}

bool TraceModelBuilder::TryAddDecoded(std::string_view payload) {
  using wire_fields::MessageFields;
  struct Decoders {
    MessageFields kernel{v1::KernelEvent::descriptor()};
    MessageFields memcpy{v1::MemcpyEvent::descriptor()};
    MessageFields memset{v1::MemsetEvent::descriptor()};
    MessageFields sync{v1::SyncEvent::descriptor()};
    MessageFields api_call{v1::ApiCallEvent::descriptor()};
    MessageFields nvtx_range{v1::NvtxRangeEvent::descriptor()};
  };
  static const Decoders decoders;
  // One length-delimited member that spans the packet, all of whose fields are known varints.
  const uint8_t* p = reinterpret_cast<const uint8_t*>(payload.data());
  const uint8_t* end = p + payload.size();
  uint64_t tag = 0, length = 0;
  if (!wire_fields::ParseVarint(&p, end, &tag) || (tag & 7) != 2 ||
      !wire_fields::ParseVarint(&p, end, &length) || length != static_cast<uint64_t>(end - p)) {
    return false;
  }
  const std::string_view body(reinterpret_cast<const char*>(p), length);
  wire_fields::FieldValues v;
  using namespace event_fields;  // NOLINT: the views of this switch
  switch (tag >> 3) {
    case v1::TracePacket::kKernelFieldNumber: {
      if (!decoders.kernel.Decode(body, &v)) return false;
      const KernelFields k{{v}};
      reader_.CheckString(k.name_id());
      reader_.CheckString(k.mangled_name_id());
      reader_.CheckLaunchConfig(k.launch_config_id());
      AddKernel(k);
      break;
    }
    case v1::TracePacket::kMemcpyFieldNumber:
      if (!decoders.memcpy.Decode(body, &v)) return false;
      AddMemcpy(MemcpyFields{{v}});
      break;
    case v1::TracePacket::kMemsetFieldNumber:
      if (!decoders.memset.Decode(body, &v)) return false;
      AddMemset(MemsetFields{{v}});
      break;
    case v1::TracePacket::kSynchronizationFieldNumber:
      if (!decoders.sync.Decode(body, &v)) return false;
      reader_.CheckThread(SyncFields{v}.thread_id());
      AddSync(SyncFields{v});
      break;
    case v1::TracePacket::kApiCallFieldNumber: {
      if (!decoders.api_call.Decode(body, &v)) return false;
      const ApiCallFields a{v};
      reader_.CheckString(a.name_id());
      reader_.CheckThread(a.thread_id());
      AddApiCall(a);
      break;
    }
    case v1::TracePacket::kNvtxRangeFieldNumber: {
      if (!decoders.nvtx_range.Decode(body, &v)) return false;
      const NvtxRangeFields r{v};
      reader_.CheckString(r.name_id());
      reader_.CheckString(r.domain_id());
      reader_.CheckThread(r.thread_id());
      if (r.end_thread_id() != r.thread_id()) reader_.CheckThread(r.end_thread_id());
      AddNvtxRange(r);
      break;
    }
    default:
      return false;
  }
  reader_.CountDecoded();
  return true;
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
  m.kept_events = options_.keep_events;
  m.kept_pm_samples = options_.keep_pm_samples;
  m.kept_pc_sample_records = options_.keep_pc_sample_records;
  m.slice = options_.slice;
  m.file_size = reader_.file_size();
  CopyHeader(reader_.header());
  const EventKinds wanted =
      options_.keep_events | (options_.sink != nullptr ? options_.sink_events : 0);
  // The header (Open read it) adds nothing to the tables: packets from the one after it.
  while (true) {
    std::string_view payload;
    absl::StatusOr<bool> framed = reader_.NextPayload(&payload);
    if (!framed.ok()) return framed.status();
    if (!*framed) break;
    if (options_.skip_other_events) {
      if (std::optional<EventKind> kind = SoleEventKind(payload);
          kind.has_value() && (wanted & EventKindBit(*kind)) == 0) {
        reader_.CountDecoded();
        continue;
      }
    }
    if (TryAddDecoded(payload)) continue;
    absl::StatusOr<const v1::TracePacket*> packet = reader_.ParsePayload(payload);
    if (!packet.ok()) return packet.status();
    Add(**packet);
  }

  pm_counter_data_.Finish(&m, samples_.pm_sets_with_values());
  AddCallStacks();
  m.packet_count = reader_.counters().packets;
  m.truncation = reader_.truncation();
  AppendReaderProblems(reader_, m.truncation, &m.import_counters);
  CountModelProblems();
  CountValuesOutOfRange();
  return std::move(model_);
}

// Frames and stacks as the reader kept them (CallStackTables), and the index from a call's
// correlation id to its stack.
void TraceModelBuilder::AddCallStacks() {
  TraceModel& m = model_;
  CallStackTables(reader_, m.stack_frames, m.call_stacks);
  // Stable: of several records for one correlation id, the first in the file is found.
  std::stable_sort(m.api_stack_by_correlation_.begin(), m.api_stack_by_correlation_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
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
  m.header.job_id = h.job_id();
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

absl::Status ReadEventsAgain(const TraceModel& model, EventKind kind, TraceEventSink& sink,
                             bool whole_file) {
  TraceModelOptions options;
  options.keep_events = 0;
  options.keep_pc_sample_records = false;
  options.keep_pm_samples = false;
  options.sink = &sink;
  options.sink_events = EventKindBit(kind);
  options.skip_other_events = true;
  if (!whole_file) options.slice = model.slice;
  return TraceModel::Load(model.source_name, options).status();
}

absl::StatusOr<TraceModel> TraceModel::Load(const std::string& path,
                                            const TraceModelOptions& options) {
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(path);
  if (!reader.ok()) return reader.status();
  TraceModelBuilder builder(**reader, options);
  // Event tables sized beforehand from a second reader that only frames the packets (a tenth
  // of the load's time): a table that grows holds two copies of itself while it moves.
  if (options.keep_events != 0 && !options.slice.has_value()) {
    if (absl::StatusOr<std::unique_ptr<TraceReader>> counting = TraceReader::Open(path);
        counting.ok()) {
      builder.Reserve(**counting);
    }
  }
  return builder.Build();
}

namespace {

// Asks for huge pages under a table just reserved (the whole 2 MiB pages inside it): filling
// a table of millions of events then takes one page fault per 2 MiB instead of one per 4 KiB,
// and first touches of fresh pages are much of a load's cost. A hint: else small pages.
void AdviseHugePages(const void* data, size_t bytes) {
  constexpr uintptr_t kHugePage = 2u << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace

void TraceModelBuilder::Reserve(TraceReader& counting) {
  std::array<size_t, kNumEventKinds> rows{};
  std::string_view payload;
  // Stops at the end or at an error (Build reports it).
  while (counting.NextPayload(&payload).value_or(false)) {
    if (std::optional<EventKind> kind = SoleEventKind(payload)) ++rows[static_cast<size_t>(*kind)];
  }
  TraceModel& m = model_;
  auto reserve = [&](EventKind kind, auto& table) {
    if ((options_.keep_events & EventKindBit(kind)) != 0) {
      table.reserve(rows[static_cast<size_t>(kind)]);
      AdviseHugePages(table.data(), table.capacity() * sizeof(table[0]));
    }
  };
  reserve(EventKind::kKernel, m.kernels);
  reserve(EventKind::kMemcpy, m.memcpys);
  reserve(EventKind::kMemset, m.memsets);
  reserve(EventKind::kSync, m.syncs);
  reserve(EventKind::kApiCall, m.api_calls);
  reserve(EventKind::kGraphLaunch, m.graph_launches);
  reserve(EventKind::kOverhead, m.overheads);
  reserve(EventKind::kNvtxRange, m.nvtx_ranges);
  reserve(EventKind::kNvtxMark, m.nvtx_marks);
  reserve(EventKind::kNcclCall, m.nccl_calls);
  reserve(EventKind::kApiStack, m.api_stacks);
  reserve(EventKind::kMemory, m.memory_events);
  if (options_.index_call_stacks) {
    m.api_stack_by_correlation_.reserve(rows[static_cast<size_t>(EventKind::kApiStack)]);
  }
}

}  // namespace warpscope
