// TraceModel: a whole .wst trace loaded into plain C++ tables with interned names resolved,
// plus the problems met while loading ("import counters"). Analyses (summary, occupancy,
// tails, ...) read these tables and never touch the protobuf classes. Units: times and
// durations are ns since Header.time_base_ns (the trace's time 0), sizes are bytes. Tables are
// in file order, which the writer does not promise to be time order: sort when you need it.
#ifndef WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_H_
#define WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzers/model/sample_events.h"
#include "analyzers/model/trace_reader.h"
#include "proto/writer/trace_records.h"

namespace warpscope {

// ---------------------------------------------------------------------------------------
// Metadata

struct TraceHeader {
  uint32_t format_major = 0;
  uint32_t format_minor = 0;
  std::string tool_version;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  std::string hostname;
  std::vector<std::string> command_line;
  std::vector<std::pair<std::string, std::string>> rank_env;  // RANK, LOCAL_RANK, ...
  std::string job_id;  // the run of a job, e.g. "TORCHELASTIC_RUN_ID=abc"; empty = unknown
  v1::ClockDomain clock_domain = v1::CLOCK_DOMAIN_UNSPECIFIED;
  uint64_t time_base_ns = 0;       // absolute time of trace time 0, in clock_domain
  uint64_t unix_time_base_ns = 0;  // ns since the epoch at trace time 0; 0 = unknown
  std::vector<std::pair<std::string, std::string>> config;  // WARPSCOPE_* as used
  std::string producer;
  uint32_t cupti_version = 0;
  uint32_t cuda_driver_version = 0;
  std::string display_driver_version;  // kernel module, e.g. "580.159.04"; empty = unknown
};

// The process's global rank: the first of kRankVariables (proto/settings/job_variables.h) in
// rank_env that holds a whole number >= 0; none when no launcher gave one.
std::optional<int64_t> HeaderRank(const TraceHeader& header);

// One GPU (Device packet) and one context (ContextInfo packet): the records the writer is
// handed, generated from trace.proto, whose Device and ContextInfo messages give each field's
// meaning and unit.
using DeviceInfo = DeviceRecord;
using ContextInfo = ContextRecord;

struct ThreadInfo {
  uint64_t id = 0;  // the small id events use
  uint64_t cupti_thread_id = 0;
  uint32_t os_tid = 0;
  std::string name;
};

// Everything that decides a launch's occupancy (LaunchConfig packet).
struct LaunchConfig {
  uint64_t id = 0;
  uint32_t grid_x = 0, grid_y = 0, grid_z = 0;
  uint32_t block_x = 0, block_y = 0, block_z = 0;
  uint32_t cluster_x = 0, cluster_y = 0, cluster_z = 0;  // 0 = no clusters
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_memory = 0;   // bytes per block
  uint32_t dynamic_shared_memory = 0;  // bytes per block
  uint32_t local_memory_per_thread = 0;
  uint32_t shared_memory_executed = 0;  // bytes per SM the launch ran with
  uint32_t shared_memory_config = 0;
  uint32_t shared_memory_carveout_requested = 0;  // percent; 0 = default
  uint32_t shmem_limit_config = 0;                // 0 = default, 1 = opt-in

  uint64_t threads_per_block() const { return uint64_t{block_x} * block_y * block_z; }
  uint64_t blocks() const { return uint64_t{grid_x} * grid_y * grid_z; }
  uint64_t shared_memory_per_block() const {
    return uint64_t{static_shared_memory} + dynamic_shared_memory;
  }
};

// ---------------------------------------------------------------------------------------
// Events. Names are views into the model's string table (valid while the model lives);
// undefined interned ids read "<unknown:ID>" and are counted in import_counters.

// Work that ran on a GPU stream: when and where. Kernels, copies, memsets and graph
// launches share these fields.
struct StreamWork {
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t end_ns() const { return start_ns + duration_ns; }
};

struct KernelEvent : StreamWork {
  std::string_view name;  // demangled
  std::string_view mangled_name;
  const LaunchConfig* launch = nullptr;  // nullptr when the launch config is unknown
  uint64_t launch_config_id = 0;         // as written, also when it was never defined
  uint32_t graph_id = 0;                 // 0 = not from a graph
  uint32_t graph_node_id = 0;
  uint64_t grid_id = 0;
};

struct MemcpyEvent : StreamWork {
  v1::CopyKind copy_kind = v1::COPY_KIND_UNKNOWN;
  v1::MemoryKind src_kind = v1::MEMORY_KIND_UNKNOWN;
  v1::MemoryKind dst_kind = v1::MEMORY_KIND_UNKNOWN;
  uint64_t bytes = 0;
  bool is_async = false;
  uint32_t src_device_id = 0;  // peer copies
  uint32_t dst_device_id = 0;
  uint32_t graph_node_id = 0;
};

struct MemsetEvent : StreamWork {
  uint32_t value = 0;
  uint64_t bytes = 0;
  v1::MemoryKind memory_kind = v1::MEMORY_KIND_UNKNOWN;
  bool is_async = false;
};

// One allocation, free, mapping, refused request or pool operation (MemoryEvent packet; its
// comments in trace.proto give each field's meaning). `source` is the module that asked
// ("libnccl.so.2"), "" when unknown.
struct MemoryEvent {
  v1::MemoryOperation operation = v1::MEMORY_OPERATION_UNKNOWN;
  v1::MemoryKind memory_kind = v1::MEMORY_KIND_UNKNOWN;
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t timestamp_ns = 0;
  uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  uint64_t thread_id = 0;
  uint64_t pool_address = 0, pool_reserved_bytes = 0, pool_used_bytes = 0;
  std::string_view source;
  uint32_t result = 0;
};

// A host thread waiting for the GPU.
struct SyncEvent {
  v1::SyncKind kind = v1::SYNC_KIND_UNKNOWN;
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t cuda_event_id = 0;
  uint32_t correlation_id = 0;
  uint64_t thread_id = 0;  // ThreadInfo.id; 0 = unknown
  uint64_t end_ns() const { return start_ns + duration_ns; }
};

struct ApiCallEvent {
  v1::ApiDomain domain = v1::API_DOMAIN_UNKNOWN;
  std::string_view name;
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint64_t thread_id = 0;
  uint32_t correlation_id = 0;
  uint32_t result = 0;  // 0 = success
  uint32_t callback_id = 0;
  uint64_t end_ns() const { return start_ns + duration_ns; }
};

struct GraphLaunchEvent : StreamWork {
  uint32_t graph_id = 0;
};

// CUPTI's own overhead.
struct OverheadEvent {
  std::string_view kind;
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint64_t thread_id = 0;
  uint64_t end_ns() const { return start_ns + duration_ns; }
};

struct NvtxRange {
  std::string_view name;
  std::string_view domain;  // "" = the default domain
  uint32_t category = 0;
  uint32_t color = 0;  // ARGB; 0 = none
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint64_t thread_id = 0;
  uint64_t end_thread_id = 0;
  bool is_push_pop = false;
  uint32_t depth = 0;
  uint64_t end_ns() const { return start_ns + duration_ns; }
};

struct NvtxMark {
  std::string_view name;
  std::string_view domain;
  uint32_t category = 0;
  uint32_t color = 0;
  uint64_t timestamp_ns = 0;
  uint64_t thread_id = 0;
};

// One call into NCCL's API (NcclCallEvent): the collective, its communicator and size, and
// the kernel launch it made (0 for a call queued in ncclGroupStart/End).
struct NcclCall {
  std::string_view name;  // "ncclAllReduce", "ncclGroupEnd", ...
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint64_t thread_id = 0;
  uint64_t comm_hash = 0;  // 0 = unknown
  uint64_t bytes = 0;
  int32_t reduction_op = -1;
  int32_t root = -1;
  int32_t peer = -1;
  int32_t comm_size = 0;
  int32_t comm_rank = -1;
  uint32_t launch_correlation_id = 0;
  uint32_t launches = 0;
  bool payload_unreadable = false;
  uint64_t end_ns() const { return start_ns + duration_ns; }
};

// ---------------------------------------------------------------------------------------
// Call stacks (StackFrame, CallStack and ApiStackEvent packets). Frames and stacks are
// interned: the model holds each distinct one once, so their memory grows with the places the
// program called CUDA from, not with its calls.

// One place of a stack: a Python line, or a native return address in a module.
struct StackFrameInfo {
  uint64_t id = 0;
  v1::FrameKind kind = v1::FRAME_KIND_UNKNOWN;
  std::string_view file;      // Python: the source file; native: the module's path
  std::string_view function;  // Python: the qualified name; native: the symbol, "" when none
  uint32_t line = 0;          // Python: the line being run; 0 = unknown or native
  uint32_t first_line = 0;    // Python: the function's first line
  uint64_t module_offset = 0;  // native: the return address minus the module's load address
};

struct CallStackInfo {
  uint64_t id = 0;
  // Indices into TraceModel::stack_frames, innermost (the caller of CUDA) first; frames that
  // were never defined are left out (counted: reader.undefined_stack_frame_refs).
  std::vector<uint32_t> frames;
  bool truncated = false;  // frames beyond the recorder's depth are missing
  // With `truncated`: the last `outermost` of `frames` are the stack's outermost frames, and
  // `left_out` frames are missing just before them; 0: the missing frames are the outermost.
  uint32_t outermost = 0;
  uint32_t left_out = 0;
};

// The stack of the thread that made one CUDA API call (ApiStackEvent), joined to the call, its
// kernel, copy, memset or sync through the correlation id.
struct ApiStack {
  uint32_t correlation_id = 0;
  uint64_t stack_id = 0;  // CallStackInfo::id
  uint64_t timestamp_ns = 0;
  v1::ApiDomain domain = v1::API_DOMAIN_UNKNOWN;
  uint32_t callback_id = 0;
  std::string_view name;  // what was called, e.g. "cudaStreamSynchronize"
};

// Sampling: PmMetricSet, PmSample, PcStallReasons, PcRecord, PcSampleBatch (sample_events.h).

// ---------------------------------------------------------------------------------------
// Capture and bookkeeping

// A capture window, from its begin edge to its end edge (two CaptureWindowEdge packets). A
// window still open when the trace ended has no end.
struct CaptureWindowRange {
  uint32_t id = 0;
  uint64_t begin_ns = 0;
  v1::CaptureTrigger begin_trigger = v1::CAPTURE_TRIGGER_UNKNOWN;
  std::optional<uint64_t> end_ns;
  v1::CaptureTrigger end_trigger = v1::CAPTURE_TRIGGER_UNKNOWN;
};

struct Notice {
  uint64_t timestamp_ns = 0;
  v1::Severity severity = v1::SEVERITY_INFO;
  std::string source;
  std::string message;
};

// A counter: the writer's and collectors' (Stats) or the reader's own (docs/format.md).
struct StatCounter {
  std::string name;
  uint64_t value = 0;
  v1::Severity severity = v1::SEVERITY_INFO;
  std::string description;  // import counters only: what it means, for `info`
};

struct EndOfTraceInfo {
  uint64_t timestamp_ns = 0;
  v1::EndReason reason = v1::END_REASON_UNKNOWN;
  uint32_t signal = 0;  // the signal that ended the process (signal, crash); 0: not known
};

// First and last instants covered by events (start of the earliest, end of the latest).
struct TimeSpan {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  bool empty = true;  // no timed events at all
  uint64_t duration_ns() const { return empty ? 0 : end_ns - begin_ns; }
};

// A stretch of trace time, [begin_ns, end_ns) (TraceModelOptions::slice). An event is in it
// when it overlaps it: it starts before end_ns and ends after begin_ns (an instant: at or
// after begin_ns). Events that straddle an edge are kept whole.
struct TimeSlice {
  uint64_t begin_ns = 0;
  uint64_t end_ns = UINT64_MAX;
  bool Overlaps(uint64_t begin, uint64_t end) const {
    return begin < end_ns && (end > begin_ns || begin >= begin_ns);
  }
};

// ---------------------------------------------------------------------------------------

// The tables of timed events, the ones that grow with a trace's length.
enum class EventKind : uint8_t {
  kKernel, kMemcpy, kMemset, kSync, kApiCall, kGraphLaunch, kOverhead, kNvtxRange, kNvtxMark,
  kNcclCall, kApiStack, kMemory,
};
inline constexpr size_t kNumEventKinds = 12;
using EventKinds = uint32_t;  // a set of EventKind, one bit each
constexpr EventKinds EventKindBit(EventKind kind) { return 1u << static_cast<unsigned>(kind); }
inline constexpr EventKinds kAllEventKinds = (1u << kNumEventKinds) - 1;

// Receives the timed events of a trace in file order while it loads (TraceModelOptions::sink),
// for commands that convert a trace without holding its events. Names and launch configs
// point into the model being loaded, as in its tables.
class TraceEventSink {
 public:
  virtual ~TraceEventSink() = default;
  virtual void Add(const KernelEvent&) {}
  virtual void Add(const MemcpyEvent&) {}
  virtual void Add(const MemsetEvent&) {}
  virtual void Add(const SyncEvent&) {}
  virtual void Add(const ApiCallEvent&) {}
  virtual void Add(const GraphLaunchEvent&) {}
  virtual void Add(const OverheadEvent&) {}
  virtual void Add(const NvtxRange&) {}
  virtual void Add(const NvtxMark&) {}
  virtual void Add(const NcclCall&) {}
  virtual void Add(const ApiStack&) {}
  virtual void Add(const MemoryEvent&) {}
};

struct TraceModelOptions {
  // Keep PC sample records (the largest part of a PC-sampling trace). Batches keep their
  // totals either way.
  bool keep_pc_sample_records = true;
  // Given, it receives the PC sample records of each PcSampleBatch packet as it is read, with
  // their batch's fields (a batch split over packets comes in parts), kept or not.
  std::function<void(const PcSampleBatch&)> pc_records_sink;
  // Keep PM samples. Without them, their problems are still counted (import counters).
  bool keep_pm_samples = true;
  // Given, it receives each PM sample of the file (PmSample packets) as it is read, kept or
  // not. Raw samples (PmCounterData) are evaluated once the file is read: they are kept.
  std::function<void(const PmSample&)> pm_samples_sink;
  // The event tables to fill. The others stay empty (their events are still counted in
  // TraceModel::event_counts, and still widen the span and count import problems): memory
  // then grows with what the trace defines (names, threads, devices, launch configs, stacks)
  // and its samples, not with its events.
  EventKinds keep_events = kAllEventKinds;
  // Build StackOfCall's index (16 bytes per call with a stack; the exports join their own).
  bool index_call_stacks = true;
  // Given, it receives each event of the kinds in sink_events as it is read.
  TraceEventSink* sink = nullptr;
  EventKinds sink_events = 0;
  // Events neither kept nor sent to the sink are skipped without being parsed: fast, but their
  // counts, span and problems are then missing. For a pass over a file that was loaded once
  // already (the exports read a trace once per kind of event, in the order they write).
  bool skip_other_events = false;
  // Given, only the timed events that overlap it are counted, kept, sent to the sink and widen
  // `span`, and only the PM samples and PC sample batches in it are kept; definitions and the
  // trace's own state are read whole. The event tables
  // are then not sized beforehand, so memory grows with the slice's events.
  std::optional<TimeSlice> slice;
};

class TraceModel {
 public:
  // Loads the file at `path`. Fails on what TraceReader::Open and Next fail on (not a trace,
  // newer format, corrupt data); a truncated trace loads, with `truncation` filled in and
  // import counters saying what was lost.
  static absl::StatusOr<TraceModel> Load(const std::string& path,
                                         const TraceModelOptions& options = {});
  // Loads from a reader that has just been opened (nothing read past the header).
  static absl::StatusOr<TraceModel> Load(TraceReader& reader,
                                         const TraceModelOptions& options = {});

  TraceModel(TraceModel&&) = default;
  TraceModel& operator=(TraceModel&&) = default;
  TraceModel(const TraceModel&) = delete;  // events point into tables the model owns
  TraceModel& operator=(const TraceModel&) = delete;

  // Where it came from.
  std::string source_name;  // the path given to Load
  uint64_t file_size = 0;   // bytes
  uint64_t packet_count = 0;

  TraceHeader header;
  std::vector<DeviceInfo> devices;  // in the order they appear
  std::vector<ContextInfo> contexts;
  std::vector<ThreadInfo> threads;  // every definition, in file order
  // How many events of each table that names threads came before each entry of `threads`:
  // an event uses the last definition of its thread id before it (docs/format.md).
  struct ThreadEventCounts {
    size_t syncs = 0, api_calls = 0, overheads = 0, nvtx_ranges = 0, nvtx_marks = 0,
           nccl_calls = 0;
  };
  std::vector<ThreadEventCounts> thread_defined_after;  // parallel to `threads`

  std::vector<KernelEvent> kernels;
  std::vector<MemcpyEvent> memcpys;
  std::vector<MemsetEvent> memsets;
  std::vector<SyncEvent> syncs;
  std::vector<ApiCallEvent> api_calls;
  std::vector<GraphLaunchEvent> graph_launches;
  std::vector<OverheadEvent> overheads;
  std::vector<NvtxRange> nvtx_ranges;
  std::vector<NvtxMark> nvtx_marks;
  std::vector<NcclCall> nccl_calls;
  std::vector<StackFrameInfo> stack_frames;  // by id, the last definition of each
  std::vector<CallStackInfo> call_stacks;    // by id, the last definition of each
  std::vector<ApiStack> api_stacks;          // one per recorded call, in file order
  std::vector<MemoryEvent> memory_events;
  // Events of each EventKind read, kept in their tables or not (TraceModelOptions), and the
  // kinds whose tables were filled.
  std::array<uint64_t, kNumEventKinds> event_counts{};
  EventKinds kept_events = kAllEventKinds;
  uint64_t EventCount(EventKind kind) const { return event_counts[static_cast<size_t>(kind)]; }
  std::vector<PmMetricSet> pm_metric_sets;
  std::vector<PmSample> pm_samples;  // in-process values, then raw samples evaluated at load
  bool kept_pm_samples = true;        // TraceModelOptions::keep_pm_samples
  // Why raw PM samples (PmCounterData) could not all be evaluated, e.g. no CUPTI on this
  // machine; empty when all were. The analyses that need PM samples show it.
  std::string pm_samples_unavailable;
  std::vector<PcStallReasons> pc_stall_reasons;
  std::vector<PcSampleBatch> pc_sample_batches;
  bool kept_pc_sample_records = true;  // TraceModelOptions::keep_pc_sample_records
  // Module binaries of a PC sampling run (CubinImage), whole, by cuptiGetCubinCrc: the CRC
  // that PcRecord::cubin_crc refers to. Cubins whose parts did not all reach the file are
  // left out (counter model.incomplete_cubins).
  std::map<uint64_t, std::string> cubins;
  std::vector<CaptureWindowRange> capture_windows;
  std::vector<Notice> notices;

  // Counters of the last Stats packet (periodic stats are cumulative, so the last one is
  // the most complete); stats_final says whether it was the final one.
  std::vector<StatCounter> stats;
  bool stats_final = false;
  uint64_t stats_packets = 0;

  std::optional<EndOfTraceInfo> end_of_trace;
  TruncationInfo truncation;
  // Problems met while loading (undefined ids, truncation, samples without a metric set,
  // ...), Perfetto-style: name, value, severity. Only non-zero counters are listed.
  std::vector<StatCounter> import_counters;

  TimeSpan span;  // over every timed event (GPU and host) that was loaded (in `slice`)
  // The stretch loaded (TraceModelOptions::slice; ForEachEvent reads the file again with
  // it), and the span of every timed event of the file, in it or not.
  std::optional<TimeSlice> slice;
  TimeSpan whole_span;

  // Lookups (linear or map; nullptr when absent).
  const DeviceInfo* FindDevice(uint32_t id) const;
  const ContextInfo* FindContext(uint32_t id) const;
  const ThreadInfo* FindThread(uint64_t id) const;
  const PmMetricSet* FindPmMetricSet(uint32_t id) const;
  const PcStallReasons* FindPcStallReasons(uint32_t device_id) const;
  // The cubin (ELF image, as the driver loaded it) that PC records with this cubin_crc come
  // from, to map their pc_offset to SASS and source lines; nullptr when the trace has none.
  const std::string* FindCubin(uint64_t crc) const;
  // A call stack by id (binary search); nullptr when it was never defined.
  const CallStackInfo* FindCallStack(uint64_t id) const;
  // The stack recorded for the API call with this correlation id (which is also its kernel's,
  // copy's or sync's); nullptr when none was recorded or the stack was never defined. Of
  // several records for one id, the first in the file.
  const CallStackInfo* StackOfCall(uint32_t correlation_id) const;
  // The device of a context, or nullopt when the context is unknown.
  std::optional<uint32_t> DeviceOfContext(uint32_t context_id) const;
  // Ids of every device that is described or has GPU events, ascending.
  std::vector<uint32_t> DeviceIds() const;
  // OK when `device` is unset or one of DeviceIds(); else InvalidArgument naming the devices
  // the trace has (the message of every command's --device).
  absl::Status CheckDevice(std::optional<uint32_t> device) const;
  // The worst severity among import counters and stats counters with a non-zero value.
  v1::Severity WorstSeverity() const;

 private:
  TraceModel() = default;
  friend class TraceModelBuilder;

  // Owned storage that the views and pointers in the tables refer to. Held by pointer so
  // that moving the model keeps them valid.
  std::shared_ptr<InternedStrings> strings_;
  std::unique_ptr<std::deque<LaunchConfig>> launch_configs_;
  // (correlation id, CallStackInfo id), sorted: StackOfCall's index, one small entry per
  // recorded call, made whether api_stacks is kept or not (TraceModelOptions::keep_events).
  std::vector<std::pair<uint32_t, uint64_t>> api_stack_by_correlation_;
};

// The table of each kind of event, for ForEachEvent.
template <typename Event>
struct EventTable;
#define WARPSCOPE_EVENT_TABLE(Type, kind_, table)                                         \
  template <>                                                                             \
  struct EventTable<Type> {                                                               \
    static constexpr EventKind kind = EventKind::kind_;                                   \
    static const std::vector<Type>& Of(const TraceModel& m) { return m.table; }          \
  };
WARPSCOPE_EVENT_TABLE(KernelEvent, kKernel, kernels)
WARPSCOPE_EVENT_TABLE(MemcpyEvent, kMemcpy, memcpys)
WARPSCOPE_EVENT_TABLE(MemsetEvent, kMemset, memsets)
WARPSCOPE_EVENT_TABLE(SyncEvent, kSync, syncs)
WARPSCOPE_EVENT_TABLE(ApiCallEvent, kApiCall, api_calls)
WARPSCOPE_EVENT_TABLE(GraphLaunchEvent, kGraphLaunch, graph_launches)
WARPSCOPE_EVENT_TABLE(OverheadEvent, kOverhead, overheads)
WARPSCOPE_EVENT_TABLE(NvtxRange, kNvtxRange, nvtx_ranges)
WARPSCOPE_EVENT_TABLE(NvtxMark, kNvtxMark, nvtx_marks)
WARPSCOPE_EVENT_TABLE(NcclCall, kNcclCall, nccl_calls)
WARPSCOPE_EVENT_TABLE(ApiStack, kApiStack, api_stacks)
WARPSCOPE_EVENT_TABLE(MemoryEvent, kMemory, memory_events)
#undef WARPSCOPE_EVENT_TABLE

// Reads the file `model` was loaded from once more and hands `sink` its events of `kind` (in
// its slice, or all with `whole_file`), in file order, packets of other kinds skipped unparsed.
absl::Status ReadEventsAgain(const TraceModel& model, EventKind kind, TraceEventSink& sink,
                             bool whole_file = false);

// Calls visit(event) for each event of one type, in file order: from the model's table when
// it was kept, else from the file read again (ReadEventsAgain), so that a command can go over
// the events of a long trace kind by kind without holding them; with `whole_file`, those
// outside the model's slice too. The names and launch configuration an event points to live
// until visit returns. Errors: those of reading the file (only for a table that was not kept).
template <typename Event, typename Visit>
absl::Status ForEachEvent(const TraceModel& model, Visit&& visit, bool whole_file = false) {
  constexpr EventKind kind = EventTable<Event>::kind;
  if ((model.kept_events & EventKindBit(kind)) != 0 && !(whole_file && model.slice)) {
    for (const Event& e : EventTable<Event>::Of(model)) visit(e);
    return absl::OkStatus();
  }
  struct Sink : TraceEventSink {
    using TraceEventSink::Add;
    explicit Sink(Visit& v) : visit(v) {}
    void Add(const Event& e) override { visit(e); }
    Visit& visit;
  } sink(visit);
  return ReadEventsAgain(model, kind, sink, whole_file);
}

// Calls visit(part) for the PC sample records of the model's trace, in file order, each part
// with its batch's fields: the model's batches when it kept their records, else the file read
// again (the records of one packet at a time, so a batch split over packets comes in parts).
// Names live until visit returns. Errors: those of reading the file again.
absl::Status ForEachPcRecords(const TraceModel& model,
                              const std::function<void(const PcSampleBatch&)>& visit);

// Calls visit(sample) for each PM sample of the model's trace: those of its table when it kept
// them, else those of the file read again (the process's values in file order, then the raw
// samples evaluated on load, as the table holds them). Errors: those of reading it again.
absl::Status ForEachPmSample(const TraceModel& model,
                             const std::function<void(const PmSample&)>& visit);

// Names for enum values as users read them ("HtoD", "Pinned", "Stream", "Runtime", ...).
std::string_view CopyKindName(v1::CopyKind kind);
std::string_view MemoryKindName(v1::MemoryKind kind);
std::string_view SyncKindName(v1::SyncKind kind);
std::string_view ApiDomainName(v1::ApiDomain domain);
std::string_view ClockDomainName(v1::ClockDomain domain);
std::string_view CaptureTriggerName(v1::CaptureTrigger trigger);
std::string_view SeverityName(v1::Severity severity);  // "info", "data-loss", "error"
std::string_view EndReasonName(v1::EndReason reason);  // EndText: "crash (SIGABRT)", "exit"
std::string EndText(const EndOfTraceInfo& end);
std::string SignalText(uint32_t signal);  // Linux's name ("SIGABRT"), else "signal 42"
std::string_view MemoryOperationName(v1::MemoryOperation operation);  // "allocate", "release", ...

// How analyses name GPU work, as Nsight Systems does: a kernel by its demangled name (its
// mangled one when it has none), copies "[CUDA memcpy HtoD]", memsets "[CUDA memset]".
std::string KernelDisplayName(const KernelEvent& kernel);
// Every distinct KernelDisplayName of the trace, in order of first launch (views into the
// model): the names that --short-names keeps apart (render/short_names.h).
std::vector<std::string_view> KernelDisplayNames(const TraceModel& model);
std::string MemcpyOperationName(v1::CopyKind kind);
inline constexpr std::string_view kMemsetOperationName = "[CUDA memset]";

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_H_
