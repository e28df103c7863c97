// CuptiActivity: the tracer's entry points into activity tracing (Init, capture window
// edges, flush, shutdown, fork), over the one ActivityController of the process driving
// CUPTI's activity API; and the trace clock. One per process (CUPTI's activity state is
// global). CUPTI-free header.
#ifndef WARPSCOPE_COLLECTORS_ACTIVITY_CUPTI_ACTIVITY_H_
#define WARPSCOPE_COLLECTORS_ACTIVITY_CUPTI_ACTIVITY_H_

#include <cstdint>
#include <string>

#include "collectors/activity/activity_controller.h"

namespace warpscope {

class TraceWriter;

// Chooses the clock every record and every session timestamp uses; call before anything
// reads TraceClockNs. false: CUPTI's own (cuptiGetTimestamp; CLOCK_REALTIME on Linux);
// true: CLOCK_MONOTONIC, registered with CUPTI as its timestamp callback in Init.
void SetTraceClock(bool monotonic);
// Now, in the trace clock (ns).
uint64_t TraceClockNs();

// Static entry points over the process's ActivityController (see activity_controller.h for
// what each does), so that the session and CUPTI's callbacks reach the same one.
class CuptiActivity {
 public:
  // Returns false with a one-line *error.
  static bool Init(const ActivityOptions& options, TraceWriter* writer, std::string* error);
  static bool SetEnabled(bool enabled, std::string* error);  // capture window edges
  static void Flush(bool forced);
  static void Shutdown();
  static void AbandonAfterFork();
  static void PublishCounters();
};

// Reads the opt-in and reserved shared memory per block of `device` with
// cuDeviceGetAttribute (Device5 lacks them). Call from the session's own thread only.
void QueryDeviceSharedMemoryLimits(uint32_t device);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_ACTIVITY_CUPTI_ACTIVITY_H_
