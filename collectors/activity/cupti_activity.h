// The activity collector: the session's entry into activity tracing (Init, capture window
// edges, flush, shutdown, fork), over the one ActivityController of the process driving
// CUPTI's activity API; and the trace clock. One per process (CUPTI's activity state is
// global). CUPTI-free header.
#ifndef WARPSCOPE_COLLECTORS_ACTIVITY_CUPTI_ACTIVITY_H_
#define WARPSCOPE_COLLECTORS_ACTIVITY_CUPTI_ACTIVITY_H_

#include <cstdint>
#include <memory>

#include "collectors/collector_interface.h"

namespace warpscope {

// Chooses the clock every record and every session timestamp uses; call before anything
// reads TraceClockNs. false: CUPTI's own (cuptiGetTimestamp; CLOCK_REALTIME on Linux);
// true: CLOCK_MONOTONIC, registered with CUPTI as its timestamp callback in Init.
void SetTraceClock(bool monotonic);
// Now, in the trace clock (ns).
uint64_t TraceClockNs();

// Launch calls of the runtime API are recorded by the launch log (collectors/api_calls), from
// CUPTI callbacks: activity records of them are left out from the next window on.
void SetLaunchCallsFromCallbacks(bool on);
// Every other runtime API call but the trivial queries is recorded by the launch log too: no
// RUNTIME activity is enabled from the next window on.
void SetRuntimeCallsFromCallbacks(bool on);
// Every synchronize call of either API is recorded by the launch log too: no SYNCHRONIZATION
// activity is enabled from the next window on.
void SetSyncCallsFromCallbacks(bool on);

// The activity collector (CollectorStage::kRequired) over the process's one
// ActivityController: Init at start, the configured kinds on and off at capture window edges,
// periodic flush and counters, a forced flush when a context is being destroyed, shared memory
// limits of each new device, shutdown, and nothing after fork.
std::unique_ptr<SessionListener> MakeActivityCollector();

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_ACTIVITY_CUPTI_ACTIVITY_H_
