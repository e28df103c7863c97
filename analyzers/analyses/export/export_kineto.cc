// Kineto-compatible JSON writer (export_kineto.h). Names, categories, argument keys and the
// text's spacing are Kineto's, as Holistic Trace Analysis reads them: it finds a file's rank by
// searching the text for `"rank": N`, classifies GPU work by name (copies "Memcpy HtoD
// (Pageable -> Device)", memsets "Memset (Device)", NCCL's kernels "nccl...Kernel...") and
// splits a trace into iterations at `ProfilerStep#N` ranges, keeping only GPU work whose launch
// is in the file (work whose launch was not recorded gets a stand-in). API calls and GPU work
// are walked kind by kind (from the file when the model was loaded without them, ForEachEvent)
// and the text goes out as it is made; NVTX ranges and NCCL calls are held, for the steps and
// for matching NCCL's ranges to its calls. Launches are joined to their GPU work through
// temporary files (launch_join.h).
#include "analyzers/analyses/export/export_kineto.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzers/analyses/export/export_common.h"
#include "analyzers/analyses/export/launch_join.h"
#include "analyzers/measures/steps.h"
#include "analyzers/render/output.h"
#include "proto/settings/job_variables.h"

namespace warpscope {
namespace {

constexpr char kProfilerStep[] = "ProfilerStep#";
constexpr char kProfilerStepFamily[] = "ProfilerStep#<N>";  // steps.h RangeFamily
// A stand-in for a launch the trace has no record of (WriteUnrecordedLaunches). The category
// is none of Kineto's: HTA classes an event as GPU work by a category ending in "kernel" and
// as a CUDA call by "cuda_runtime".
constexpr char kUnrecordedLaunchName[] = "launch not recorded";
constexpr char kUnrecordedLaunchCategory[] = "launch_not_recorded";

class KinetoWriter {
 public:
  KinetoWriter(const ExportedTrace& trace, JsonWriter& json, ExportOutput& out,
               std::string_view step)
      : m_(*trace.model),
        offset_ns_(trace.offset_ns),
        label_(trace.label),
        json_(json),
        out_(out),
        step_(step),
        host_tids_(m_) {
    for (const NcclCall& call : m_.nccl_calls) {
      nccl_calls_[{call.thread_id, call.name}].push_back(&call);
      if (call.launch_correlation_id != 0) nccl_launches_[call.launch_correlation_id] = &call;
    }
    for (auto& [key, calls] : nccl_calls_) {
      std::sort(calls.begin(), calls.end(),
                [](const NcclCall* a, const NcclCall* b) { return a->start_ns < b->start_ns; });
    }
  }

  absl::Status WriteEvents() {
    absl::StatusOr<std::unique_ptr<LaunchJoin>> launches =
        LaunchJoin::Of(m_, {.nccl_launches = &nccl_launches_, .stand_ins = true});
    if (!launches.ok()) return launches.status();
    launches_ = *std::move(launches);
    if (absl::Status s = WriteHost(); !s.ok()) return s;
    if (absl::Status s = WriteUnrecordedLaunches(); !s.ok()) return s;
    WriteSteps();
    if (absl::Status s = WriteGpu(); !s.ok()) return s;
    if (!launches_->status().ok()) return launches_->status();
    WriteMetadata();
    return absl::OkStatus();
  }

 private:
  // One event per line, as Kineto writes them.
  void Begin(std::string_view ph, std::string_view name, std::string_view cat, int64_t pid,
             int64_t tid, uint64_t ns) {
    json_.LineBreak().BeginObject();
    json_.Key("ph").String(ph).Key("cat").String(cat).Key("name").String(name);
    json_.Key("pid").Int(pid).Key("tid").Int(tid);
    json_.Key("ts").Raw(TraceEventMicros(ns + offset_ns_));
  }
  // A complete event; the caller writes the args object's members and calls EndArgs.
  void Complete(std::string_view name, std::string_view cat, int64_t pid, int64_t tid, uint64_t ns,
                uint64_t dur_ns) {
    Begin("X", name, cat, pid, tid, ns);
    json_.Key("dur").Raw(TraceEventMicros(dur_ns)).Key("args").BeginObject();
  }
  void EndArgs() {
    json_.EndObject().EndObject();
    if (json_.str().size() >= kExportFlushBytes) out_.Write(json_.TakeText());
  }
  void Metadata(std::string_view name, int64_t pid, int64_t tid, std::string_view key,
                std::string_view value) {
    json_.LineBreak().BeginObject().Key("name").String(name).Key("ph").String("M");
    json_.Key("ts").Int(0).Key("pid").Int(pid).Key("tid").Int(tid);
    json_.Key("args").BeginObject().Key(key).String(value).EndObject().EndObject();
  }
  void GpuArgs(uint32_t device, uint32_t context, uint32_t stream, uint32_t correlation) {
    json_.Key("device").Uint(device).Key("context").Uint(context).Key("stream").Uint(stream);
    json_.Key("correlation").Uint(correlation).Key("External id").Uint(correlation);
  }
  // The launch of the next GPU work and that work, as Kineto links them: "ac2g" flow events
  // with the correlation id.
  void Flow(uint32_t correlation_id, int64_t device, int64_t stream, uint64_t gpu_start_ns);

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

  bool IsNcclCallRange(const NvtxRange& r) const;
  absl::Status WriteHost();
  absl::Status WriteUnrecordedLaunches();
  // The row of the stand-in launches of the work on (device, stream).
  int64_t UnrecordedLaunchTid(uint32_t device, uint32_t stream) const;
  void WriteNcclCall(const NcclCall& call);
  void WriteSteps();
  absl::Status WriteGpu();
  void WriteMetadata();

  const TraceModel& m_;
  uint64_t offset_ns_;
  std::string_view label_;
  JsonWriter& json_;
  ExportOutput& out_;
  std::string_view step_;
  HostTids host_tids_;
  std::unique_ptr<LaunchJoin> launches_;
  uint64_t next_work_ = 0;  // the GPU work's place among the kernels, copies and memsets
  std::set<std::pair<uint32_t, uint32_t>> streams_;  // (device, stream) of the GPU work
  // NCCL's calls by thread and name, by start; and by the correlation id of the launch each
  // made.
  std::map<std::pair<uint64_t, std::string_view>, std::vector<const NcclCall*>> nccl_calls_;
  std::unordered_map<uint32_t, const NcclCall*> nccl_launches_;
};

// Above any Linux thread id (at most 2^22), so that the rows of stand-in launches never take a
// real thread's.
constexpr int64_t kUnrecordedLaunchTid = int64_t{1} << 24;

// The streams whose work has stand-in launches each have a row of their own in the host
// process: tid kUnrecordedLaunchTid + the stream's place among them.
int64_t KinetoWriter::UnrecordedLaunchTid(uint32_t device, uint32_t stream) const {
  const std::vector<std::pair<uint32_t, uint32_t>>& streams = launches_->stand_in_streams();
  auto it = std::lower_bound(streams.begin(), streams.end(), std::make_pair(device, stream));
  return kUnrecordedLaunchTid + (it - streams.begin());
}

void KinetoWriter::Flow(uint32_t correlation_id, int64_t device, int64_t stream,
                        uint64_t gpu_start_ns) {
  // The API call; for an NCCL kernel launched through the driver API, whose call was not
  // traced, the NCCL call that made the launch; else the stand-in.
  const LaunchOf launch = launches_->Launch(next_work_++);
  if (launch.kind == LaunchOf::kNone) return;
  const int64_t tid = launch.kind == LaunchOf::kStandIn
                          ? UnrecordedLaunchTid(launch.device_id, launch.stream_id)
                          : host_tids_.Of(launch.thread_id);
  Begin("s", "ac2g", "ac2g", m_.header.pid, tid, launch.ns);
  json_.Key("id").Uint(correlation_id).EndObject();
  Begin("f", "ac2g", "ac2g", device, stream, gpu_start_ns);
  json_.Key("id").Uint(correlation_id).Key("bp").String("e").EndObject();
}

// NCCL's NVTX range of a call that the trace also holds as an NcclCallEvent (same thread and
// name, overlapping): the call is written once, from the event, which says more.
bool KinetoWriter::IsNcclCallRange(const NvtxRange& r) const {
  if (r.domain != "NCCL") return false;
  auto it = nccl_calls_.find({r.thread_id, r.name});
  if (it == nccl_calls_.end()) return false;
  const std::vector<const NcclCall*>& calls = it->second;
  auto next = std::upper_bound(calls.begin(), calls.end(), r.end_ns(),
                               [](uint64_t t, const NcclCall* c) { return t < c->start_ns; });
  return next != calls.begin() && (*std::prev(next))->end_ns() >= r.start_ns;
}

absl::Status KinetoWriter::WriteHost() {
  const int64_t pid = m_.header.pid;
  uint32_t index = 0;
  absl::Status read = ForEachEvent<ApiCallEvent>(m_, [&](const ApiCallEvent& call) {
    const bool driver = call.domain == v1::API_DOMAIN_DRIVER;
    Complete(call.name, driver ? "cuda_driver" : "cuda_runtime", pid,
             host_tids_.Of(call.thread_id), call.start_ns, call.duration_ns);
    json_.Key("cbid").Uint(call.callback_id);
    // A driver call made inside a runtime call (-t driver) shares its correlation id: only the
    // runtime call, the one the program made, carries it, so that a tool joining host events
    // to GPU work by that id finds one launch per kernel, not two.
    if (driver && launches_->InsideRuntimeCall(index)) {
      json_.Key("inside").String("the runtime call of the same correlation id");
    } else {
      json_.Key("correlation").Uint(call.correlation_id);
      json_.Key("External id").Uint(call.correlation_id);
      WriteCallStackArgs(json_, m_, launches_->StackOf(index));
    }
    EndArgs();
    ++index;
  });
  if (!read.ok()) return read;
  // NVTX ranges are what PyTorch's record_function annotations are to Kineto.
  for (const NvtxRange& r : m_.nvtx_ranges) {
    if (IsNcclCallRange(r)) continue;
    Complete(r.name, "user_annotation", pid, host_tids_.Of(r.thread_id), r.start_ns, r.duration_ns);
    if (!r.domain.empty()) json_.Key("domain").String(r.domain);
    EndArgs();
  }
  for (const NcclCall& call : m_.nccl_calls) WriteNcclCall(call);
  return absl::OkStatus();
}

// An NCCL call as the NVTX range NCCL made for it, with its payload's figures and, where the
// driver API call beneath was not traced, the correlation id of the kernel launch it made:
// tools that tie GPU work to the host event with its correlation id (HTA keeps only such work
// once steps are marked) then find NCCL's kernels through it. Where the launch is recorded, it
// alone carries the id, so that such a tool finds one host event per kernel, not two.
void KinetoWriter::WriteNcclCall(const NcclCall& call) {
  Complete(call.name, "user_annotation", m_.header.pid, host_tids_.Of(call.thread_id),
           call.start_ns, call.duration_ns);
  json_.Key("domain").String("NCCL");
  if (call.launch_correlation_id != 0 && !launches_->HasApiCall(call.launch_correlation_id)) {
    json_.Key("correlation").Uint(call.launch_correlation_id);
  }
  if (call.comm_hash != 0) json_.Key("comm").String(absl::StrFormat("0x%016x", call.comm_hash));
  json_.Key("bytes").Uint(call.bytes);
  if (call.comm_size > 0) json_.Key("comm_size").Int(call.comm_size);
  if (call.comm_rank >= 0) json_.Key("comm_rank").Int(call.comm_rank);
  EndArgs();
}

// A stand-in launch for each correlation id of GPU work whose launch is in no record: once the
// file has steps, HTA keeps only GPU work whose launch (same correlation) is in the file and
// starts before the last step ends (hta/common/trace.py, Trace._filter_irrelevant_gpu_kernels),
// and would drop the rest from every figure. On a row of its own per stream, never a real thread's,
// with zero duration at the time launch_times.h places it (in the step where the job view counts
// it), and not named or filed as an API call, so that HTA's launch statistics, queue lengths and
// critical path, which look for cudaLaunchKernel and the cuda_runtime category, pass it by.
absl::Status KinetoWriter::WriteUnrecordedLaunches() {
  return launches_->ForEachStandIn([&](const StandInLaunch& l) {
    Complete(kUnrecordedLaunchName, kUnrecordedLaunchCategory, m_.header.pid,
             UnrecordedLaunchTid(l.device_id, l.stream_id), l.ns, 0);
    json_.Key("correlation").Uint(l.correlation_id).Key("External id").Uint(l.correlation_id);
    json_.Key("launch").String("not recorded");
    json_.Key("placed at")
        .String(l.at_start ? "its start on the GPU"
                           : "the recorded launch of the kernel before it on its stream");
    EndArgs();
  });
}

// The program's steps as Kineto marks them: a ProfilerStep#N range per step on the thread that
// ran it, from the start of the step to the start of the next (steps.h), N the step's number
// when the steps are numbered in order, else its position.
void KinetoWriter::WriteSteps() {
  const StepSet steps = FindSteps(m_.nvtx_ranges, step_);
  // A program that marks its steps as PyTorch's profiler does already has them. A guessed
  // step (any repeated range) is not written: HTA analyses only what steps cover, and a
  // repeated phase would hide the rest of the trace from it.
  if (steps.steps.empty() || steps.family == kProfilerStepFamily || steps.guessed) return;
  bool numbered = true;
  for (size_t i = 0; i < steps.steps.size(); ++i) {
    const std::optional<uint64_t>& n = steps.steps[i].number;
    numbered = numbered && n.has_value() && (i == 0 || *n > *steps.steps[i - 1].number);
  }
  const int64_t tid = host_tids_.Of(steps.thread_id);
  for (size_t i = 0; i < steps.steps.size(); ++i) {
    const Step& s = steps.steps[i];
    Complete(absl::StrCat(kProfilerStep, numbered ? *s.number : i), "user_annotation",
             m_.header.pid, tid, s.start_ns, s.duration_ns());
    EndArgs();
  }
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

absl::Status KinetoWriter::WriteGpu() {
  absl::Status read = ForEachEvent<KernelEvent>(m_, [&](const KernelEvent& k) {
    streams_.emplace(k.device_id, k.stream_id);
    Complete(KernelDisplayName(k), "kernel", k.device_id, k.stream_id, k.start_ns, k.duration_ns);
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
  });
  if (!read.ok()) return read;
  read = ForEachEvent<MemcpyEvent>(m_, [&](const MemcpyEvent& c) {
    streams_.emplace(c.device_id, c.stream_id);
    MemoryOperation(KinetoMemcpyName(c), "gpu_memcpy", c);
  });
  if (!read.ok()) return read;
  return ForEachEvent<MemsetEvent>(m_, [&](const MemsetEvent& s) {
    streams_.emplace(s.device_id, s.stream_id);
    MemoryOperation(absl::StrCat("Memset (", std::string(MemoryKindName(s.memory_kind)), ")"),
                    "gpu_memset", s);
  });
}

// Process and track names as Kineto writes them: the host process and each GPU (pid = the
// device) named after the trace, so that every rank's files say which rank they are; "CPU" or
// "GPU D" as the process's label; threads and streams by name.
void KinetoWriter::WriteMetadata() {
  const int64_t pid = m_.header.pid;
  Metadata("process_name", pid, 0, "name", label_);
  Metadata("process_labels", pid, 0, "labels", "CPU");
  std::optional<uint32_t> device;
  for (const auto& [d, stream] : streams_) {
    if (device != d) {
      Metadata("process_name", d, 0, "name", label_);
      Metadata("process_labels", d, 0, "labels", absl::StrCat("GPU ", d));
      device = d;
    }
    Metadata("thread_name", d, stream, "name", absl::StrCat("stream ", stream));
  }
  for (const ThreadInfo& t : m_.threads) {
    const int64_t tid = host_tids_.Of(t.id);
    Metadata("thread_name", pid, tid, "name",
             t.name.empty() ? absl::StrCat("thread ", tid) : std::string(t.name));
  }
  for (const auto& [device, stream] : launches_->stand_in_streams()) {
    Metadata("thread_name", pid, UnrecordedLaunchTid(device, stream), "name",
             absl::StrCat("launches not recorded: GPU ", device, " stream ", stream));
  }
}

void WriteDeviceProperties(const TraceModel& m, JsonWriter& json) {
  json.LineBreak().Key("deviceProperties").BeginArray();
  for (const DeviceInfo& d : m.devices) {
    json.LineBreak().BeginObject().Key("id").Uint(d.id).Key("name").String(d.name);
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

// The job's size as the launcher told the process (WORLD_SIZE, ...), else `traces`.
uint64_t WorldSize(const TraceHeader& header, size_t traces) {
  for (std::string_view variable : kWorldSizeVariables) {
    for (const auto& [name, value] : header.rank_env) {
      uint64_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (name == variable && ec == std::errc() && end == value.data() + value.size() && n > 0) {
        return n;
      }
    }
  }
  return traces;
}

}  // namespace

std::vector<KinetoTraceFile> KinetoTraceFiles(std::span<const TraceModel* const> models) {
  std::vector<KinetoTraceFile> out;
  for (const ExportedTrace& t : PrepareExport(models)) {
    out.push_back({t.rank, absl::StrCat("rank", t.rank, ".trace.json"), ""});
  }
  return out;
}

absl::Status WriteKinetoTrace(std::span<const TraceModel* const> models, size_t index,
                              std::string_view step, ExportOutput& out) {
  const std::vector<ExportedTrace> traces = PrepareExport(models);
  uint64_t base_ns = std::numeric_limits<uint64_t>::max();
  for (const ExportedTrace& t : traces) {
    base_ns = std::min(base_ns, t.model->header.unix_time_base_ns);
  }
  const ExportedTrace& t = traces.at(index);
  // Spaced and one event per line, as Kineto writes: HTA finds the rank by searching the
  // file's lines for `"rank": N`.
  JsonWriter json(JsonSpacing::kSpaced);
  json.BeginObject().LineBreak().Key("schemaVersion").Int(1);
  WriteDeviceProperties(*t.model, json);
  json.LineBreak().Key("distributedInfo").BeginObject().Key("backend").String("nccl");
  json.Key("rank").Int(t.rank);
  json.Key("world_size").Uint(WorldSize(t.model->header, traces.size())).EndObject();
  json.LineBreak().Key("displayTimeUnit").String("ms");
  // Only when the traces' shared time line starts at a known wall-clock time.
  if (base_ns != 0 && !traces.empty()) json.LineBreak().Key("baseTimeNanoseconds").Uint(base_ns);
  json.LineBreak().Key("traceEvents").BeginArray();
  if (absl::Status s = KinetoWriter(t, json, out, step).WriteEvents(); !s.ok()) {
    return s;
  }
  json.EndArray();
  json.LineBreak().Key("traceName").String(t.model->source_name).EndObject();
  out.Write(json.TakeText());
  out.Write("\n");
  return absl::OkStatus();
}

std::vector<KinetoTraceFile> ExportKinetoTraces(std::span<const TraceModel* const> models,
                                                std::string_view step) {
  std::vector<KinetoTraceFile> files = KinetoTraceFiles(models);
  for (size_t i = 0; i < files.size(); ++i) {
    StringExportOutput out;
    // Models that hold their events are not read again: nothing can fail.
    (void)WriteKinetoTrace(models, i, step, out);
    files[i].json = std::move(out.text);
  }
  return files;
}

}  // namespace warpscope
