// Translation of CUPTI 13.0 activity records into warpscope records (see header).
#include "collectors/activity/activity_translator.h"

#include <cupti_runtime_cbid.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "collectors/activity/trivial_runtime_apis.h"

namespace warpscope {

CopyKind ToCopyKind(uint8_t k) {
  return k <= CUPTI_ACTIVITY_MEMCPY_KIND_PTOP ? static_cast<CopyKind>(k) : CopyKind::kUnknown;
}
MemoryKind ToMemoryKind(uint32_t k) {
  return k <= CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC ? static_cast<MemoryKind>(k)
                                                         : MemoryKind::kUnknown;
}
SyncKind ToSyncKind(uint32_t t) {
  return t <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ? static_cast<SyncKind>(t)
                                                                       : SyncKind::kUnknown;
}

namespace {

constexpr std::array<uint32_t, 13> kRuntimeLaunchApis = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};

// The same set indexed by callback id: one load per API record on the translation path.
constexpr std::array<bool, CUPTI_RUNTIME_TRACE_CBID_SIZE> kIsTrivial = [] {
  std::array<bool, CUPTI_RUNTIME_TRACE_CBID_SIZE> table{};
  for (uint32_t cbid : kTrivialRuntimeApis) table[cbid] = true;
  return table;
}();
constexpr std::array<bool, CUPTI_RUNTIME_TRACE_CBID_SIZE> kIsRuntimeLaunch = [] {
  std::array<bool, CUPTI_RUNTIME_TRACE_CBID_SIZE> table{};
  for (uint32_t cbid : kRuntimeLaunchApis) table[cbid] = true;
  return table;
}();
}  // namespace

std::span<const uint32_t> TrivialRuntimeApis() { return kTrivialRuntimeApis; }

bool IsTrivialRuntimeApi(uint32_t cbid) { return cbid < kIsTrivial.size() && kIsTrivial[cbid]; }

std::span<const uint32_t> RuntimeLaunchApis() {
  return kRuntimeLaunchApis;
}

bool IsRuntimeLaunchApi(uint32_t cbid) {
  return cbid < kIsRuntimeLaunch.size() && kIsRuntimeLaunch[cbid];
}

std::string ApiDisplayName(const char* name) {
  std::string s(name);
  size_t v = s.rfind("_v");
  if (v != std::string::npos && v + 2 < s.size() &&
      s.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    s.resize(v);
  }
  return s;
}

namespace {
uint32_t U32(int32_t v) { return v < 0 ? 0 : static_cast<uint32_t>(v); }

// When and where an operation on a stream ran: the fields CUPTI's kernel, copy, memset and
// graph launch records share.
template <typename Record, typename CuptiRecord>
void SetStreamOperation(const CuptiRecord& c, Record* r) {
  // CUPTI gives ~0 for work that never ran (the process ended first): no timestamps, as 0.
  const bool never_ran = c.start == UINT64_MAX || c.end == UINT64_MAX;
  r->start_ns = never_ran ? 0 : c.start;
  r->end_ns = never_ran ? 0 : c.end;
  r->device_id = c.deviceId;
  r->context_id = c.contextId;
  r->stream_id = c.streamId;
  r->correlation_id = c.correlationId;
}

// The fields CUPTI's host/device copy record (Memcpy6) and peer copy record (MemcpyPtoP4)
// share; callers add what differs (copy kind, peer devices).
template <typename CuptiMemcpy>
MemcpyRecord MemcpyCommon(const CuptiMemcpy& m) {
  MemcpyRecord r;
  r.src_kind = ToMemoryKind(m.srcKind);
  r.dst_kind = ToMemoryKind(m.dstKind);
  r.bytes = m.bytes;
  SetStreamOperation(m, &r);
  r.is_async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
  r.graph_node_id = static_cast<uint32_t>(m.graphNodeId);
  return r;
}

MemsetRecord ToMemset(const CUpti_ActivityMemset4& m) {
  MemsetRecord r;
  r.value = m.value;
  r.bytes = m.bytes;
  r.memory_kind = ToMemoryKind(m.memoryKind);
  SetStreamOperation(m, &r);
  r.is_async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0;
  return r;
}

SyncRecord ToSync(const CUpti_ActivitySynchronization2& s) {
  SyncRecord r;
  r.kind = ToSyncKind(s.type);
  r.start_ns = s.start;
  r.end_ns = s.end;
  r.context_id = s.contextId;
  r.stream_id = s.streamId == 0xffffffffu ? 0 : s.streamId;
  r.cuda_event_id = s.cudaEventId == 0xffffffffu ? 0 : s.cudaEventId;
  r.correlation_id = s.correlationId;
  return r;
}

MarkerEvent ToMarker(const CUpti_ActivityMarker2& m) {
  MarkerEvent e;
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    e.kind = MarkerEvent::Kind::kStart;
  } else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    e.kind = MarkerEvent::Kind::kEnd;
  } else {
    e.kind = MarkerEvent::Kind::kInstant;
  }
  e.id = m.id;
  e.timestamp_ns = m.timestamp;
  e.os_tid = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
                     m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS
                 ? m.objectId.pt.threadId
                 : 0;
  e.name = m.name;
  e.domain = m.domain;
  return e;
}

const char* OverheadKindName(CUpti_ActivityOverheadKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "DRIVER_COMPILER";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI_BUFFER_FLUSH";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI_INSTRUMENTATION";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI_RESOURCE";
    default: return "OTHER";
  }
}

OverheadRecord ToOverhead(const CUpti_ActivityOverhead3& o, RecordSink& sink) {
  OverheadRecord r;
  r.kind_id = sink.InternString(OverheadKindName(o.overheadKind));
  r.start_ns = o.start;
  r.end_ns = o.end;
  if (o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
    r.thread_id = sink.InternThread(o.objectId.pt.threadId, o.objectId.pt.threadId);
  }
  return r;
}

std::string UuidHex(const CUuuid& uuid) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    auto b = static_cast<uint8_t>(uuid.bytes[i]);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

DeviceRecord ToDevice(const CUpti_ActivityDevice5& d) {
  DeviceRecord r;
  r.id = d.id;
  r.name = d.name ? d.name : "";
  r.compute_capability_major = d.computeCapabilityMajor;
  r.compute_capability_minor = d.computeCapabilityMinor;
  r.sm_count = d.numMultiprocessors;
  r.max_warps_per_sm = d.maxWarpsPerMultiprocessor;
  r.max_blocks_per_sm = d.maxBlocksPerMultiprocessor;
  r.max_threads_per_block = d.maxThreadsPerBlock;
  r.max_registers_per_sm = d.maxRegistersPerMultiprocessor;
  r.max_registers_per_block = d.maxRegistersPerBlock;
  r.max_shared_memory_per_sm = d.maxSharedMemoryPerMultiprocessor;
  r.max_shared_memory_per_block = d.maxSharedMemoryPerBlock;
  r.threads_per_warp = d.numThreadsPerWarp;
  r.core_clock_khz = d.coreClockRate;
  r.global_memory_bytes = d.globalMemorySize;
  r.global_memory_bandwidth_kbps = d.globalMemoryBandwidth;
  r.l2_cache_bytes = d.l2CacheSize;
  r.uuid = UuidHex(d.uuid);
  return r;
}

ContextRecord ToContext(const CUpti_ActivityContext3& c) {
  ContextRecord r;
  r.id = c.contextId;
  r.device_id = c.deviceId;
  r.is_green = c.isGreenContext != 0;
  r.sm_count = c.isGreenContext ? c.numMultiprocessors : 0;
  return r;
}

MemoryOperation ToMemoryOperation(CUpti_ActivityMemoryOperationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION:
      return MemoryOperation::kAllocate;
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE:
      return MemoryOperation::kRelease;
    default:
      return MemoryOperation::kUnknown;
  }
}

MemoryOperation ToPoolOperation(CUpti_ActivityMemoryPoolOperationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
      return MemoryOperation::kPoolCreate;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
      return MemoryOperation::kPoolDestroy;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
      return MemoryOperation::kPoolTrim;
    default:
      return MemoryOperation::kUnknown;
  }
}

// CUPTI marks "none" with ~0 (CUPTI_INVALID_CONTEXT_ID, CUPTI_INVALID_STREAM_ID); the trace
// says 0.
uint32_t IdOrZero(uint32_t id) { return id == 0xffffffffu ? 0 : id; }

MemoryRecord ToMemory(const CUpti_ActivityMemory4& m, RecordSink& sink) {
  MemoryRecord r;
  r.operation = ToMemoryOperation(m.memoryOperationType);
  r.memory_kind = ToMemoryKind(m.memoryKind);
  r.address = m.address;
  r.bytes = m.bytes;
  r.timestamp_ns = m.timestamp;
  r.device_id = m.deviceId;
  r.context_id = IdOrZero(m.contextId);
  r.stream_id = IdOrZero(m.streamId);
  r.correlation_id = m.correlationId;
  // Only a pool the process made itself has a size and a use (CUPTI fills them for LOCAL).
  if (m.memoryPoolConfig.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL) {
    r.pool_address = m.memoryPoolConfig.address;
    r.pool_reserved_bytes = m.memoryPoolConfig.pool.size;
    r.pool_used_bytes = m.memoryPoolConfig.utilizedSize;
  } else if (m.memoryPoolConfig.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED) {
    r.pool_address = m.memoryPoolConfig.address;
  }
  if (m.source != nullptr && m.source[0] != '\0') r.source_id = sink.InternString(m.source);
  return r;
}

MemoryRecord ToMemoryPool(const CUpti_ActivityMemoryPool3& p) {
  MemoryRecord r;
  r.operation = ToPoolOperation(p.memoryPoolOperationType);
  r.memory_kind = p.isManagedPool ? MemoryKind::kManaged : MemoryKind::kDevice;
  r.address = p.address;
  r.timestamp_ns = p.timestamp;
  r.device_id = p.deviceId;
  r.correlation_id = p.correlationId;
  r.pool_address = p.address;
  if (p.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL) {
    // A trim keeps at least minBytesToKeep; `size` is the pool's size after the operation.
    r.bytes = p.size;
    r.pool_reserved_bytes = p.size;
    r.pool_used_bytes = p.utilizedSize;
  }
  return r;
}

GraphLaunchRecord ToGraphLaunch(const CUpti_ActivityGraphTrace2& g) {
  GraphLaunchRecord r;
  r.graph_id = g.graphId;
  SetStreamOperation(g, &r);
  return r;
}

// CUPTI's record as the layout its kind says it has.
template <typename CuptiRecord>
const CuptiRecord& As(const CUpti_Activity* record) {
  return *reinterpret_cast<const CuptiRecord*>(record);
}

// No timestamps: 0 when CUPTI ran out of device buffers, ~0 for work that never ran.
template <typename CuptiRecord>
bool ZeroTimestamps(const CuptiRecord& c) {
  return (c.start == 0 && c.end == 0) || c.start == UINT64_MAX || c.end == UINT64_MAX;
}
}  // namespace

uint64_t ActivityTranslator::ApiName(bool runtime, uint32_t cbid, RecordSink& sink) {
  uint64_t key = (static_cast<uint64_t>(runtime) << 32) | cbid;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  const char* name = api_name_ ? api_name_(runtime, cbid) : nullptr;
  char fallback[48];
  if (name == nullptr) {
    std::snprintf(fallback, sizeof fallback, "%s_cbid_%u", runtime ? "runtime" : "driver", cbid);
    name = fallback;
  }
  uint64_t id = sink.InternString(ApiDisplayName(name));
  if (id != 0) api_names_.emplace(key, id);
  return id;
}

void ActivityTranslator::Kernel(const CUpti_ActivityKernel10& k, RecordSink& sink) {
  ++counters_.kernels;
  if (ZeroTimestamps(k)) ++counters_.zero_timestamps;
  KernelNameCache::Ids ids = names_.Lookup(k.name, sink);
  LaunchConfigRecord c;
  c.grid_x = U32(k.gridX);
  c.grid_y = U32(k.gridY);
  c.grid_z = U32(k.gridZ);
  c.block_x = U32(k.blockX);
  c.block_y = U32(k.blockY);
  c.block_z = U32(k.blockZ);
  c.cluster_x = k.clusterX;
  c.cluster_y = k.clusterY;
  c.cluster_z = k.clusterZ;
  c.registers_per_thread = k.registersPerThread;
  c.static_shared_memory = U32(k.staticSharedMemory);
  c.dynamic_shared_memory = U32(k.dynamicSharedMemory);
  c.local_memory_per_thread = k.localMemoryPerThread;
  c.shared_memory_executed = k.sharedMemoryExecuted;
  c.shared_memory_config = k.sharedMemoryConfig;
  c.shared_memory_carveout_requested =
      k.isSharedMemoryCarveoutRequested ? k.sharedMemoryCarveoutRequested : 0;
  c.shmem_limit_config = static_cast<uint32_t>(k.shmemLimitConfig);
  KernelRecord r;
  r.name_id = ids.name_id;
  r.mangled_name_id = ids.mangled_name_id;
  r.launch_config_id = sink.InternLaunchConfig(c);
  SetStreamOperation(k, &r);
  r.graph_id = k.graphId;
  r.graph_node_id = static_cast<uint32_t>(k.graphNodeId);
  r.grid_id = static_cast<uint64_t>(k.gridId);
  if (!sink.Write(r)) ++counters_.write_failures;
}

bool ActivityTranslator::ApiCall(const CUpti_ActivityAPI& a, bool runtime, RecordSink& sink) {
  if (runtime && filter_trivial_api_ && IsTrivialRuntimeApi(a.cbid)) {
    ++counters_.api_calls_filtered;
    return true;
  }
  if (runtime && launch_calls_elsewhere_ && IsRuntimeLaunchApi(a.cbid)) {
    ++counters_.launch_calls_elsewhere;
    return true;
  }
  ++counters_.api_calls;
  ApiCallRecord r;
  r.domain = runtime ? ApiDomain::kRuntime : ApiDomain::kDriver;
  r.name_id = ApiName(runtime, a.cbid, sink);
  r.start_ns = a.start;
  r.end_ns = a.end;
  r.thread_id = sink.InternThread(a.threadId, a.threadId);
  r.correlation_id = a.correlationId;
  r.result = a.returnValue;
  r.callback_id = a.cbid;
  return sink.Write(r);
}

bool ActivityTranslator::InternalLaunch(const CUpti_ActivityAPI& a, RecordSink& sink) {
  ApiCallRecord r;
  r.domain = ApiDomain::kDriver;
  if (internal_launch_name_ == 0) internal_launch_name_ = sink.InternString(kInternalLaunchName);
  r.name_id = internal_launch_name_;
  r.start_ns = a.start;
  r.end_ns = a.end;
  r.thread_id = sink.InternThread(a.threadId, a.threadId);
  r.correlation_id = a.correlationId;
  r.result = a.returnValue;
  r.callback_id = 0;  // unused for these records (cupti_activity.h)
  return sink.Write(r);
}

bool ActivityTranslator::Device(const CUpti_ActivityDevice5& d, RecordSink& sink) {
  ++counters_.devices;
  if (!devices_seen_.insert(d.id).second) return true;
  DeviceRecord r = ToDevice(d);
  if (device_fixup_) device_fixup_(&r);
  return sink.Write(r);
}

bool ActivityTranslator::Memory(const CUpti_Activity* record, RecordSink& sink) {
  ++counters_.memory_events;
  const MemoryRecord r = record->kind == CUPTI_ACTIVITY_KIND_MEMORY2
                             ? ToMemory(As<CUpti_ActivityMemory4>(record), sink)
                             : ToMemoryPool(As<CUpti_ActivityMemoryPool3>(record));
  if (memory_observer_) memory_observer_(r);
  return sink.Write(r);
}

void ActivityTranslator::Translate(const CUpti_Activity* record, RecordSink& sink) {
  if (record->kind == CUPTI_ACTIVITY_KIND_MEMORY2 ||
      record->kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL) {
    if (!Memory(record, sink)) ++counters_.write_failures;
    return;
  }
  bool ok = true;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
      Kernel(As<CUpti_ActivityKernel10>(record), sink);
      return;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = As<CUpti_ActivityMemcpy6>(record);
      ++counters_.memcpys;
      if (ZeroTimestamps(m)) ++counters_.zero_timestamps;
      MemcpyRecord r = MemcpyCommon(m);
      r.copy_kind = ToCopyKind(m.copyKind);
      ok = sink.Write(r);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto& m = As<CUpti_ActivityMemcpyPtoP4>(record);
      ++counters_.memcpys;
      if (ZeroTimestamps(m)) ++counters_.zero_timestamps;
      MemcpyRecord r = MemcpyCommon(m);
      r.copy_kind = CopyKind::kPtoP;
      r.src_device_id = m.srcDeviceId;
      r.dst_device_id = m.dstDeviceId;
      ok = sink.Write(r);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET:
      ++counters_.memsets;
      if (ZeroTimestamps(As<CUpti_ActivityMemset4>(record))) ++counters_.zero_timestamps;
      ok = sink.Write(ToMemset(As<CUpti_ActivityMemset4>(record)));
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      ++counters_.syncs;
      ok = sink.Write(ToSync(As<CUpti_ActivitySynchronization2>(record)));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      ok = ApiCall(As<CUpti_ActivityAPI>(record), record->kind == CUPTI_ACTIVITY_KIND_RUNTIME, sink);
      break;
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
      ++counters_.internal_launches;
      ok = InternalLaunch(As<CUpti_ActivityAPI>(record), sink);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      ++counters_.nvtx;
      nvtx_.OnMarker(ToMarker(As<CUpti_ActivityMarker2>(record)), sink);
      return;
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
      const auto& d = As<CUpti_ActivityMarkerData2>(record);
      uint32_t color = (d.flags & CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB) ? d.color : 0;
      nvtx_.OnMarkerData(d.id, color, d.category, sink);
      return;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      ++counters_.overheads;
      ok = sink.Write(ToOverhead(As<CUpti_ActivityOverhead3>(record), sink));
      break;
    case CUPTI_ACTIVITY_KIND_DEVICE:
      ok = Device(As<CUpti_ActivityDevice5>(record), sink);
      break;
    case CUPTI_ACTIVITY_KIND_CONTEXT:
      ++counters_.contexts;
      ok = sink.Write(ToContext(As<CUpti_ActivityContext3>(record)));
      break;
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      ++counters_.graph_launches;
      ok = sink.Write(ToGraphLaunch(As<CUpti_ActivityGraphTrace2>(record)));
      break;
    default:
      ++counters_.unknown_kinds;
      return;
  }
  if (!ok) ++counters_.write_failures;
}

}  // namespace warpscope
