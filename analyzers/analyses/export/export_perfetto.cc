// Perfetto protobuf writer (export_perfetto.h). Tracks are declared first; events are built
// per track with plain strings, put in time order (stable, so each track keeps its begin/end
// order) and only then interned, since an interned string must be defined in a packet before
// the first one that uses it. Until then each event is held serialized (a tenth of the
// message's size): what is added later (its type, track, flows) is appended as another
// serialized TrackEvent, which parsing merges into it, and the whole is parsed again only to
// be interned and written.
#include "analyzers/analyses/export/export_perfetto.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/export/export_common.h"
#include "analyzers/analyses/export/export_perfetto.pb.h"
#include "analyzers/measures/call_sites.h"
#include "google/protobuf/io/coded_stream.h"

namespace warpscope {
namespace {

namespace pe = perfetto_export;

// The one packet sequence every packet is written on.
constexpr uint32_t kSequenceId = 1;

pe::BuiltinClock PerfettoClock(v1::ClockDomain domain) {
  switch (domain) {
    case v1::CLOCK_DOMAIN_REALTIME:
      return pe::BUILTIN_CLOCK_REALTIME;
    case v1::CLOCK_DOMAIN_MONOTONIC:
      return pe::BUILTIN_CLOCK_MONOTONIC;
    case v1::CLOCK_DOMAIN_MONOTONIC_RAW:
      return pe::BUILTIN_CLOCK_MONOTONIC_RAW;
    default:  // a made-up or unknown clock: Perfetto's default
      return pe::BUILTIN_CLOCK_BOOTTIME;
  }
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

void Arg(pe::TrackEvent& e, std::string_view name, uint64_t value) {
  pe::DebugAnnotation* a = e.add_debug_annotations();
  a->set_name(std::string(name));
  a->set_uint_value(value);
}
void Arg(pe::TrackEvent& e, std::string_view name, std::string_view value) {
  pe::DebugAnnotation* a = e.add_debug_annotations();
  a->set_name(std::string(name));
  a->set_string_value(std::string(value));
}
void Arg(pe::TrackEvent& e, std::string_view name, double value) {
  pe::DebugAnnotation* a = e.add_debug_annotations();
  a->set_name(std::string(name));
  a->set_double_value(value);
}

pe::TrackEvent Named(std::string_view name, std::string_view category) {
  pe::TrackEvent e;
  e.set_name(std::string(name));
  e.add_categories(std::string(category));
  return e;
}

// A slice to place on a track: when, and its begin event (name, category, arguments, flows),
// serialized.
struct PendingSlice {
  PendingSlice(uint64_t start, uint64_t end, const pe::TrackEvent& event)
      : start_ns(start), end_ns(end), begin(event.SerializeAsString()) {}
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string begin;
};

// Appends the fields `more` sets to serialized `event`: parsing the result merges them.
void AppendFields(std::string& event, const pe::TrackEvent& more) {
  more.AppendToString(&event);
}

// The API calls' slices, parallel to model.api_calls.
std::vector<PendingSlice> ApiSlices(const TraceModel& m) {
  std::vector<PendingSlice> slices;
  slices.reserve(m.api_calls.size());
  for (const ApiCallEvent& call : m.api_calls) {
    pe::TrackEvent e =
        Named(call.name, call.domain == v1::API_DOMAIN_DRIVER ? "cuda_driver" : "cuda_runtime");
    Arg(e, "correlation", uint64_t{call.correlation_id});
    Arg(e, "result", uint64_t{call.result});
    Arg(e, "cbid", uint64_t{call.callback_id});
    // The calling thread's stack, shown on click: the call site, then every frame a line.
    if (const CallStackInfo* stack = m.StackOfCall(call.correlation_id); stack != nullptr) {
      Arg(e, "call_site", std::string_view(CallSiteOfStack(m, stack).Display()));
      Arg(e, "stack", std::string_view(absl::StrJoin(StackLines(m, *stack), "\n")));
    }
    slices.emplace_back(call.start_ns, call.end_ns(), e);
  }
  return slices;
}

class PerfettoTraceWriter {
 public:
  PerfettoTraceWriter(pe::BuiltinClock clock, uint64_t clock_base_ns)
      : clock_(clock), clock_base_ns_(clock_base_ns) {}

  void Write(const ExportedTrace& trace, int64_t pid);
  // Writes the packets to `out`, in pieces of about kExportFlushBytes.
  void Finish(ExportOutput& out);

 private:
  uint64_t Time(uint64_t trace_ns) const {
    return SaturatingAdd(clock_base_ns_, SaturatingAdd(offset_ns_, trace_ns));
  }
  uint64_t Track(pe::TrackDescriptor descriptor) {
    descriptor.set_uuid(next_uuid_++);
    tracks_.push_back(std::move(descriptor));
    return tracks_.back().uuid();
  }
  uint64_t Lane(std::string name) {
    pe::TrackDescriptor d;
    d.set_parent_uuid(process_uuid_);
    d.set_name(std::move(name));
    return Track(std::move(d));
  }
  void Event(uint64_t trace_ns, uint64_t track, pe::TrackEvent event) {
    event.set_track_uuid(track);
    Event(trace_ns, event.SerializeAsString());
  }
  // A serialized event (with its track).
  void Event(uint64_t trace_ns, std::string_view bytes);
  // Slices on `track`, those that overlap without nesting on extra lanes named after it.
  void Slices(uint64_t track, std::string_view track_name, std::vector<PendingSlice> slices);
  void Counter(std::string_view name, uint64_t trace_ns, double value);
  uint64_t ThreadTrack(uint64_t thread_id);

  void WriteThreads(const TraceModel& m, int64_t pid);
  void WriteHost(const TraceModel& m, std::vector<PendingSlice>& api_slices);
  void WriteGpu(const TraceModel& m, std::vector<PendingSlice>& api_slices);
  void WriteCounters(const TraceModel& m);
  void WriteCaptureWindows(const TraceModel& m);

  const pe::BuiltinClock clock_;
  const uint64_t clock_base_ns_;
  uint64_t offset_ns_ = 0;
  uint64_t next_uuid_ = 1;
  uint64_t next_flow_id_ = 1;
  uint64_t process_uuid_ = 0;
  const HostTids* host_tids_ = nullptr;
  std::map<uint64_t, std::pair<uint64_t, std::string>> threads_;  // id -> track, name
  std::map<std::string, uint64_t> counters_;                      // name -> track
  std::vector<pe::TrackDescriptor> tracks_;
  // Events serialized into chunks of kEventChunkBytes, and where each one is, in the order
  // made: 24 bytes an event besides its bytes.
  struct HeldEvent {
    uint64_t ns = 0;
    uint32_t order = 0;
    uint32_t chunk = 0;
    uint32_t offset = 0;
    uint32_t size = 0;
  };
  static constexpr size_t kEventChunkBytes = 16 << 20;
  std::vector<std::string> event_chunks_;
  std::vector<HeldEvent> events_;
};

void PerfettoTraceWriter::Event(uint64_t trace_ns, std::string_view bytes) {
  if (event_chunks_.empty() ||
      event_chunks_.back().size() + bytes.size() > event_chunks_.back().capacity()) {
    event_chunks_.emplace_back().reserve(std::max(kEventChunkBytes, bytes.size()));
  }
  std::string& chunk = event_chunks_.back();
  events_.push_back({Time(trace_ns), static_cast<uint32_t>(events_.size()),
                     static_cast<uint32_t>(event_chunks_.size() - 1),
                     static_cast<uint32_t>(chunk.size()), static_cast<uint32_t>(bytes.size())});
  chunk.append(bytes);
}

void PerfettoTraceWriter::Slices(uint64_t track, std::string_view track_name,
                                 std::vector<PendingSlice> slices) {
  std::vector<SliceInterval> intervals;
  intervals.reserve(slices.size());
  for (const PendingSlice& s : slices) intervals.push_back({s.start_ns, s.end_ns});
  std::vector<uint32_t> order;
  const std::vector<SlicePlace> places = StackSlices(intervals, &order);
  std::vector<uint64_t> lane_tracks = {track};
  std::vector<std::vector<uint64_t>> open_ends(1);  // per lane, ends of the open slices
  auto close_to_depth = [&](uint32_t lane, size_t depth) {
    while (open_ends[lane].size() > depth) {
      pe::TrackEvent end;
      end.set_type(pe::TrackEvent::TYPE_SLICE_END);
      Event(open_ends[lane].back(), lane_tracks[lane], std::move(end));
      open_ends[lane].pop_back();
    }
  };
  for (uint32_t i : order) {
    const SlicePlace place = places[i];
    if (place.lane == kNoLane) continue;
    while (lane_tracks.size() <= place.lane) {
      lane_tracks.push_back(
          Lane(absl::StrCat(std::string(track_name), " overlapping ", lane_tracks.size())));
      open_ends.emplace_back();
    }
    close_to_depth(place.lane, place.depth);
    pe::TrackEvent placed;
    placed.set_type(pe::TrackEvent::TYPE_SLICE_BEGIN);
    placed.set_track_uuid(lane_tracks[place.lane]);
    std::string& begin = slices[i].begin;
    AppendFields(begin, placed);
    Event(slices[i].start_ns, begin);
    std::string().swap(begin);  // placed: its bytes are held once
    open_ends[place.lane].push_back(slices[i].end_ns);
  }
  for (uint32_t lane = 0; lane < lane_tracks.size(); ++lane) close_to_depth(lane, 0);
}

void PerfettoTraceWriter::Counter(std::string_view name, uint64_t trace_ns, double value) {
  if (!std::isfinite(value)) return;
  auto [it, added] = counters_.try_emplace(std::string(name), 0);
  if (added) {
    pe::TrackDescriptor d;
    d.set_parent_uuid(process_uuid_);
    d.set_name(std::string(name));
    d.mutable_counter();
    it->second = Track(std::move(d));
  }
  pe::TrackEvent e;
  e.set_type(pe::TrackEvent::TYPE_COUNTER);
  e.set_double_counter_value(value);
  Event(trace_ns, it->second, std::move(e));
}

uint64_t PerfettoTraceWriter::ThreadTrack(uint64_t thread_id) {
  auto it = threads_.find(thread_id);
  if (it != threads_.end()) return it->second.first;
  // Events of a thread the trace never described get a track of their own.
  const int64_t tid = host_tids_->Of(thread_id);
  pe::TrackDescriptor d;
  d.set_parent_uuid(process_uuid_);
  d.set_name(absl::StrCat("thread ", tid));
  const uint64_t uuid = Track(std::move(d));
  threads_[thread_id] = {uuid, absl::StrCat("thread ", tid)};
  return uuid;
}

void PerfettoTraceWriter::WriteThreads(const TraceModel& m, int64_t pid) {
  // A thread described twice keeps its last name, as viewers of the Chrome export show.
  std::map<uint64_t, const ThreadInfo*> last;
  for (const ThreadInfo& t : m.threads) last[t.id] = &t;
  for (const auto& [id, t] : last) {
    const int64_t tid = host_tids_->Of(id);
    std::string name = absl::StrCat(t->name, " ", tid);
    if (t->name.empty()) name = absl::StrCat("thread ", tid);
    pe::TrackDescriptor d;
    pe::ThreadDescriptor* thread = d.mutable_thread();
    thread->set_pid(static_cast<int32_t>(pid));
    thread->set_tid(static_cast<int32_t>(std::clamp<int64_t>(
        tid, 0, std::numeric_limits<int32_t>::max())));
    thread->set_thread_name(name);
    threads_[id] = {Track(std::move(d)), std::move(name)};
  }
}

void PerfettoTraceWriter::WriteHost(const TraceModel& m, std::vector<PendingSlice>& api_slices) {
  std::map<uint64_t, std::vector<PendingSlice>> per_thread;
  std::vector<PendingSlice> start_end;
  for (const NvtxRange& r : m.nvtx_ranges) {
    pe::TrackEvent e = Named(r.name, "nvtx");
    Arg(e, "domain", r.domain);
    Arg(e, "category", uint64_t{r.category});
    PendingSlice s(r.start_ns, r.end_ns(), e);
    if (r.is_push_pop) {
      per_thread[r.thread_id].push_back(std::move(s));
    } else {
      // Start/end ranges may overlap and end on another thread: a track of their own.
      start_end.push_back(std::move(s));
    }
  }
  for (size_t i = 0; i < m.api_calls.size(); ++i) {
    per_thread[m.api_calls[i].thread_id].push_back(std::move(api_slices[i]));
  }
  // The recording's own time (warpscope's flushes, CUPTI's overhead) on the thread it took.
  for (const OverheadEvent& o : m.overheads) {
    per_thread[o.thread_id].emplace_back(o.start_ns, o.end_ns(), Named(o.kind, "overhead"));
  }
  for (auto& [thread_id, slices] : per_thread) {
    const uint64_t track = ThreadTrack(thread_id);
    Slices(track, threads_[thread_id].second, std::move(slices));
  }
  if (!start_end.empty()) Slices(Lane("NVTX start/end ranges"), "NVTX start/end ranges",
                                 std::move(start_end));
  for (const NvtxMark& mark : m.nvtx_marks) {
    pe::TrackEvent e = Named(mark.name, "nvtx");
    e.set_type(pe::TrackEvent::TYPE_INSTANT);
    Arg(e, "domain", mark.domain);
    Event(mark.timestamp_ns, ThreadTrack(mark.thread_id), std::move(e));
  }
}

void PerfettoTraceWriter::WriteGpu(const TraceModel& m, std::vector<PendingSlice>& api_slices) {
  // The model holds its API calls (api_slices is parallel to them): this reads no file.
  const LaunchCalls launches = LaunchCalls::Of(m).value_or(LaunchCalls());
  std::map<std::pair<uint32_t, uint32_t>, std::vector<PendingSlice>> streams;
  // The flow from the launching call (still pending, in api_slices) to the GPU work.
  auto add = [&](const StreamWork& w, pe::TrackEvent begin) {
    if (const LaunchCalls::Call* call = launches.Find(w.correlation_id)) {
      const uint64_t id = next_flow_id_++;
      pe::TrackEvent flow;
      flow.add_flow_ids(id);
      AppendFields(api_slices[call->index].begin, flow);
      begin.add_terminating_flow_ids(id);
    }
    Arg(begin, "device", uint64_t{w.device_id});
    Arg(begin, "stream", uint64_t{w.stream_id});
    Arg(begin, "correlation", uint64_t{w.correlation_id});
    return PendingSlice(w.start_ns, w.end_ns(), begin);
  };
  for (const KernelEvent& k : m.kernels) {
    pe::TrackEvent e = Named(KernelDisplayName(k), "kernel");
    if (k.launch != nullptr) {
      const LaunchConfig& l = *k.launch;
      Arg(e, "grid", absl::StrCat(l.grid_x, ",", l.grid_y, ",", l.grid_z));
      Arg(e, "block", absl::StrCat(l.block_x, ",", l.block_y, ",", l.block_z));
      Arg(e, "registers per thread", uint64_t{l.registers_per_thread});
      Arg(e, "shared memory", l.shared_memory_per_block());
    }
    if (k.graph_id != 0) Arg(e, "graph", uint64_t{k.graph_id});
    streams[{k.device_id, k.stream_id}].push_back(add(k, std::move(e)));
  }
  for (const MemcpyEvent& c : m.memcpys) {
    pe::TrackEvent e = Named(MemcpyOperationName(c.copy_kind), "memcpy");
    Arg(e, "bytes", c.bytes);
    Arg(e, "src", MemoryKindName(c.src_kind));
    Arg(e, "dst", MemoryKindName(c.dst_kind));
    if (c.duration_ns > 0) Arg(e, "GB/s", static_cast<double>(c.bytes) / c.duration_ns);
    streams[{c.device_id, c.stream_id}].push_back(add(c, std::move(e)));
  }
  for (const MemsetEvent& s : m.memsets) {
    pe::TrackEvent e = Named(kMemsetOperationName, "memset");
    Arg(e, "bytes", s.bytes);
    Arg(e, "value", uint64_t{s.value});
    streams[{s.device_id, s.stream_id}].push_back(add(s, std::move(e)));
  }
  for (auto& [key, slices] : streams) {
    const std::string name = absl::StrCat("GPU ", key.first, " stream ", key.second);
    Slices(Lane(name), name, std::move(slices));
  }
}

void PerfettoTraceWriter::WriteCounters(const TraceModel& m) {
  ForEachPmCounterValue(m, [&](const std::string& name, uint64_t ns, double value) {
    Counter(name, ns, value);
  });
}

void PerfettoTraceWriter::WriteCaptureWindows(const TraceModel& m) {
  if (m.capture_windows.empty()) return;
  const uint64_t track = Lane("capture windows");
  std::vector<PendingSlice> closed;
  for (const CaptureWindowRange& w : m.capture_windows) {
    pe::TrackEvent e = Named(absl::StrCat("capture window ", w.id), "capture");
    Arg(e, "begin trigger", CaptureTriggerName(w.begin_trigger));
    if (!w.end_ns.has_value()) {
      e.set_type(pe::TrackEvent::TYPE_INSTANT);
      Arg(e, "end", "still open when the trace ended");
      Event(w.begin_ns, track, std::move(e));
      continue;
    }
    Arg(e, "end trigger", CaptureTriggerName(w.end_trigger));
    closed.emplace_back(w.begin_ns, std::max(w.begin_ns, *w.end_ns), e);
  }
  Slices(track, "capture windows", std::move(closed));
}

void PerfettoTraceWriter::Write(const ExportedTrace& trace, int64_t pid) {
  const TraceModel& m = *trace.model;
  offset_ns_ = trace.offset_ns;
  threads_.clear();
  counters_.clear();
  const HostTids host_tids(m);
  host_tids_ = &host_tids;
  pe::TrackDescriptor process;
  process.mutable_process()->set_pid(static_cast<int32_t>(pid));
  process.mutable_process()->set_process_name(trace.label);
  process_uuid_ = Track(std::move(process));
  WriteThreads(m, pid);
  // API calls stay pending until the GPU work they launched has added its flow ids.
  std::vector<PendingSlice> api_slices = ApiSlices(m);
  WriteGpu(m, api_slices);
  WriteHost(m, api_slices);
  WriteCounters(m);
  WriteCaptureWindows(m);
  host_tids_ = nullptr;
}

// Replaces the event's strings by interned ids, defining new ones in `interned`.
class Interner {
 public:
  void Intern(pe::TrackEvent& e, pe::InternedData& interned) {
    if (e.has_name()) {
      e.set_name_iid(Id(names_, e.name(), interned.mutable_event_names()));
    }
    for (const std::string& c : e.categories()) {
      e.add_category_iids(Id(categories_, c, interned.mutable_event_categories()));
    }
    e.clear_categories();
    for (pe::DebugAnnotation& a : *e.mutable_debug_annotations()) {
      if (a.has_name()) {
        a.set_name_iid(Id(arg_names_, a.name(), interned.mutable_debug_annotation_names()));
      }
    }
  }

 private:
  using Table = std::map<std::string, uint64_t, std::less<>>;
  static uint64_t Id(Table& table, const std::string& text,
                     google::protobuf::RepeatedPtrField<pe::InternedString>* defined) {
    auto [it, added] = table.try_emplace(text, table.size() + 1);
    if (added) {
      pe::InternedString* s = defined->Add();
      s->set_iid(it->second);
      s->set_name(text);
    }
    return it->second;
  }
  Table names_, categories_, arg_names_;
};

// Appends `packet` as one `Trace.packet` field. Packets are encoded one at a time: no
// message holds the whole file, so protobuf's 2 GiB limit on one message does not apply.
void AppendPacket(const pe::TracePacket& packet, std::string* out) {
  constexpr uint8_t kTracePacketTag = (1 << 3) | 2;  // field 1, length-delimited
  const std::string bytes = packet.SerializeAsString();
  uint8_t key[1 + 10] = {kTracePacketTag};  // the tag and the length, a varint
  const uint8_t* end =
      google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(bytes.size(), key + 1);
  out->append(reinterpret_cast<const char*>(key), static_cast<size_t>(end - key));
  out->append(bytes);
}

void PerfettoTraceWriter::Finish(ExportOutput& output) {
  std::string out;
  pe::TracePacket clock;
  clock.set_trusted_packet_sequence_id(kSequenceId);
  clock.set_sequence_flags(pe::SEQ_INCREMENTAL_STATE_CLEARED);
  pe::ClockSnapshot* snapshot = clock.mutable_clock_snapshot();
  pe::ClockSnapshot::Clock* reading = snapshot->add_clocks();
  reading->set_clock_id(clock_);
  reading->set_timestamp(clock_base_ns_);
  snapshot->set_primary_trace_clock(clock_);
  AppendPacket(clock, &out);
  for (pe::TrackDescriptor& track : tracks_) {
    pe::TracePacket p;
    p.set_trusted_packet_sequence_id(kSequenceId);
    *p.mutable_track_descriptor() = std::move(track);
    AppendPacket(p, &out);
  }
  // Time order; events made at one time keep the order they were made in.
  std::sort(events_.begin(), events_.end(), [](const HeldEvent& a, const HeldEvent& b) {
    return a.ns != b.ns ? a.ns < b.ns : a.order < b.order;
  });
  Interner interner;
  for (const HeldEvent& held : events_) {
    pe::TrackEvent event;
    // The bytes were made by this writer: they parse.
    (void)event.ParseFromArray(event_chunks_[held.chunk].data() + held.offset,
                               static_cast<int>(held.size));
    pe::TracePacket p;
    p.set_timestamp(held.ns);
    p.set_timestamp_clock_id(clock_);
    p.set_trusted_packet_sequence_id(kSequenceId);
    p.set_sequence_flags(pe::SEQ_NEEDS_INCREMENTAL_STATE);
    interner.Intern(event, *p.mutable_interned_data());
    if (p.interned_data().ByteSizeLong() == 0) p.clear_interned_data();
    *p.mutable_track_event() = std::move(event);
    AppendPacket(p, &out);
    if (out.size() >= kExportFlushBytes) output.Write(std::exchange(out, std::string()));
  }
  output.Write(out);
}

}  // namespace

void WritePerfettoTrace(std::span<const TraceModel* const> models, ExportOutput& out) {
  const std::vector<ExportedTrace> traces = PrepareExport(models);
  // The time line starts at the earliest trace's time 0 (offset 0) on its clock.
  pe::BuiltinClock clock = pe::BUILTIN_CLOCK_BOOTTIME;
  uint64_t base_ns = 0;
  for (const ExportedTrace& t : traces) {
    if (t.offset_ns != 0) continue;
    clock = PerfettoClock(t.model->header.clock_domain);
    base_ns = clock == pe::BUILTIN_CLOCK_BOOTTIME ? 0 : t.model->header.time_base_ns;
    break;
  }
  PerfettoTraceWriter writer(clock, base_ns);
  // Process ids are the trace's position, from 1, as in the Chrome export.
  for (size_t i = 0; i < traces.size(); ++i) writer.Write(traces[i], static_cast<int64_t>(i) + 1);
  writer.Finish(out);
}

std::string ExportPerfettoTrace(std::span<const TraceModel* const> models) {
  StringExportOutput out;
  WritePerfettoTrace(models, out);
  return std::move(out.text);
}

}  // namespace warpscope
