// Perfetto protobuf writer (export_perfetto.h). Tracks are declared first; events are built
// with plain strings, put in time order (stable, so each track keeps its begin/end order) and
// only then interned, since an interned string must be defined in a packet before the first
// one that uses it. Events are read from the file kind by kind (ForEachEvent) and sorted in
// bounded memory twice (spill_sort.h): the slices by track and start, to place them on their
// lanes, then every event by time; launches are joined to their GPU work (launch_join.h).
// Until written, an event is held serialized: what is added later (its type, track, flows) is
// appended as another serialized TrackEvent, which parsing merges into it.
#include "analyzers/analyses/export/export_perfetto.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzers/analyses/export/export_common.h"
#include "analyzers/analyses/export/export_perfetto.pb.h"
#include "analyzers/analyses/export/launch_join.h"
#include "analyzers/analyses/export/spill_sort.h"
#include "analyzers/measures/call_sites.h"
#include "google/protobuf/io/coded_stream.h"

namespace warpscope {
namespace {

namespace pe = perfetto_export;
constexpr uint32_t kSequenceId = 1;  // the one packet sequence every packet is written on

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

pe::DebugAnnotation* NewArg(pe::TrackEvent& e, std::string_view name) {
  pe::DebugAnnotation* a = e.add_debug_annotations();
  a->set_name(std::string(name));
  return a;
}
void Arg(pe::TrackEvent& e, std::string_view name, uint64_t value) {
  NewArg(e, name)->set_uint_value(value);
}
void Arg(pe::TrackEvent& e, std::string_view name, std::string_view value) {
  NewArg(e, name)->set_string_value(std::string(value));
}
void Arg(pe::TrackEvent& e, std::string_view name, double value) {
  NewArg(e, name)->set_double_value(value);
}

pe::TrackEvent Named(std::string_view name, std::string_view category) {
  pe::TrackEvent e;
  e.set_name(std::string(name));
  e.add_categories(std::string(category));
  return e;
}

// What each sorter holds before it writes a sorted run to a temporary file.
constexpr size_t kSortBudgetBytes = 32 << 20;

// Slices are sorted by track, start and then the order they were made in: the key's fields.
// Tracks come in the order the writer declares them: GPU streams by (device, stream), host
// threads by id, start/end NVTX ranges, capture windows.
enum SliceGroup : uint64_t { kGpuStream = 0, kThread = 1, kStartEnd = 2, kCaptureWindows = 3 };
// Which table a slice comes from, then its index there; a flow to add to an API call's slice
// has the call's order with `flow` set, so that it sorts right after the call.
constexpr uint64_t kFlowBit = 1;
uint64_t SliceOrder(uint64_t table, uint64_t index, bool flow = false) {
  return table << 56 | index << 4 | (flow ? kFlowBit : 0);
}
// A slice record: its end, then its serialized begin event.
std::string SliceValue(uint64_t end_ns, const pe::TrackEvent& begin) {
  std::string bytes(reinterpret_cast<const char*>(&end_ns), sizeof(end_ns));
  begin.AppendToString(&bytes);
  return bytes;
}

class PerfettoTraceWriter {
 public:
  PerfettoTraceWriter(pe::BuiltinClock clock, uint64_t clock_base_ns)
      : clock_(clock), clock_base_ns_(clock_base_ns) {}

  absl::Status Write(const ExportedTrace& trace, int64_t pid);
  // Writes the packets to `out`, in pieces of about kExportFlushBytes.
  absl::Status Finish(ExportOutput& out);

 private:
  // A track's slices as they come, by start: where each goes (StackSlices's rule, kept per
  // lane) and the end events still to write on each lane.
  struct PlacedTrack {
    std::string name;
    std::vector<uint64_t> lane_tracks;
    std::vector<std::vector<uint64_t>> place_ends;  // per lane, StackSlices's open ends
    std::vector<std::vector<uint64_t>> open_ends;   // per lane, ends of the open slices
  };
  struct StartingSlice {  // starting together on one track: placed the longer first
    uint64_t end_ns = 0;
    uint64_t order = 0;
    std::string begin;
  };

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
  void Keep(absl::Status s) {
    if (status_.ok()) status_ = std::move(s);
  }
  void AddSlice(const SpillSorter::Key& key, std::string_view value) {
    if (status_.ok()) Keep(slices_->Add(key, value));
  }
  // Places the sorted slices of `sorter` on their tracks and hands their events on.
  void PlaceSlices(SpillSorter& sorter);
  void OpenTrack(const SpillSorter::Key& key);
  void PlaceStarting();
  void Place(uint64_t start_ns, uint64_t end_ns, std::string& begin);
  void CloseToDepth(uint32_t lane, size_t depth);
  void Counter(std::string_view name, uint64_t trace_ns, double value);
  uint64_t ThreadTrack(uint64_t thread_id);

  void WriteThreads(const TraceModel& m, int64_t pid);
  void AddApiCalls(const TraceModel& m, LaunchJoin& launches);
  void AddHost(const TraceModel& m, LaunchJoin& launches);
  void WriteMarks(const TraceModel& m);
  void AddGpu(const TraceModel& m, LaunchJoin& launches);
  void WriteCaptureWindows(const TraceModel& m);

  const pe::BuiltinClock clock_;
  const uint64_t clock_base_ns_;
  uint64_t offset_ns_ = 0;
  uint64_t next_uuid_ = 1;
  uint64_t next_flow_id_ = 1;
  uint64_t process_uuid_ = 0;
  uint64_t capture_track_ = 0;
  const HostTids* host_tids_ = nullptr;
  std::map<uint64_t, std::pair<uint64_t, std::string>> threads_;  // id -> track, name
  std::map<std::string, uint64_t> counters_;                      // name -> track
  std::vector<pe::TrackDescriptor> tracks_;
  absl::Status status_;            // the first error
  SpillSorter* slices_ = nullptr;  // the trace's slices, while they are added
  PlacedTrack placed_;
  SpillSorter::Key track_key_{};
  std::vector<StartingSlice> starting_;
  uint64_t starting_ns_ = 0;
  // Every event, by (time, the order made): events made at one time keep their order.
  SpillSorter events_{kSortBudgetBytes};
  uint64_t next_order_ = 0;
};

void PerfettoTraceWriter::Event(uint64_t trace_ns, std::string_view bytes) {
  if (status_.ok()) Keep(events_.Add({Time(trace_ns), next_order_++, 0, 0}, bytes));
}

void PerfettoTraceWriter::CloseToDepth(uint32_t lane, size_t depth) {
  std::vector<uint64_t>& ends = placed_.open_ends[lane];
  while (ends.size() > depth) {
    pe::TrackEvent end;
    end.set_type(pe::TrackEvent::TYPE_SLICE_END);
    Event(ends.back(), placed_.lane_tracks[lane], std::move(end));
    ends.pop_back();
  }
}

// Slices that overlap without nesting go on extra lanes named after the track.
void PerfettoTraceWriter::Place(uint64_t start_ns, uint64_t end_ns, std::string& begin) {
  SlicePlace place{kNoLane, 0};
  std::vector<std::vector<uint64_t>>& lanes = placed_.place_ends;
  for (uint32_t lane = 0; lane <= lanes.size() && lane < kMaxSliceLanes; ++lane) {
    if (lane == lanes.size()) lanes.emplace_back();
    std::vector<uint64_t>& ends = lanes[lane];
    while (!ends.empty() && ends.back() <= start_ns) ends.pop_back();
    if (!ends.empty() && ends.back() < end_ns) continue;
    place = {lane, static_cast<uint32_t>(ends.size())};
    ends.push_back(end_ns);
    break;
  }
  if (place.lane == kNoLane) return;
  while (placed_.lane_tracks.size() <= place.lane) {
    placed_.lane_tracks.push_back(
        Lane(absl::StrCat(placed_.name, " overlapping ", placed_.lane_tracks.size())));
    placed_.open_ends.emplace_back();
  }
  CloseToDepth(place.lane, place.depth);
  pe::TrackEvent placed;
  placed.set_type(pe::TrackEvent::TYPE_SLICE_BEGIN);
  placed.set_track_uuid(placed_.lane_tracks[place.lane]);
  placed.AppendToString(&begin);  // parsing merges its fields into the event
  Event(start_ns, begin);
  placed_.open_ends[place.lane].push_back(end_ns);
}

void PerfettoTraceWriter::PlaceStarting() {
  std::stable_sort(
      starting_.begin(), starting_.end(),
      [](const StartingSlice& a, const StartingSlice& b) { return a.end_ns > b.end_ns; });
  for (StartingSlice& s : starting_) Place(starting_ns_, s.end_ns, s.begin);
  starting_.clear();
}

void PerfettoTraceWriter::OpenTrack(const SpillSorter::Key& key) {
  for (uint32_t lane = 0; lane < placed_.lane_tracks.size(); ++lane) CloseToDepth(lane, 0);
  placed_ = PlacedTrack();
  track_key_ = key;
  uint64_t track = capture_track_;
  switch (key[0]) {
    case kGpuStream:
      placed_.name = absl::StrCat("GPU ", key[1] >> 32, " stream ", key[1] & 0xffffffffu);
      track = Lane(placed_.name);
      break;
    case kThread:
      track = ThreadTrack(key[1]);
      placed_.name = threads_[key[1]].second;
      break;
    case kStartEnd:
      placed_.name = "NVTX start/end ranges";
      track = Lane(placed_.name);
      break;
    default:
      placed_.name = "capture windows";
  }
  placed_.lane_tracks = {track};
  placed_.open_ends.resize(1);
}

void PerfettoTraceWriter::PlaceSlices(SpillSorter& sorter) {
  bool open = false;
  Keep(sorter.Drain([&](const SpillSorter::Key& key, std::string_view value) {
    if (!open || key[0] != track_key_[0] || key[1] != track_key_[1]) {
      PlaceStarting();
      OpenTrack(key);
      open = true;
    }
    if (key[2] != starting_ns_) PlaceStarting();
    starting_ns_ = key[2];
    uint64_t end_ns = 0;
    std::memcpy(&end_ns, value.data(), sizeof(end_ns));
    value.remove_prefix(sizeof(end_ns));
    if ((key[3] & kFlowBit) == 0) {
      starting_.push_back({end_ns, key[3], std::string(value)});
    } else if (!starting_.empty() && starting_.back().order == (key[3] & ~kFlowBit)) {
      starting_.back().begin.append(value);  // its call's flow, merged when parsed
    }
  }));
  PlaceStarting();
  for (uint32_t lane = 0; lane < placed_.lane_tracks.size(); ++lane) CloseToDepth(lane, 0);
  placed_ = PlacedTrack();
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

// The host's slices on its threads: push/pop NVTX ranges, then API calls, then the
// recording's own time (warpscope's flushes, CUPTI's overhead) on the thread it took.
// Start/end ranges may overlap and end on another thread: a track of their own.
void PerfettoTraceWriter::AddHost(const TraceModel& m, LaunchJoin& launches) {
  uint64_t index = 0;
  Keep(ForEachEvent<NvtxRange>(m, [&](const NvtxRange& r) {
    pe::TrackEvent e = Named(r.name, "nvtx");
    Arg(e, "domain", r.domain);
    Arg(e, "category", uint64_t{r.category});
    if (r.is_push_pop) {
      AddSlice({kThread, r.thread_id, r.start_ns, SliceOrder(0, index)}, SliceValue(r.end_ns(), e));
    } else {
      AddSlice({kStartEnd, 0, r.start_ns, SliceOrder(0, index)}, SliceValue(r.end_ns(), e));
    }
    ++index;
  }));
  AddApiCalls(m, launches);
  index = 0;
  Keep(ForEachEvent<OverheadEvent>(m, [&](const OverheadEvent& o) {
    AddSlice({kThread, o.thread_id, o.start_ns, SliceOrder(2, index++)},
             SliceValue(o.end_ns(), Named(o.kind, "overhead")));
  }));
}

void PerfettoTraceWriter::AddApiCalls(const TraceModel& m, LaunchJoin& launches) {
  uint64_t index = 0;
  Keep(ForEachEvent<ApiCallEvent>(m, [&](const ApiCallEvent& call) {
    pe::TrackEvent e =
        Named(call.name, call.domain == v1::API_DOMAIN_DRIVER ? "cuda_driver" : "cuda_runtime");
    Arg(e, "correlation", uint64_t{call.correlation_id});
    Arg(e, "result", uint64_t{call.result});
    Arg(e, "cbid", uint64_t{call.callback_id});
    // The calling thread's stack, shown on click: the call site, then every frame a line.
    const std::optional<uint64_t> stack_id = launches.StackOf(static_cast<uint32_t>(index));
    if (const CallStackInfo* stack = stack_id ? m.FindCallStack(*stack_id) : nullptr) {
      Arg(e, "call_site", std::string_view(CallSiteOfStack(m, stack).Display()));
      Arg(e, "stack", std::string_view(absl::StrJoin(StackLines(m, *stack), "\n")));
    }
    AddSlice({kThread, call.thread_id, call.start_ns, SliceOrder(1, index++)},
             SliceValue(call.end_ns(), e));
  }));
}

void PerfettoTraceWriter::WriteMarks(const TraceModel& m) {
  Keep(ForEachEvent<NvtxMark>(m, [&](const NvtxMark& mark) {
    pe::TrackEvent e = Named(mark.name, "nvtx");
    e.set_type(pe::TrackEvent::TYPE_INSTANT);
    Arg(e, "domain", mark.domain);
    Event(mark.timestamp_ns, ThreadTrack(mark.thread_id), std::move(e));
  }));
}

void PerfettoTraceWriter::AddGpu(const TraceModel& m, LaunchJoin& launches) {
  // The flow from the launching call to the GPU work: added to the call's slice, which sorts
  // just before it.
  uint64_t work = 0;
  auto add = [&](const StreamWork& w, pe::TrackEvent begin, uint64_t table, uint64_t index) {
    if (const LaunchOf call = launches.Launch(work++); call.kind == LaunchOf::kApiCall) {
      const uint64_t id = next_flow_id_++;
      pe::TrackEvent flow;
      flow.add_flow_ids(id);
      AddSlice({kThread, call.thread_id, call.ns, SliceOrder(1, call.api_index, true)},
               SliceValue(0, flow));
      begin.add_terminating_flow_ids(id);
    }
    Arg(begin, "device", uint64_t{w.device_id});
    Arg(begin, "stream", uint64_t{w.stream_id});
    Arg(begin, "correlation", uint64_t{w.correlation_id});
    AddSlice({kGpuStream, uint64_t{w.device_id} << 32 | w.stream_id, w.start_ns,
              SliceOrder(table, index)},
             SliceValue(w.end_ns(), begin));
  };
  uint64_t index = 0;
  Keep(ForEachEvent<KernelEvent>(m, [&](const KernelEvent& k) {
    pe::TrackEvent e = Named(KernelDisplayName(k), "kernel");
    if (k.launch != nullptr) {
      const LaunchConfig& l = *k.launch;
      Arg(e, "grid", absl::StrCat(l.grid_x, ",", l.grid_y, ",", l.grid_z));
      Arg(e, "block", absl::StrCat(l.block_x, ",", l.block_y, ",", l.block_z));
      Arg(e, "registers per thread", uint64_t{l.registers_per_thread});
      Arg(e, "shared memory", l.shared_memory_per_block());
    }
    if (k.graph_id != 0) Arg(e, "graph", uint64_t{k.graph_id});
    add(k, std::move(e), 0, index++);
  }));
  index = 0;
  Keep(ForEachEvent<MemcpyEvent>(m, [&](const MemcpyEvent& c) {
    pe::TrackEvent e = Named(MemcpyOperationName(c.copy_kind), "memcpy");
    Arg(e, "bytes", c.bytes);
    Arg(e, "src", MemoryKindName(c.src_kind));
    Arg(e, "dst", MemoryKindName(c.dst_kind));
    if (c.duration_ns > 0) Arg(e, "GB/s", static_cast<double>(c.bytes) / c.duration_ns);
    add(c, std::move(e), 1, index++);
  }));
  index = 0;
  Keep(ForEachEvent<MemsetEvent>(m, [&](const MemsetEvent& s) {
    pe::TrackEvent e = Named(kMemsetOperationName, "memset");
    Arg(e, "bytes", s.bytes);
    Arg(e, "value", uint64_t{s.value});
    add(s, std::move(e), 2, index++);
  }));
}

void PerfettoTraceWriter::WriteCaptureWindows(const TraceModel& m) {
  if (m.capture_windows.empty()) return;
  capture_track_ = Lane("capture windows");
  SpillSorter closed(kSortBudgetBytes);
  slices_ = &closed;
  uint64_t index = 0;
  for (const CaptureWindowRange& w : m.capture_windows) {
    pe::TrackEvent e = Named(absl::StrCat("capture window ", w.id), "capture");
    Arg(e, "begin trigger", CaptureTriggerName(w.begin_trigger));
    if (!w.end_ns.has_value()) {
      e.set_type(pe::TrackEvent::TYPE_INSTANT);
      Arg(e, "end", "still open when the trace ended");
      Event(w.begin_ns, capture_track_, std::move(e));
      continue;
    }
    Arg(e, "end trigger", CaptureTriggerName(w.end_trigger));
    AddSlice({kCaptureWindows, 0, w.begin_ns, SliceOrder(0, index++)},
             SliceValue(std::max(w.begin_ns, *w.end_ns), e));
  }
  slices_ = nullptr;
  PlaceSlices(closed);
}

absl::Status PerfettoTraceWriter::Write(const ExportedTrace& trace, int64_t pid) {
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
  {
    absl::StatusOr<std::unique_ptr<LaunchJoin>> launches = LaunchJoin::Of(m, {});
    if (!launches.ok()) return launches.status();
    // Every slice of the trace, sorted by track and start; then placed, in that order.
    SpillSorter slices(kSortBudgetBytes);
    slices_ = &slices;
    AddGpu(m, **launches);
    AddHost(m, **launches);
    Keep((*launches)->status());
    slices_ = nullptr;
    PlaceSlices(slices);
  }
  WriteMarks(m);
  ForEachPmCounterValue(
      m, [&](const std::string& name, uint64_t ns, double value) { Counter(name, ns, value); });
  WriteCaptureWindows(m);
  host_tids_ = nullptr;
  return status_;
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

absl::Status PerfettoTraceWriter::Finish(ExportOutput& output) {
  if (!status_.ok()) return status_;
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
  Interner interner;
  absl::Status drained = events_.Drain([&](const SpillSorter::Key& key, std::string_view bytes) {
    pe::TrackEvent event;
    // The bytes were made by this writer: they parse.
    (void)event.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    pe::TracePacket p;
    p.set_timestamp(key[0]);
    p.set_timestamp_clock_id(clock_);
    p.set_trusted_packet_sequence_id(kSequenceId);
    p.set_sequence_flags(pe::SEQ_NEEDS_INCREMENTAL_STATE);
    interner.Intern(event, *p.mutable_interned_data());
    if (p.interned_data().ByteSizeLong() == 0) p.clear_interned_data();
    *p.mutable_track_event() = std::move(event);
    AppendPacket(p, &out);
    if (out.size() >= kExportFlushBytes) output.Write(std::exchange(out, std::string()));
  });
  if (!drained.ok()) return drained;
  output.Write(out);
  return absl::OkStatus();
}

}  // namespace

absl::Status WritePerfettoTrace(std::span<const TraceModel* const> models, ExportOutput& out) {
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
  for (size_t i = 0; i < traces.size(); ++i) {
    if (absl::Status s = writer.Write(traces[i], static_cast<int64_t>(i) + 1); !s.ok()) return s;
  }
  return writer.Finish(out);
}

absl::StatusOr<std::string> ExportPerfettoTrace(std::span<const TraceModel* const> models) {
  StringExportOutput out;
  if (absl::Status s = WritePerfettoTrace(models, out); !s.ok()) return s;
  return std::move(out.text);
}

}  // namespace warpscope
