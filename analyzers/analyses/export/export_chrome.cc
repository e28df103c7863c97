// Chrome trace-event JSON writer (export_chrome.h). Events are written in a fixed order per
// trace (metadata, host, GPU, flows, counters, capture windows) so that output is stable for
// tests; viewers sort by time themselves. Each kind of event is one walk over its table, or
// over the file when the model was loaded without it (ForEachEvent): the text goes out as it
// is made, and what is held grows with threads, streams and stacks, not with events. The
// launch of each GPU work, for its flow, comes from a join through temporary files
// (launch_join.h).
#include "analyzers/analyses/export/export_chrome.h"

#include <cmath>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/export/export_common.h"
#include "analyzers/analyses/export/launch_join.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

// GPU stream tracks get thread ids from here up, far above any Linux tid (pid_max <= 2^22).
constexpr int64_t kFirstStreamTid = int64_t{1} << 24;

class ChromeTraceWriter {
 public:
  ChromeTraceWriter(JsonWriter& json, ExportOutput& out) : json_(json), out_(out) {}

  absl::Status Write(const ExportedTrace& trace, int64_t pid);
  // Hands the JSON made so far to the output once there is enough of it.
  void MaybeFlush() {
    if (json_.str().size() >= kExportFlushBytes) out_.Write(json_.TakeText());
  }

 private:
  // Opens an event object with the fields every event has; the caller adds the rest and
  // closes it.
  void Begin(std::string_view ph, std::string_view name, std::string_view cat, int64_t tid,
             uint64_t ns) {
    json_.BeginObject();
    json_.Key("ph").String(ph).Key("name").String(name).Key("cat").String(cat);
    json_.Key("pid").Int(pid_).Key("tid").Int(tid);
    json_.Key("ts").Raw(TraceEventMicros(ns + offset_ns_));
  }
  void Dur(uint64_t ns) { json_.Key("dur").Raw(TraceEventMicros(ns)); }
  void Metadata(std::string_view name, int64_t tid, std::string_view arg_key,
                std::string_view text, std::optional<int64_t> number = std::nullopt) {
    json_.BeginObject();
    json_.Key("ph").String("M").Key("name").String(name);
    json_.Key("pid").Int(pid_).Key("tid").Int(tid).Key("ts").Int(0);
    json_.Key("args").BeginObject().Key(arg_key);
    if (number.has_value()) {
      json_.Int(*number);
    } else {
      json_.String(text);
    }
    json_.EndObject().EndObject();
  }
  int64_t StreamTid(uint32_t device_id, uint32_t stream_id) {
    auto [it, added] = stream_tids_.try_emplace({device_id, stream_id}, 0);
    if (added) it->second = kFirstStreamTid + static_cast<int64_t>(stream_tids_.size()) - 1;
    return it->second;
  }
  // A flow from the API call that launched the next GPU work to that work, when the call is
  // known.
  void Flow(int64_t gpu_tid, uint64_t gpu_start_ns);
  void Counter(std::string_view name, uint64_t ns, double value) {
    if (!std::isfinite(value)) return;
    Begin("C", name, "pm_sampling", 0, ns);
    json_.Key("args").BeginObject().Key("value").Double(value).EndObject().EndObject();
  }

  absl::Status WriteHost(const TraceModel& m);
  absl::Status WriteGpu(const TraceModel& m);
  void WriteCounters(const TraceModel& m);
  void WriteCaptureWindows(const TraceModel& m);

  JsonWriter& json_;
  ExportOutput& out_;
  int64_t pid_ = 0;
  uint64_t offset_ns_ = 0;
  uint64_t next_flow_id_ = 1;  // unique over the whole file
  std::map<std::pair<uint32_t, uint32_t>, int64_t> stream_tids_;
  LaunchJoin* launches_ = nullptr;
  uint64_t next_work_ = 0;  // the GPU work's place among the kernels, copies and memsets
  const HostTids* host_tids_ = nullptr;
};

void ChromeTraceWriter::Flow(int64_t gpu_tid, uint64_t gpu_start_ns) {
  const LaunchOf call = launches_->Launch(next_work_++);
  if (call.kind != LaunchOf::kApiCall) return;
  const uint64_t id = next_flow_id_++;
  Begin("s", "launch", "flow", host_tids_->Of(call.thread_id), call.ns);
  json_.Key("id").Uint(id).EndObject();
  Begin("f", "launch", "flow", gpu_tid, gpu_start_ns);
  json_.Key("id").Uint(id).Key("bp").String("e").EndObject();
}

absl::Status ChromeTraceWriter::WriteHost(const TraceModel& m) {
  uint32_t index = 0;
  absl::Status read = ForEachEvent<ApiCallEvent>(m, [&](const ApiCallEvent& call) {
    Begin("X", call.name, call.domain == v1::API_DOMAIN_DRIVER ? "cuda_driver" : "cuda_runtime",
          host_tids_->Of(call.thread_id), call.start_ns);
    Dur(call.duration_ns);
    json_.Key("args").BeginObject().Key("correlation").Uint(call.correlation_id);
    json_.Key("result").Uint(call.result).Key("cbid").Uint(call.callback_id);
    WriteCallStackArgs(json_, m, launches_->StackOf(index++));
    json_.EndObject();
    json_.EndObject();
    MaybeFlush();
  });
  if (!read.ok()) return read;
  // Push/pop ranges nest on their thread: complete events. Start/end ranges may overlap and
  // end on another thread: async events, one id each.
  uint64_t async_id = 1;
  read = ForEachEvent<NvtxRange>(m, [&](const NvtxRange& r) {
    const int64_t tid = host_tids_->Of(r.thread_id);
    if (r.is_push_pop) {
      Begin("X", r.name, "nvtx", tid, r.start_ns);
      Dur(r.duration_ns);
    } else {
      Begin("b", r.name, "nvtx", tid, r.start_ns);
      json_.Key("id").Uint(async_id);
    }
    json_.Key("args").BeginObject().Key("domain").String(r.domain);
    json_.Key("category").Uint(r.category).EndObject().EndObject();
    if (!r.is_push_pop) {
      Begin("e", r.name, "nvtx", tid, r.end_ns());
      json_.Key("id").Uint(async_id++).EndObject();
    }
    MaybeFlush();
  });
  if (!read.ok()) return read;
  // The recording's own time (warpscope's flushes, CUPTI's overhead) on the thread it took.
  read = ForEachEvent<OverheadEvent>(m, [&](const OverheadEvent& o) {
    Begin("X", o.kind, "overhead", host_tids_->Of(o.thread_id), o.start_ns);
    Dur(o.duration_ns);
    json_.EndObject();
    MaybeFlush();
  });
  if (!read.ok()) return read;
  return ForEachEvent<NvtxMark>(m, [&](const NvtxMark& mark) {
    Begin("i", mark.name, "nvtx", host_tids_->Of(mark.thread_id), mark.timestamp_ns);
    json_.Key("s").String("t").Key("args").BeginObject().Key("domain").String(mark.domain);
    json_.EndObject().EndObject();
    MaybeFlush();
  });
}

absl::Status ChromeTraceWriter::WriteGpu(const TraceModel& m) {
  absl::Status read = ForEachEvent<KernelEvent>(m, [&](const KernelEvent& k) {
    const int64_t tid = StreamTid(k.device_id, k.stream_id);
    Begin("X", KernelDisplayName(k), "kernel", tid, k.start_ns);
    Dur(k.duration_ns);
    json_.Key("args").BeginObject();
    json_.Key("device").Uint(k.device_id).Key("stream").Uint(k.stream_id);
    json_.Key("correlation").Uint(k.correlation_id);
    if (k.launch != nullptr) {
      const LaunchConfig& l = *k.launch;
      json_.Key("grid").BeginArray().Uint(l.grid_x).Uint(l.grid_y).Uint(l.grid_z).EndArray();
      json_.Key("block").BeginArray().Uint(l.block_x).Uint(l.block_y).Uint(l.block_z).EndArray();
      json_.Key("registers per thread").Uint(l.registers_per_thread);
      json_.Key("shared memory").Uint(l.shared_memory_per_block());
    }
    if (k.graph_id != 0) json_.Key("graph").Uint(k.graph_id);
    json_.EndObject().EndObject();
    Flow(tid, k.start_ns);
    MaybeFlush();
  });
  if (!read.ok()) return read;
  read = ForEachEvent<MemcpyEvent>(m, [&](const MemcpyEvent& c) {
    const int64_t tid = StreamTid(c.device_id, c.stream_id);
    Begin("X", MemcpyOperationName(c.copy_kind), "memcpy", tid, c.start_ns);
    Dur(c.duration_ns);
    json_.Key("args").BeginObject();
    json_.Key("device").Uint(c.device_id).Key("stream").Uint(c.stream_id);
    json_.Key("correlation").Uint(c.correlation_id).Key("bytes").Uint(c.bytes);
    json_.Key("src").String(MemoryKindName(c.src_kind));
    json_.Key("dst").String(MemoryKindName(c.dst_kind));
    if (c.duration_ns > 0) json_.Key("GB/s").Double(static_cast<double>(c.bytes) / c.duration_ns);
    json_.EndObject().EndObject();
    Flow(tid, c.start_ns);
    MaybeFlush();
  });
  if (!read.ok()) return read;
  read = ForEachEvent<MemsetEvent>(m, [&](const MemsetEvent& s) {
    const int64_t tid = StreamTid(s.device_id, s.stream_id);
    Begin("X", kMemsetOperationName, "memset", tid, s.start_ns);
    Dur(s.duration_ns);
    json_.Key("args").BeginObject();
    json_.Key("device").Uint(s.device_id).Key("stream").Uint(s.stream_id);
    json_.Key("correlation").Uint(s.correlation_id).Key("bytes").Uint(s.bytes);
    json_.Key("value").Uint(s.value).EndObject().EndObject();
    Flow(tid, s.start_ns);
    MaybeFlush();
  });
  if (!read.ok()) return read;
  for (const auto& [key, tid] : stream_tids_) {
    Metadata("thread_name", tid, "name",
             absl::StrCat("GPU ", key.first, " stream ", key.second));
    Metadata("thread_sort_index", tid, "sort_index", "", tid);
  }
  return absl::OkStatus();
}

void ChromeTraceWriter::WriteCounters(const TraceModel& m) {
  ForEachPmCounterValue(m, [&](const std::string& name, uint64_t ns, double value) {
    Counter(name, ns, value);
  });
}

void ChromeTraceWriter::WriteCaptureWindows(const TraceModel& m) {
  for (const CaptureWindowRange& w : m.capture_windows) {
    const std::string name = absl::StrCat("capture window ", w.id);
    if (!w.end_ns.has_value()) {
      Begin("i", name, "capture", 0, w.begin_ns);
      json_.Key("s").String("p").Key("args").BeginObject();
      json_.Key("begin trigger").String(CaptureTriggerName(w.begin_trigger));
      json_.Key("end").String("still open when the trace ended").EndObject().EndObject();
      continue;
    }
    Begin("b", name, "capture", 0, w.begin_ns);
    json_.Key("id").Uint(w.id).Key("args").BeginObject();
    json_.Key("begin trigger").String(CaptureTriggerName(w.begin_trigger));
    json_.Key("end trigger").String(CaptureTriggerName(w.end_trigger)).EndObject().EndObject();
    Begin("e", name, "capture", 0, *w.end_ns);
    json_.Key("id").Uint(w.id).EndObject();
  }
}

absl::Status ChromeTraceWriter::Write(const ExportedTrace& trace, int64_t pid) {
  const TraceModel& m = *trace.model;
  pid_ = pid;
  offset_ns_ = trace.offset_ns;
  stream_tids_.clear();
  absl::StatusOr<std::unique_ptr<LaunchJoin>> launches = LaunchJoin::Of(m, {});
  if (!launches.ok()) return launches.status();
  launches_ = launches->get();
  next_work_ = 0;
  const HostTids host_tids(m);
  host_tids_ = &host_tids;

  Metadata("process_name", 0, "name", trace.label);
  Metadata("process_sort_index", 0, "sort_index", "", trace.rank);
  for (const ThreadInfo& t : m.threads) {
    const int64_t tid = host_tids.Of(t.id);
    Metadata("thread_name", tid, "name",
             t.name.empty() ? absl::StrCat("thread ", tid) : absl::StrCat(t.name, " ", tid));
  }
  if (absl::Status s = WriteHost(m); !s.ok()) return s;
  if (absl::Status s = WriteGpu(m); !s.ok()) return s;
  if (!launches_->status().ok()) return launches_->status();
  WriteCounters(m);
  WriteCaptureWindows(m);
  host_tids_ = nullptr;
  launches_ = nullptr;
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteChromeTraceJson(std::span<const TraceModel* const> models, ExportOutput& out) {
  const std::vector<ExportedTrace> traces = PrepareExport(models);
  JsonWriter json;
  json.BeginObject().Key("displayTimeUnit").String("ns");
  json.Key("traceEvents").BeginArray();
  ChromeTraceWriter writer(json, out);
  // Process ids are the trace's position, from 1: two ranks may share an OS pid on two hosts.
  for (size_t i = 0; i < traces.size(); ++i) {
    if (absl::Status s = writer.Write(traces[i], static_cast<int64_t>(i) + 1); !s.ok()) return s;
  }
  json.EndArray();
  json.Key("otherData").BeginObject().Key("producer").String("warpscope export");
  json.Key("traces").BeginArray();
  for (const ExportedTrace& t : traces) {
    json.BeginObject().Key("file").String(t.model->source_name).Key("rank").Int(t.rank);
    json.Key("label").String(t.label).Key("offset_ns").Uint(t.offset_ns).EndObject();
  }
  json.EndArray().EndObject().EndObject();
  out.Write(json.TakeText());
  out.Write("\n");
  return absl::OkStatus();
}

std::string ExportChromeTraceJson(std::span<const TraceModel* const> models) {
  StringExportOutput out;
  // Models that hold their events are not read again: nothing can fail.
  (void)WriteChromeTraceJson(models, out);
  return std::move(out.text);
}

}  // namespace warpscope
