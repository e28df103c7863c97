// Which activity kinds the activity collector records: set by WARPSCOPE_TRACE and
// `record -t` (libinject/config.h parses them).
#ifndef WARPSCOPE_COLLECTORS_ACTIVITY_TRACE_KINDS_H_
#define WARPSCOPE_COLLECTORS_ACTIVITY_TRACE_KINDS_H_

namespace warpscope {

// Which activity the tracer records (WARPSCOPE_TRACE, `record -t`).
struct TraceKinds {
  bool kernel = true;     // CONCURRENT_KERNEL
  // The host side of every kernel: each launch call, runtime or driver API (cuBLASLt,
  // Triton, NCCL), written from CUPTI callbacks into per-thread logs (collectors/api_calls),
  // plus CUPTI's INTERNAL_LAUNCH_API records of launches made outside any API call.
  bool launch = true;
  bool memory = true;     // MEMCPY, MEMCPY2 (peer), MEMSET
  // Allocations and frees (MEMORY2) and stream-ordered pools (MEMORY_POOL), VMM maps and
  // failed requests from the allocation functions' callbacks, with their stacks.
  bool alloc = true;
  // Every runtime API call but the trivial queries (IsTrivialRuntimeApi), written from the
  // same callbacks and logs as `launch`; CUPTI's RUNTIME activity records only when a
  // callback cannot be enabled (launch calls left out when `launch` is on).
  bool runtime = true;
  bool driver = false;    // DRIVER API records (many; off by default)
  bool nvtx = true;       // MARKER + MARKER_DATA
  bool sync = true;       // SYNCHRONIZATION
  bool overhead = false;  // OVERHEAD (CUPTI's own)
  bool graph = false;     // GRAPH_TRACE: one record per graph launch *instead of* its kernels
  bool operator==(const TraceKinds&) const = default;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_ACTIVITY_TRACE_KINDS_H_
