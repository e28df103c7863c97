// TraceModel's lookups (devices, contexts, threads, metric sets, cubins, call stacks by id, the
// stack of a call, the header's rank) and the names the analyses print for the schema's enums
// and for kernels (see trace_model.h).
#include "analyzers/model/trace_model.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/settings/job_variables.h"

namespace warpscope {

std::optional<int64_t> HeaderRank(const TraceHeader& header) {
  for (std::string_view variable : kRankVariables) {
    for (const auto& [name, value] : header.rank_env) {
      int64_t rank = 0;
      if (name == variable && absl::SimpleAtoi(value, &rank) && rank >= 0) return rank;
    }
  }
  return std::nullopt;
}

const DeviceInfo* TraceModel::FindDevice(uint32_t id) const {
  for (const DeviceInfo& d : devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

const ContextInfo* TraceModel::FindContext(uint32_t id) const {
  for (const ContextInfo& c : contexts) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

const ThreadInfo* TraceModel::FindThread(uint64_t id) const {
  // Backwards: the last definition, as for the other interned tables (docs/format.md).
  for (auto it = threads.rbegin(); it != threads.rend(); ++it) {
    if (it->id == id) return &*it;
  }
  return nullptr;
}

const PmMetricSet* TraceModel::FindPmMetricSet(uint32_t id) const {
  // Backwards: the set a sample refers to is usually the latest one.
  for (auto it = pm_metric_sets.rbegin(); it != pm_metric_sets.rend(); ++it) {
    if (it->id == id) return &*it;
  }
  return nullptr;
}

const PcStallReasons* TraceModel::FindPcStallReasons(uint32_t device_id) const {
  for (auto it = pc_stall_reasons.rbegin(); it != pc_stall_reasons.rend(); ++it) {
    if (it->device_id == device_id) return &*it;
  }
  return nullptr;
}

const std::string* TraceModel::FindCubin(uint64_t crc) const {
  auto it = cubins.find(crc);
  return it == cubins.end() ? nullptr : &it->second;
}

const CallStackInfo* TraceModel::FindCallStack(uint64_t id) const {
  auto it = std::lower_bound(call_stacks.begin(), call_stacks.end(), id,
                             [](const CallStackInfo& s, uint64_t v) { return s.id < v; });
  return it != call_stacks.end() && it->id == id ? &*it : nullptr;
}

const CallStackInfo* TraceModel::StackOfCall(uint32_t correlation_id) const {
  auto it = std::lower_bound(
      api_stack_by_correlation_.begin(), api_stack_by_correlation_.end(), correlation_id,
      [](const std::pair<uint32_t, uint64_t>& entry, uint32_t v) { return entry.first < v; });
  if (it == api_stack_by_correlation_.end() || it->first != correlation_id) return nullptr;
  return FindCallStack(it->second);
}

std::optional<uint32_t> TraceModel::DeviceOfContext(uint32_t context_id) const {
  const ContextInfo* c = FindContext(context_id);
  if (c == nullptr) return std::nullopt;
  return c->device_id;
}

std::vector<uint32_t> TraceModel::DeviceIds() const {
  std::set<uint32_t> ids;
  for (const DeviceInfo& d : devices) ids.insert(d.id);
  for (const KernelEvent& k : kernels) ids.insert(k.device_id);
  for (const MemcpyEvent& c : memcpys) ids.insert(c.device_id);
  for (const MemsetEvent& s : memsets) ids.insert(s.device_id);
  for (const MemoryEvent& e : memory_events) ids.insert(e.device_id);
  return {ids.begin(), ids.end()};
}

absl::Status TraceModel::CheckDevice(std::optional<uint32_t> device) const {
  if (!device.has_value()) return absl::OkStatus();
  const std::vector<uint32_t> ids = DeviceIds();
  if (std::find(ids.begin(), ids.end(), *device) != ids.end()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--device ", *device, ": the trace has no such device (it has ",
      ids.empty() ? "none" : absl::StrJoin(ids, ", "), "); choose one of them"));
}

v1::Severity TraceModel::WorstSeverity() const {
  v1::Severity worst = v1::SEVERITY_INFO;
  for (const auto* list : {&import_counters, &stats}) {
    for (const StatCounter& c : *list) {
      if (c.value != 0 && c.severity > worst) worst = c.severity;
    }
  }
  return worst;
}

std::string_view CopyKindName(v1::CopyKind kind) {
  switch (kind) {
    case v1::COPY_KIND_HTOD:
      return "HtoD";
    case v1::COPY_KIND_DTOH:
      return "DtoH";
    case v1::COPY_KIND_HTOA:
      return "HtoA";
    case v1::COPY_KIND_ATOH:
      return "AtoH";
    case v1::COPY_KIND_ATOA:
      return "AtoA";
    case v1::COPY_KIND_ATOD:
      return "AtoD";
    case v1::COPY_KIND_DTOA:
      return "DtoA";
    case v1::COPY_KIND_DTOD:
      return "DtoD";
    case v1::COPY_KIND_HTOH:
      return "HtoH";
    case v1::COPY_KIND_PTOP:
      return "PtoP";
    default:
      return "Unknown";
  }
}

std::string_view MemoryKindName(v1::MemoryKind kind) {
  switch (kind) {
    case v1::MEMORY_KIND_PAGEABLE:
      return "Pageable";
    case v1::MEMORY_KIND_PINNED:
      return "Pinned";
    case v1::MEMORY_KIND_DEVICE:
      return "Device";
    case v1::MEMORY_KIND_ARRAY:
      return "Array";
    case v1::MEMORY_KIND_MANAGED:
      return "Managed";
    case v1::MEMORY_KIND_DEVICE_STATIC:
      return "Device Static";
    case v1::MEMORY_KIND_MANAGED_STATIC:
      return "Managed Static";
    default:
      return "Unknown";
  }
}

std::string_view SyncKindName(v1::SyncKind kind) {
  switch (kind) {
    case v1::SYNC_KIND_EVENT:
      return "Event";
    case v1::SYNC_KIND_STREAM_WAIT_EVENT:
      return "Stream Wait Event";
    case v1::SYNC_KIND_STREAM:
      return "Stream";
    case v1::SYNC_KIND_CONTEXT:
      return "Context";
    default:
      return "Unknown";
  }
}

std::string_view ApiDomainName(v1::ApiDomain domain) {
  switch (domain) {
    case v1::API_DOMAIN_RUNTIME:
      return "Runtime";
    case v1::API_DOMAIN_DRIVER:
      return "Driver";
    default:
      return "Unknown";
  }
}

std::string_view ClockDomainName(v1::ClockDomain domain) {
  switch (domain) {
    case v1::CLOCK_DOMAIN_REALTIME:
      return "CLOCK_REALTIME";
    case v1::CLOCK_DOMAIN_MONOTONIC:
      return "CLOCK_MONOTONIC";
    case v1::CLOCK_DOMAIN_MONOTONIC_RAW:
      return "CLOCK_MONOTONIC_RAW";
    case v1::CLOCK_DOMAIN_SYNTHETIC:
      return "synthetic";
    default:
      return "unspecified";
  }
}

std::string_view CaptureTriggerName(v1::CaptureTrigger trigger) {
  switch (trigger) {
    case v1::CAPTURE_TRIGGER_PROCESS:
      return "process";
    case v1::CAPTURE_TRIGGER_DELAY:
      return "delay";
    case v1::CAPTURE_TRIGGER_DURATION:
      return "duration";
    case v1::CAPTURE_TRIGGER_PROFILER_API:
      return "profiler-api";
    case v1::CAPTURE_TRIGGER_NVTX:
      return "nvtx";
    case v1::CAPTURE_TRIGGER_SIGNAL:
      return "signal";
    case v1::CAPTURE_TRIGGER_ERROR:
      return "error";
    case v1::CAPTURE_TRIGGER_CONTROL:
      return "control";
    case v1::CAPTURE_TRIGGER_LIMIT:
      return "limit";
    case v1::CAPTURE_TRIGGER_SLOW_STEP:
      return "slow-step";
    case v1::CAPTURE_TRIGGER_CRASH:
      return "crash";
    case v1::CAPTURE_TRIGGER_FLIGHT_RECORDER:
      return "flight-recorder";
    default:
      return "unknown";
  }
}

std::string_view SeverityName(v1::Severity severity) {
  switch (severity) {
    case v1::SEVERITY_DATA_LOSS:
      return "data-loss";
    case v1::SEVERITY_ERROR:
      return "error";
    default:
      return "info";
  }
}

std::string_view EndReasonName(v1::EndReason reason) {
  switch (reason) {
    case v1::END_REASON_EXIT:
      return "exit";
    case v1::END_REASON_SIGNAL:
      return "signal";
    case v1::END_REASON_WRITE_ERROR:
      return "write-error";
    case v1::END_REASON_DETACH:
      return "detach";
    case v1::END_REASON_NEXT_FILE:
      return "next-file";
    case v1::END_REASON_DUMP:
      return "dump";
    case v1::END_REASON_CRASH:
      return "crash";
    default:
      return "unknown";
  }
}

std::string SignalText(uint32_t signal) {
  // Linux's numbers: the trace was recorded there, wherever it is read.
  static constexpr std::pair<uint32_t, const char*> kSignals[] = {
      {1, "SIGHUP"},   {2, "SIGINT"},   {3, "SIGQUIT"},  {4, "SIGILL"},   {6, "SIGABRT"},
      {7, "SIGBUS"},   {8, "SIGFPE"},   {9, "SIGKILL"},  {10, "SIGUSR1"}, {11, "SIGSEGV"},
      {12, "SIGUSR2"}, {13, "SIGPIPE"}, {15, "SIGTERM"}};
  for (const auto& [number, name] : kSignals) {
    if (number == signal) return name;
  }
  return absl::StrCat("signal ", signal);
}

std::string EndText(const EndOfTraceInfo& end) {
  std::string text(EndReasonName(end.reason));
  return end.signal == 0 ? text : absl::StrCat(text, " (", SignalText(end.signal), ")");
}

std::string_view MemoryOperationName(v1::MemoryOperation operation) {
  switch (operation) {
    case v1::MEMORY_OPERATION_ALLOCATE:
      return "allocate";
    case v1::MEMORY_OPERATION_RELEASE:
      return "release";
    case v1::MEMORY_OPERATION_MAP:
      return "map";
    case v1::MEMORY_OPERATION_UNMAP:
      return "unmap";
    case v1::MEMORY_OPERATION_ALLOCATE_FAILED:
      return "allocate_failed";
    case v1::MEMORY_OPERATION_POOL_CREATE:
      return "pool_create";
    case v1::MEMORY_OPERATION_POOL_DESTROY:
      return "pool_destroy";
    case v1::MEMORY_OPERATION_POOL_TRIM:
      return "pool_trim";
    default:
      return "unknown";
  }
}

namespace {
constexpr std::string_view kUnnamedKernel = "<unnamed kernel>";
}  // namespace

std::string KernelDisplayName(const KernelEvent& kernel) {
  if (!kernel.name.empty()) return std::string(kernel.name);
  if (!kernel.mangled_name.empty()) return std::string(kernel.mangled_name);
  return std::string(kUnnamedKernel);
}

std::vector<std::string_view> KernelDisplayNames(const TraceModel& model) {
  std::vector<std::string_view> names;
  std::unordered_set<std::string_view> seen;
  for (const KernelEvent& k : model.kernels) {
    const std::string_view name = !k.name.empty()           ? k.name
                                  : !k.mangled_name.empty() ? k.mangled_name
                                                            : kUnnamedKernel;
    if (seen.insert(name).second) names.push_back(name);
  }
  return names;
}

std::string MemcpyOperationName(v1::CopyKind kind) {
  return absl::StrCat("[CUDA memcpy ", std::string(CopyKindName(kind)), "]");
}

}  // namespace warpscope
