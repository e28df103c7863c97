// CuptiActivity: the activity-API side of the tracer. It owns CUPTI's buffer callbacks (one
// TraceWriter::Batch per completed buffer), the monotonic timestamp callback, the activity
// kinds a capture window turns on and off, flushing and dropped-record accounting. One per
// process (CUPTI's activity state is global). CUPTI-free header.
#ifndef WARPSCOPE_COLLECTORS_ACTIVITY_CUPTI_ACTIVITY_H_
#define WARPSCOPE_COLLECTORS_ACTIVITY_CUPTI_ACTIVITY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "collectors/activity/trace_kinds.h"

namespace warpscope {

class TraceWriter;
struct DeviceRecord;

struct ActivityOptions {
  TraceKinds kinds;
  size_t buffer_bytes = 8 << 20;
  size_t device_buffer_bytes = 0;   // 0 = CUPTI's default (3.2 MB)
  uint32_t device_buffer_pool = 0;  // 0 = CUPTI's default
  std::string suppress_nvtx_name;   // the NVTX capture range (session writes it itself)
  std::string suppress_nvtx_domain;
  bool monotonic_clock = false;     // register a CLOCK_MONOTONIC timestamp callback
  bool filter_trivial_api = true;
  // Kernel records on from the start, not only inside capture windows: CUPTI refuses to
  // enable CONCURRENT_KERNEL once PC sampling is enabled on a context
  // (CUPTI_ERROR_NOT_COMPATIBLE, seen on the H200), so with PC sampling and a window that
  // opens later the trace would hold no kernels at all.
  bool kernels_always_on = false;
};

// Chooses the clock every record and every session timestamp uses; call before anything
// reads TraceClockNs. false: CUPTI's own (cuptiGetTimestamp; CLOCK_REALTIME on Linux);
// true: CLOCK_MONOTONIC, registered with CUPTI as its timestamp callback in Init.
void SetTraceClock(bool monotonic);
// Now, in the trace clock (ns).
uint64_t TraceClockNs();

class CuptiActivity {
 public:
  // Registers the timestamp and buffer callbacks, sets buffer attributes and the thread id
  // type, and enables the always-on kinds (CONTEXT). Returns false with a one-line *error.
  static bool Init(const ActivityOptions& options, TraceWriter* writer, std::string* error);
  // Enables (window open) or disables (window closed) the configured kinds.
  static bool SetEnabled(bool enabled, std::string* error);
  // cuptiActivityFlushAll(0) or (FLUSH_FORCED); also moves dropped-record counts to the trace.
  static void Flush(bool forced);
  // Disables everything; buffers completed later are ignored.
  static void Shutdown();
  // After fork() in the child: ignore every later callback, touch nothing.
  static void AbandonAfterFork();
  // Stats: records translated, buffers, drops; written into the writer's counters.
  static void PublishCounters();
};

// Reads the opt-in and reserved shared memory per block of `device` with
// cuDeviceGetAttribute (Device5 lacks them). Call from the session's own thread only.
void QueryDeviceSharedMemoryLimits(uint32_t device);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_ACTIVITY_CUPTI_ACTIVITY_H_
