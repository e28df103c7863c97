// ApiCallRecorder: what the API calls collector does inside CUPTI's callbacks and at each
// flush, apart from CUPTI itself, so that unit tests drive it with synthetic calls.
//
// At a selected call's entry, on the calling thread: when a window is open, the time, and the
// caller's stack where one is wanted (StackTable); at its exit: the time and the result, then
// one entry in the thread's CallLog. Drain() turns the logged calls into ApiCallEvent records
// (launch calls, and with `runtime_calls` every other runtime API call but the trivial
// queries: no activity record stands for them) and ApiStackEvent records (calls whose stack
// was taken). Pure: no CUPTI.
#ifndef WARPSCOPE_COLLECTORS_API_CALLS_API_CALL_RECORDER_H_
#define WARPSCOPE_COLLECTORS_API_CALLS_API_CALL_RECORDER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "collectors/api_calls/call_log.h"
#include "collectors/api_calls/memory_call_log.h"
#include "collectors/callbacks/cupti_callbacks.h"
#include "collectors/common/record_sink.h"
#include "collectors/stacks/stack_config.h"

namespace warpscope {

class LiveBlockTable;
class StackTable;

struct ApiCallRecorderOptions {
  // Write an ApiCallEvent for every launch call (trace kind `launch`).
  bool launch_calls = true;
  // Write an ApiCallEvent for every runtime API call but the trivial queries
  // (IsTrivialRuntimeApi), launches included: trace kind `runtime`, recorded from callbacks
  // instead of CUPTI's RUNTIME activity records.
  bool runtime_calls = false;
  // Write an ApiCallEvent for every synchronize call of either API (cudaStreamSynchronize,
  // cuCtxSynchronize, ... : StackCallKind::kSync): trace kind `sync`, recorded from callbacks
  // instead of CUPTI's SYNCHRONIZATION activity records. A driver call made inside a runtime
  // call is not sent (cupti_callbacks.cc), so each wait is written once.
  bool sync_calls = false;
  // Leave the trivial queries out of runtime_calls (WARPSCOPE_API_FILTER, on by default).
  bool filter_trivial = true;
  // CUPTI's DRIVER activity records every driver call (`-t driver`): driver launch calls are
  // then left to it, so that none is written twice.
  bool driver_activity = false;
  // CUPTI's RUNTIME activity records every runtime call (`-t runtime` where its callbacks could
  // not all be enabled): runtime synchronize calls are then left to it, likewise.
  bool runtime_activity = false;
  // Trace kind `alloc`: the allocation, free and map functions' callbacks are on; failed
  // requests and VMM maps and unmaps are written as MemoryEvents (MemoryCallLog).
  bool alloc_calls = false;
  // Fed with the maps and unmaps and with the allocation calls' stacks (the flight
  // recorder's out-of-memory dump); null: none.
  LiveBlockTable* live_blocks = nullptr;
  // Called on the calling thread, inside the callback, when a request failed for want of
  // memory: must be cheap and must not throw.
  void (*on_out_of_memory)() = nullptr;
  StackConfig stacks;               // which calls get a stack; all off: none
  size_t max_log_bytes = 64 << 20;  // CallLog's bound
};

struct ApiCallRecorderCounts {
  CallLogCounts log;
  uint64_t launches_written = 0;  // ApiCallEvents of launch calls written
  uint64_t runtime_written = 0;   // ApiCallEvents of runtime API calls but launches written
  uint64_t stacks_written = 0;    // ApiStackEvents written
  MemoryCallCounts memory;
};

class ApiCallRecorder {
 public:
  // The trace clock, absolute ns: a plain function, called twice in every logged call.
  using Clock = uint64_t (*)();
  using Interner = std::function<uint64_t(std::string_view)>;  // a function's name → id

  // `stacks` may be null (no stacks are taken); it must outlive the recorder.
  ApiCallRecorder(const ApiCallRecorderOptions& options, StackTable* stacks, Clock clock,
                  Interner intern);

  // Whether calls of `function` (CUPTI's name, e.g. "cudaLaunchKernel_v7000"; callback id
  // `callback_id` of the runtime API, else of the driver API) are wanted: the callbacks to
  // enable.
  bool Wants(bool runtime, uint32_t callback_id, std::string_view function) const;
  // Whether the calls that the runtime_calls option writes include this one.
  static bool IsRuntimeCallWritten(bool runtime, uint32_t callback_id, bool filter_trivial);

  // Calls that begin while recording is off are not logged (a call that began while it was on
  // is logged whole).
  void SetRecording(bool on) { recording_.store(on, std::memory_order_release); }

  // On the calling thread, inside the call's callbacks. Cheap, lock-free.
  void OnEnter(const ApiCallSite& call);
  void OnExit(const ApiCallSite& call, uint32_t result);

  // Writes what the threads logged since the last drain (the session's thread).
  void Drain(RecordSink& sink);
  // After fork() in the child: nothing more is logged or drained.
  void Abandon();

  ApiCallRecorderCounts counts() const;

 private:
  struct CallInfo {
    uint64_t name_id = 0;
    StackCallKind kind = StackCallKind::kOther;
  };
  CallInfo Info(const ApiCallSite& call);
  bool WantsStack(StackCallKind kind);
  // The calling thread's stack id for a call of `kind` (0: none).
  uint64_t TakeStack(StackCallKind kind);

  const ApiCallRecorderOptions options_;
  StackTable* const stacks_;
  const Clock clock_;
  const Interner intern_;
  CallLog log_;
  MemoryCallLog memory_;
  std::atomic<bool> recording_{false};
  std::atomic<uint64_t> launches_written_{0}, runtime_written_{0}, stacks_written_{0};
  static constexpr uint32_t kSlots = 1024;
  // Per callback id: the name id in the high bits, the kind in the low byte; 0 = not yet known.
  std::atomic<uint64_t> runtime_calls_[kSlots] = {};
  std::atomic<uint64_t> driver_calls_[kSlots] = {};
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_API_CALLS_API_CALL_RECORDER_H_
