// The columns of the large tables that TraceColumns decodes (trace_columns_internal.h):
// each names its field in the schema and how the column follows from it; and the memory
// columns are stored in (trace_columns.h).
#include <sys/mman.h>

#include <cstdlib>
#include <new>

#include "analyzers/model/trace_columns_internal.h"

namespace warpscope {

void* AllocateColumnBytes(size_t bytes) {
  // Huge pages for the whole ones a column fills, all of it where rounding up adds at most an
  // eighth; else the rest (less than one) takes small pages, so that little is wasted. First
  // touches of fresh pages are much of the decoder's cost (on a VM most of all): one fault
  // per 2 MiB instead of one per 4 KiB.
  constexpr size_t kHugePage = 2u << 20;
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  if (bytes != 0 && rounded - bytes <= bytes / 8) {
    bytes = rounded;
  } else if (bytes < kHugePage) {
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void* p = nullptr;
  if (::posix_memalign(&p, kHugePage, bytes) != 0) throw std::bad_alloc();
  ::madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint: else small pages
  return p;
}

void FreeColumnBytes(void* p) { std::free(p); }

namespace columns_internal {
namespace {

constexpr Derive kInt = Derive::kInt;
#define WARPSCOPE_TIMES                                                   \
  {"start_ns", kInt, "start_ns"}, {"end_ns", Derive::kEnd, "start_ns"}, { \
    "duration_ns", kInt, "duration_ns"                                    \
  }
#define WARPSCOPE_LAUNCH(field) \
  { #field, Derive::kLaunch, #field }

// GPU work: kernels, copies, memsets, graph launches.
std::vector<TableSpec> StreamTables() {
  return {
      {"kernels",
       v1::TracePacket::kKernelFieldNumber,
       {WARPSCOPE_TIMES,
        {"name", Derive::kString, "name_id"},
        {"mangled_name", Derive::kString, "mangled_name_id"},
        {"device_id", kInt, "device_id"},
        {"context_id", kInt, "context_id"},
        {"stream_id", kInt, "stream_id"},
        {"correlation_id", kInt, "correlation_id"},
        {"graph_id", kInt, "graph_id"},
        {"graph_node_id", kInt, "graph_node_id"},
        {"grid_id", kInt, "grid_id"},
        {"launch_config_id", kInt, "launch_config_id"},
        WARPSCOPE_LAUNCH(grid_x),
        WARPSCOPE_LAUNCH(grid_y),
        WARPSCOPE_LAUNCH(grid_z),
        WARPSCOPE_LAUNCH(block_x),
        WARPSCOPE_LAUNCH(block_y),
        WARPSCOPE_LAUNCH(block_z),
        WARPSCOPE_LAUNCH(cluster_x),
        WARPSCOPE_LAUNCH(cluster_y),
        WARPSCOPE_LAUNCH(cluster_z),
        WARPSCOPE_LAUNCH(registers_per_thread),
        WARPSCOPE_LAUNCH(static_shared_memory),
        WARPSCOPE_LAUNCH(dynamic_shared_memory),
        WARPSCOPE_LAUNCH(local_memory_per_thread),
        WARPSCOPE_LAUNCH(shared_memory_executed),
        WARPSCOPE_LAUNCH(shared_memory_config),
        WARPSCOPE_LAUNCH(shared_memory_carveout_requested),
        WARPSCOPE_LAUNCH(shmem_limit_config)}},
      {"memcpy",
       v1::TracePacket::kMemcpyFieldNumber,
       {WARPSCOPE_TIMES,
        {"copy_kind", Derive::kEnum, "copy_kind", "CopyKind"},
        {"src_kind", Derive::kEnum, "src_kind", "MemoryKind"},
        {"dst_kind", Derive::kEnum, "dst_kind", "MemoryKind"},
        {"bytes", kInt, "bytes"},
        {"device_id", kInt, "device_id"},
        {"context_id", kInt, "context_id"},
        {"stream_id", kInt, "stream_id"},
        {"correlation_id", kInt, "correlation_id"},
        {"is_async", Derive::kBool, "is_async"},
        {"src_device_id", kInt, "src_device_id"},
        {"dst_device_id", kInt, "dst_device_id"},
        {"graph_node_id", kInt, "graph_node_id"}}},
      {"memset",
       v1::TracePacket::kMemsetFieldNumber,
       {WARPSCOPE_TIMES,
        {"value", kInt, "value"},
        {"bytes", kInt, "bytes"},
        {"memory_kind", Derive::kEnum, "memory_kind", "MemoryKind"},
        {"device_id", kInt, "device_id"},
        {"context_id", kInt, "context_id"},
        {"stream_id", kInt, "stream_id"},
        {"correlation_id", kInt, "correlation_id"},
        {"is_async", Derive::kBool, "is_async"}}},
      {"graph_launches",
       v1::TracePacket::kGraphLaunchFieldNumber,
       {WARPSCOPE_TIMES,
        {"graph_id", kInt, "graph_id"},
        {"device_id", kInt, "device_id"},
        {"context_id", kInt, "context_id"},
        {"stream_id", kInt, "stream_id"},
        {"correlation_id", kInt, "correlation_id"}}},
  };
}

// Memory operations: allocations, frees, mappings, refused requests, pools.
std::vector<TableSpec> MemoryTables() {
  return {
      {"memory",
       v1::TracePacket::kMemoryFieldNumber,
       {{"timestamp_ns", kInt, "timestamp_ns"},
        {"operation", Derive::kEnum, "operation", "MemoryOperation"},
        {"memory_kind", Derive::kEnum, "memory_kind", "MemoryKind"},
        {"address", kInt, "address"},
        {"bytes", kInt, "bytes"},
        {"device_id", kInt, "device_id"},
        {"context_id", kInt, "context_id"},
        {"stream_id", kInt, "stream_id"},
        {"correlation_id", kInt, "correlation_id"},
        {"thread_id", Derive::kThread, "thread_id", "os_tid", "thread_name"},
        {"pool_address", kInt, "pool_address"},
        {"pool_reserved_bytes", kInt, "pool_reserved_bytes"},
        {"pool_used_bytes", kInt, "pool_used_bytes"},
        {"source", Derive::kString, "source_id"},
        {"result", kInt, "result"}}}
  };
}

// Host work: API calls, NVTX ranges and marks, NCCL calls, the stacks of API calls, waits,
// CUPTI's overhead.
std::vector<TableSpec> HostTables() {
  return {
      {"api",
       v1::TracePacket::kApiCallFieldNumber,
       {WARPSCOPE_TIMES,
        {"name", Derive::kString, "name_id"},
        {"domain", Derive::kEnum, "domain", "ApiDomain"},
        {"thread_id", Derive::kThread, "thread_id", "os_tid", "thread_name"},
        {"correlation_id", kInt, "correlation_id"},
        {"result", kInt, "result"},
        {"callback_id", kInt, "callback_id"}}},
      {"nvtx_ranges",
       v1::TracePacket::kNvtxRangeFieldNumber,
       {WARPSCOPE_TIMES,
        {"name", Derive::kString, "name_id"},
        {"domain", Derive::kString, "domain_id"},
        {"category", kInt, "category"},
        {"color", kInt, "color"},
        {"depth", kInt, "depth"},
        {"is_push_pop", Derive::kBool, "is_push_pop"},
        {"thread_id", Derive::kThread, "thread_id", "os_tid", "thread_name"},
        {"end_thread_id", Derive::kThread, "end_thread_id", "end_os_tid", "end_thread_name"}}},
      {"nvtx_marks",
       v1::TracePacket::kNvtxMarkFieldNumber,
       {{"timestamp_ns", kInt, "timestamp_ns"},
        {"name", Derive::kString, "name_id"},
        {"domain", Derive::kString, "domain_id"},
        {"category", kInt, "category"},
        {"color", kInt, "color"},
        {"thread_id", Derive::kThread, "thread_id", "os_tid", "thread_name"}}},
      {"nccl_calls",
       v1::TracePacket::kNcclCallFieldNumber,
       {WARPSCOPE_TIMES,
        {"name", Derive::kString, "name_id"},
        {"thread_id", Derive::kThread, "thread_id", "os_tid", "thread_name"},
        {"comm_hash", kInt, "comm_hash"},
        {"bytes", kInt, "bytes"},
        {"reduction_op", Derive::kSint, "reduction_op"},
        {"root", Derive::kSint, "root"},
        {"peer", Derive::kSint, "peer"},
        {"comm_size", Derive::kSint, "comm_size"},
        {"comm_rank", Derive::kSint, "comm_rank"},
        {"launch_correlation_id", kInt, "launch_correlation_id"},
        {"launches", kInt, "launches"},
        {"payload_unreadable", Derive::kBool, "payload_unreadable"}}},
      {"api_stacks",
       v1::TracePacket::kApiStackFieldNumber,
       {{"timestamp_ns", kInt, "timestamp_ns"},
        {"correlation_id", kInt, "correlation_id"},
        {"stack_id", Derive::kStack, "stack_id"},
        {"name", Derive::kString, "name_id"},
        {"domain", Derive::kEnum, "domain", "ApiDomain"},
        {"callback_id", kInt, "callback_id"}}},
      {"sync",
       v1::TracePacket::kSynchronizationFieldNumber,
       {WARPSCOPE_TIMES,
        {"kind", Derive::kEnum, "kind", "SyncKind"},
        {"context_id", kInt, "context_id"},
        {"stream_id", kInt, "stream_id"},
        {"cuda_event_id", kInt, "cuda_event_id"},
        {"correlation_id", kInt, "correlation_id"},
        {"thread_id", Derive::kThread, "thread_id", "os_tid", "thread_name"}}},
      {"overhead",
       v1::TracePacket::kOverheadFieldNumber,
       {WARPSCOPE_TIMES,
        {"kind", Derive::kString, "kind_id"},
        {"thread_id", Derive::kThread, "thread_id", "os_tid", "thread_name"}}},
  };
}

#undef WARPSCOPE_TIMES
#undef WARPSCOPE_LAUNCH

}  // namespace

const std::vector<TableSpec>& EventTables() {
  static const auto* tables = [] {
    auto* all = new std::vector<TableSpec>(StreamTables());
    for (TableSpec& t : MemoryTables()) all->push_back(std::move(t));
    for (TableSpec& t : HostTables()) all->push_back(std::move(t));
    return all;
  }();
  return *tables;
}

bool IsEventPacket(const v1::TracePacket& packet) {
  for (const TableSpec& spec : EventTables()) {
    if (static_cast<int>(packet.data_case()) == spec.packet_field) return true;
  }
  return false;
}

}  // namespace columns_internal
}  // namespace warpscope
