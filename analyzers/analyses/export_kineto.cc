// Kineto-compatible JSON writer (export_kineto.h). Names and argument keys are Kineto's, as
// Holistic Trace Analysis reads them: copies are named "Memcpy HtoD (Pageable -> Device)" and
// memsets "Memset (Device)" because HTA classifies GPU work by those prefixes.
#include "analyzers/analyses/export_kineto.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "analyzers/analyses/export_common.h"
#include "analyzers/render/output.h"

namespace warpscope {
namespace {

class KinetoWriter {
 public:
  KinetoWriter(const ExportedTrace& trace, JsonWriter& json)
      : m_(*trace.model), offset_ns_(trace.offset_ns), json_(json), host_tids_(m_),
        launches_(LaunchCallsByCorrelation(m_)) {}

  void WriteEvents();

 private:
  void Begin(std::string_view ph, std::string_view name, std::string_view cat, int64_t pid,
             int64_t tid, uint64_t ns) {
    json_.BeginObject();
    json_.Key("ph").String(ph).Key("cat").String(cat).Key("name").String(name);
    json_.Key("pid").Int(pid).Key("tid").Int(tid);
    json_.Key("ts").Raw(TraceEventMicros(ns + offset_ns_));
  }
  // A complete event; the caller writes the args object's members and calls EndArgs.
  void Complete(std::string_view name, std::string_view cat, int64_t pid, int64_t tid,
                uint64_t ns, uint64_t dur_ns) {
    Begin("X", name, cat, pid, tid, ns);
    json_.Key("dur").Raw(TraceEventMicros(dur_ns)).Key("args").BeginObject();
  }
  void EndArgs() { json_.EndObject().EndObject(); }
  // The launch and its GPU work, as Kineto links them: "ac2g" flow events with the
  // correlation id.
  void Flow(uint32_t correlation_id, int64_t device, int64_t stream, uint64_t gpu_start_ns);
  void GpuArgs(uint32_t device, uint32_t context, uint32_t stream, uint32_t correlation) {
    json_.Key("device").Uint(device).Key("context").Uint(context).Key("stream").Uint(stream);
    json_.Key("correlation").Uint(correlation).Key("External id").Uint(correlation);
  }

  // A copy or memset: its GPU args, size and bandwidth, and its launch flow.
  template <typename Event>
  void MemoryOperation(const std::string& name, std::string_view cat, const Event& e) {
    Complete(name, cat, e.device_id, e.stream_id, e.start_ns, e.duration_ns);
    GpuArgs(e.device_id, e.context_id, e.stream_id, e.correlation_id);
    json_.Key("bytes").Uint(e.bytes);
    if (e.duration_ns > 0) {
      json_.Key("memory bandwidth (GB/s)").Double(static_cast<double>(e.bytes) / e.duration_ns);
    }
    EndArgs();
    Flow(e.correlation_id, e.device_id, e.stream_id, e.start_ns);
  }

  const TraceModel& m_;
  uint64_t offset_ns_;
  JsonWriter& json_;
  HostTids host_tids_;
  std::vector<std::pair<uint32_t, uint32_t>> launches_;
};

void KinetoWriter::Flow(uint32_t correlation_id, int64_t device, int64_t stream,
                        uint64_t gpu_start_ns) {
  const ApiCallEvent* call = FindLaunchCall(m_, launches_, correlation_id);
  if (call == nullptr) return;
  Begin("s", "ac2g", "ac2g", m_.header.pid, host_tids_.Of(call->thread_id), call->start_ns);
  json_.Key("id").Uint(correlation_id).EndObject();
  Begin("f", "ac2g", "ac2g", device, stream, gpu_start_ns);
  json_.Key("id").Uint(correlation_id).Key("bp").String("e").EndObject();
}

std::string KinetoMemcpyName(const MemcpyEvent& c) {
  // "[CUDA memcpy HtoD]" -> "Memcpy HtoD (Pageable -> Device)", Kineto's wording.
  std::string kind = MemcpyOperationName(c.copy_kind);
  const std::string prefix = "[CUDA memcpy ";
  if (kind.rfind(prefix, 0) == 0 && kind.size() > prefix.size()) {
    kind = kind.substr(prefix.size(), kind.size() - prefix.size() - 1);
  }
  return absl::StrCat("Memcpy ", kind, " (", std::string(MemoryKindName(c.src_kind)), " -> ",
                      std::string(MemoryKindName(c.dst_kind)), ")");
}

void KinetoWriter::WriteEvents() {
  const int64_t pid = m_.header.pid;
  for (const ApiCallEvent& call : m_.api_calls) {
    Complete(call.name, call.domain == v1::API_DOMAIN_DRIVER ? "cuda_driver" : "cuda_runtime",
             pid, host_tids_.Of(call.thread_id), call.start_ns, call.duration_ns);
    json_.Key("cbid").Uint(call.callback_id).Key("correlation").Uint(call.correlation_id);
    json_.Key("External id").Uint(call.correlation_id);
    EndArgs();
  }
  // NVTX ranges are what PyTorch's record_function annotations are to Kineto.
  for (const NvtxRange& r : m_.nvtx_ranges) {
    Complete(r.name, "user_annotation", pid, host_tids_.Of(r.thread_id), r.start_ns,
             r.duration_ns);
    if (!r.domain.empty()) json_.Key("domain").String(r.domain);
    EndArgs();
  }
  for (const KernelEvent& k : m_.kernels) {
    Complete(KernelDisplayName(k), "kernel", k.device_id, k.stream_id, k.start_ns,
             k.duration_ns);
    GpuArgs(k.device_id, k.context_id, k.stream_id, k.correlation_id);
    if (k.launch != nullptr) {
      const LaunchConfig& l = *k.launch;
      json_.Key("registers per thread").Uint(l.registers_per_thread);
      json_.Key("shared memory").Uint(l.shared_memory_per_block());
      json_.Key("grid").BeginArray().Uint(l.grid_x).Uint(l.grid_y).Uint(l.grid_z).EndArray();
      json_.Key("block").BeginArray().Uint(l.block_x).Uint(l.block_y).Uint(l.block_z).EndArray();
    }
    EndArgs();
    Flow(k.correlation_id, k.device_id, k.stream_id, k.start_ns);
  }
  for (const MemcpyEvent& c : m_.memcpys) {
    MemoryOperation(KinetoMemcpyName(c), "gpu_memcpy", c);
  }
  for (const MemsetEvent& s : m_.memsets) {
    MemoryOperation(absl::StrCat("Memset (", std::string(MemoryKindName(s.memory_kind)), ")"),
                    "gpu_memset", s);
  }
  // Track names as Kineto writes them.
  for (const ThreadInfo& t : m_.threads) {
    json_.BeginObject().Key("ph").String("M").Key("name").String("thread_name");
    json_.Key("pid").Int(pid).Key("tid").Int(host_tids_.Of(t.id)).Key("ts").Int(0);
    json_.Key("args").BeginObject().Key("name").String(
        t.name.empty() ? absl::StrCat("thread ", host_tids_.Of(t.id)) : t.name);
    json_.EndObject().EndObject();
  }
}

void WriteDeviceProperties(const TraceModel& m, JsonWriter& json) {
  json.Key("deviceProperties").BeginArray();
  for (const DeviceInfo& d : m.devices) {
    json.BeginObject().Key("id").Uint(d.id).Key("name").String(d.name);
    json.Key("totalGlobalMem").Uint(d.global_memory_bytes);
    json.Key("computeMajor").Uint(d.compute_capability_major);
    json.Key("computeMinor").Uint(d.compute_capability_minor);
    json.Key("maxThreadsPerBlock").Uint(d.max_threads_per_block);
    json.Key("maxThreadsPerMultiprocessor").Uint(uint64_t{d.max_warps_per_sm} * d.threads_per_warp);
    json.Key("regsPerBlock").Uint(d.max_registers_per_block);
    json.Key("regsPerMultiprocessor").Uint(d.max_registers_per_sm);
    json.Key("warpSize").Uint(d.threads_per_warp);
    json.Key("sharedMemPerBlock").Uint(d.max_shared_memory_per_block);
    json.Key("sharedMemPerMultiprocessor").Uint(d.max_shared_memory_per_sm);
    json.Key("numSms").Uint(d.sm_count);
    json.Key("sharedMemPerBlockOptin").Uint(d.max_shared_memory_per_block_optin);
    json.EndObject();
  }
  json.EndArray();
}

}  // namespace

std::vector<KinetoTraceFile> ExportKinetoTraces(std::span<const TraceModel* const> models) {
  const std::vector<ExportedTrace> traces = PrepareExport(models);
  uint64_t base_ns = std::numeric_limits<uint64_t>::max();
  for (const ExportedTrace& t : traces) {
    base_ns = std::min(base_ns, t.model->header.unix_time_base_ns);
  }
  std::vector<KinetoTraceFile> out;
  for (const ExportedTrace& t : traces) {
    JsonWriter json;
    json.BeginObject().Key("schemaVersion").Int(1);
    json.Key("distributedInfo").BeginObject().Key("backend").String("nccl");
    json.Key("rank").Int(t.rank).Key("world_size").Uint(traces.size()).EndObject();
    WriteDeviceProperties(*t.model, json);
    json.Key("traceName").String(t.model->source_name);
    json.Key("displayTimeUnit").String("ms");
    // Only when the traces' shared time line starts at a known wall-clock time.
    if (base_ns != 0 && !traces.empty()) json.Key("baseTimeNanoseconds").Uint(base_ns);
    json.Key("traceEvents").BeginArray();
    KinetoWriter(t, json).WriteEvents();
    json.EndArray().EndObject();
    out.push_back({t.rank, absl::StrCat("rank", t.rank, ".trace.json"), json.str() + "\n"});
  }
  return out;
}

}  // namespace warpscope
