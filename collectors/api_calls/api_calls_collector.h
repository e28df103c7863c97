// The API calls collector: the host side of every kernel, and the stacks of the CUDA calls that
// matter. Inside CUPTI's callbacks it logs each kernel or graph launch call — runtime or driver
// API, whatever library made it (cuBLASLt, cutlass, Triton, NCCL) — with its thread, times,
// correlation id and result, and takes the calling thread's Python stack (native without
// Python) at launches, syncs and copies. The log is per thread and lock-free (call_log.h); the
// session's thread drains it into ApiCallEvent and ApiStackEvent records at each flush.
//
// A launch costs the program one callback at entry and one at exit; no CUPTI activity record
// is made for it (the RUNTIME kind leaves launch calls out while this collector logs them).
// Settings: WARPSCOPE_TRACE (kind `launch`), WARPSCOPE_STACKS, WARPSCOPE_STACK_DEPTH,
// WARPSCOPE_STACK_LAUNCH_EVERY.
#ifndef WARPSCOPE_COLLECTORS_API_CALLS_API_CALLS_COLLECTOR_H_
#define WARPSCOPE_COLLECTORS_API_CALLS_API_CALLS_COLLECTOR_H_

#include <memory>

#include "collectors/collector_interface.h"

namespace warpscope {

std::unique_ptr<SessionListener> MakeApiCallsCollector();

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_API_CALLS_API_CALLS_COLLECTOR_H_
